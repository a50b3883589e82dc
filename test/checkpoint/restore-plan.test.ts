/**
 * planRestore: how a completed checkpoint's state is redistributed over the job as it is now
 * (the same or another parallelism): keyed state files by overlapping key-group ranges,
 * split list state cut contiguously (each subtask's own back at the same parallelism), union list state to everyone, broadcast state from old subtask (i mod old p), source
 * splits dealt out k mod p, sink committables committed by exactly one subtask (an old
 * subtask's together, in order); each list and broadcast state's serializer record goes with it;
 * unmatched operator state and a changed max parallelism refused clearly.
 * Job graphs are built with the real API.
 */
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { StreamExecutionEnvironment } from '../../src/api/environment.ts';
import { METADATA_VERSION, type CheckpointMetadata, type OperatorStateMeta, type SubtaskStateMeta } from '../../src/checkpoint/metadata.ts';
import { channelEdgesOf, planRestore, RestoreError, type RestorePlan } from '../../src/checkpoint/restore-plan.ts';
import { planExecution } from '../../src/graph/execution-plan.ts';
import { buildJobGraph, type JobGraph } from '../../src/graph/job-graph.ts';
import type { StreamNode } from '../../src/graph/stream-graph.ts';
import { encodeValue } from '../../src/core/codec.ts';
import { keyGroupRangeForSubtask } from '../../src/state/key-groups.ts';
import { taskId } from '../../src/core/task-id.ts';
import type { InlineOperatorState } from '../../src/core/checkpoint-format.ts';
import type { TwoPhaseCommitSink } from '../../src/core/sink.ts';

const DIR = '/checkpoints/job/chk-7';

interface Shape {
  sourceP: number;
  mapP: number;
  keyedP: number;
  sinkP: number;
  maxP?: number;
}

/** source(uid src) -> map(uid map) -> keyBy -> process(uid keyed) -> sink(uid sink), each with its own parallelism. */
function job(s: Shape): { graph: JobGraph; node: (uid: string) => StreamNode; vertexOf: (uid: string) => number } {
  const env = new StreamExecutionEnvironment({ defaultParallelism: 1 });
  const keyed = env
    .fromGenerator((i) => ({ k: `k${i % 10}`, v: i }), { count: 100 })
    .uid('src')
    .setParallelism(s.sourceP)
    .map((r) => r)
    .uid('map')
    .setParallelism(s.mapP)
    .keyBy((r) => r.k)
    .process<number>({ processElement(r, _ctx, out) { out.collect(r.v); } })
    .uid('keyed')
    .setParallelism(s.keyedP);
  if (s.maxP !== undefined) keyed.setMaxParallelism(s.maxP);
  keyed.rebalance().addSink(() => {}).uid('sink').setParallelism(s.sinkP);
  const graph = buildJobGraph(env);
  const all = graph.vertices.flatMap((v) => v.operators.map((o) => ({ v: v.index, node: o.node })));
  const find = (uid: string) => {
    const f = all.find((x) => x.node.transformation.uid === uid);
    if (!f) throw new Error(`no operator with uid ${uid}`);
    return f;
  };
  return { graph, node: (uid) => find(uid).node, vertexOf: (uid) => find(uid).v };
}

function inline(s: InlineOperatorState): string {
  return Buffer.from(encodeValue(s)).toString('base64');
}

function op(node: StreamNode | { id: string; name: string; uid?: string }, parallelism: number, maxParallelism: number, keyed: boolean, subtasks: SubtaskStateMeta[]): OperatorStateMeta {
  const uid = 'transformation' in node ? node.transformation.uid : node.uid;
  return { id: node.id, name: node.name, uid, parallelism, maxParallelism, keyed, subtasks };
}

function metadata(operators: OperatorStateMeta[], enumerators: Record<string, unknown[]> = {}): CheckpointMetadata {
  return {
    format: 'weir-checkpoint', version: METADATA_VERSION, jobId: 'j', jobName: 'restore plan test', checkpointId: 7, type: 'checkpoint',
    timestamp: 1, completedAt: 2, operators, enumerators, stats: { stateSize: 0, subtasks: {} },
  };
}

function plan(m: CheckpointMetadata, j: ReturnType<typeof job>, allow = false, workers = 2): RestorePlan {
  return planRestore(m, DIR, j.graph, planExecution(j.graph, workers), allow);
}

function inlineOf(p: RestorePlan, vertex: number, subtask: number, opId: string): InlineOperatorState | undefined {
  return p.tasks[taskId(vertex, subtask)]?.operators[opId]?.inline;
}

describe('keyed state: files by overlapping key-group ranges', () => {
  const old = [0, 1].map((i) => keyGroupRangeForSubtask(128, 2, i));
  const files = old.map((r, i): SubtaskStateMeta => ({ subtask: i, file: `keyed-${i}.state`, fileSize: 100 + i, keyGroupRange: r, stateSize: 50 }));

  for (const p of [1, 2, 3, 4, 7]) {
    it(`2 -> ${p}: each subtask gets exactly the files whose range overlaps its own`, () => {
      const j = job({ sourceP: 1, mapP: 1, keyedP: p, sinkP: 1, maxP: 128 });
      const keyed = j.node('keyed');
      const r = plan(metadata([op(keyed, 2, 128, true, files)]), j);
      const v = j.vertexOf('keyed');
      const covered = new Map<number, number>(); // key group -> how many subtasks read it from a file
      for (let i = 0; i < p; i++) {
        const mine = keyGroupRangeForSubtask(128, p, i);
        const got = r.tasks[taskId(v, i)]?.operators[keyed.id]?.keyedFiles ?? [];
        const want = files.filter((f) => f.keyGroupRange!.start <= mine.end && mine.start <= f.keyGroupRange!.end);
        expect(got).toEqual(want.map((f) => ({ path: join(DIR, f.file!), size: f.fileSize })));
        for (let kg = mine.start; kg <= mine.end; kg++) {
          const holders = got.filter((g) => {
            const f = files.find((x) => join(DIR, x.file!) === g.path)!;
            return kg >= f.keyGroupRange!.start && kg <= f.keyGroupRange!.end;
          });
          expect(holders, `key group ${kg}`).toHaveLength(1);
          covered.set(kg, (covered.get(kg) ?? 0) + 1);
        }
        expect(r.tasks[taskId(v, i)]!.checkpointId).toBe(7);
      }
      // Every key group is read by exactly one new subtask.
      expect([...covered.keys()].sort((a, b) => a - b)).toEqual(Array.from({ length: 128 }, (_, i) => i));
      expect([...covered.values()].every((c) => c === 1)).toBe(true);
    });
  }

  // Written out, not computed: old ranges [0, 63] and [64, 127]; new ranges ceil(i * 128 / p) ..
  const EXACT: Record<number, { range: [number, number]; files: string[] }[]> = {
    1: [{ range: [0, 127], files: ['keyed-0', 'keyed-1'] }],
    3: [
      { range: [0, 42], files: ['keyed-0'] },
      { range: [43, 85], files: ['keyed-0', 'keyed-1'] },
      { range: [86, 127], files: ['keyed-1'] },
    ],
    4: [
      { range: [0, 31], files: ['keyed-0'] },
      { range: [32, 63], files: ['keyed-0'] },
      { range: [64, 95], files: ['keyed-1'] },
      { range: [96, 127], files: ['keyed-1'] },
    ],
    7: [
      { range: [0, 18], files: ['keyed-0'] },
      { range: [19, 36], files: ['keyed-0'] },
      { range: [37, 54], files: ['keyed-0'] },
      { range: [55, 73], files: ['keyed-0', 'keyed-1'] },
      { range: [74, 91], files: ['keyed-1'] },
      { range: [92, 109], files: ['keyed-1'] },
      { range: [110, 127], files: ['keyed-1'] },
    ],
  };
  for (const [p, want] of Object.entries(EXACT).map(([p, w]) => [Number(p), w] as const)) {
    it(`2 -> ${p}: the exact key-group range and state files of every new subtask`, () => {
      const j = job({ sourceP: 1, mapP: 1, keyedP: p, sinkP: 1, maxP: 128 });
      const keyed = j.node('keyed');
      const exec = planExecution(j.graph, 2);
      const r = planRestore(metadata([op(keyed, 2, 128, true, files)]), DIR, j.graph, exec, false);
      const v = j.vertexOf('keyed');
      const got = exec.subtasks
        .filter((s) => s.vertex === v)
        .map((s) => ({
          range: [s.keyGroupRange.start, s.keyGroupRange.end],
          files: r.tasks[taskId(v, s.index)]!.operators[keyed.id]!.keyedFiles!.map((f) => f.path),
        }));
      expect(got).toEqual(want.map((w) => ({ range: w.range, files: w.files.map((f) => join(DIR, `${f}.state`)) })));
      // The sizes travel with the paths; nothing but keyed files for a keyed operator without operator state.
      for (let i = 0; i < p; i++) {
        const e = r.tasks[taskId(v, i)]!.operators[keyed.id]!;
        expect(e.keyedFiles!.map((f) => f.size)).toEqual(want[i]!.files.map((f) => (f === 'keyed-0' ? 100 : 101)));
        expect(Object.keys(e)).toEqual(['keyedFiles']);
      }
    });
  }

  it('a changed max parallelism of keyed state is refused with a message saying how to fix it', () => {
    const j = job({ sourceP: 1, mapP: 1, keyedP: 2, sinkP: 1, maxP: 256 });
    const keyed = j.node('keyed');
    const m = metadata([op(keyed, 2, 128, true, files)]);
    expect(() => plan(m, j)).toThrow(RestoreError);
    expect(() => plan(m, j)).toThrow(`operator "${keyed.name}" was checkpointed with max parallelism 128 and now has 256`);
    expect(() => plan(m, j)).toThrow(/setMaxParallelism\(128\)/);
  });

  it('keyed state with fewer key groups than the new parallelism is refused in Flink\'s words (200 subtasks, 128 key groups)', () => {
    const j = job({ sourceP: 1, mapP: 1, keyedP: 200, sinkP: 1 });
    const keyed = j.node('keyed');
    // At p=200 the default max parallelism is 512; the snapshot has 128 key groups.
    expect(keyed.maxParallelism).toBe(512);
    const m = metadata([op(keyed, 2, 128, true, files)]);
    expect(() => plan(m, j, false, 1)).toThrow(RestoreError);
    expect(() => plan(m, j, false, 1)).toThrow(
      `The state for operator "${keyed.name}" can not be restored. The maximum parallelism (128) of the restored state is lower than the configured parallelism (200). Please reduce the parallelism of the task to be lower or equal to the maximum parallelism.`,
    );
  });

  it('a changed max parallelism of a non-keyed operator is fine', () => {
    const j = job({ sourceP: 1, mapP: 2, keyedP: 2, sinkP: 1, maxP: 128 });
    const map = j.node('map');
    const m = metadata([op(map, 2, map.maxParallelism * 2, false, [
      { subtask: 0, inline: inline({ lists: { l: { distribution: 'split', items: [1] } } }), stateSize: 3 },
      { subtask: 1, inline: inline({ lists: { l: { distribution: 'split', items: [2, 3] } } }), stateSize: 3 },
    ])]);
    const r = plan(m, j);
    // Restored, redistributed as usual: no key groups involved.
    expect(inlineOf(r, j.vertexOf('map'), 0, map.id)).toEqual({ lists: { l: { distribution: 'split', items: [1] } } });
    expect(inlineOf(r, j.vertexOf('map'), 1, map.id)).toEqual({ lists: { l: { distribution: 'split', items: [2, 3] } } });
    expect(r.unmatched).toEqual([]);
  });
});

describe('operator list state', () => {
  const states = [
    { lists: { buf: { distribution: 'split' as const, items: [1, 2, 3] }, all: { distribution: 'union' as const, items: ['a'] } } },
    { lists: { buf: { distribution: 'split' as const, items: [4, 5] }, all: { distribution: 'union' as const, items: ['b', 'c'] } } },
    { lists: { buf: { distribution: 'split' as const, items: [] }, all: { distribution: 'union' as const, items: [] } } },
  ];

  for (const p of [1, 2, 3, 5, 6]) {
    it(`3 -> ${p}: split state is cut into contiguous parts, union state goes whole to everyone`, () => {
      const j = job({ sourceP: 1, mapP: p, keyedP: 1, sinkP: 1 });
      const map = j.node('map');
      const m = metadata([op(map, 3, 128, false, states.map((s, i) => ({ subtask: i, inline: inline(s), stateSize: 10 })))]);
      const r = plan(m, j);
      const v = j.vertexOf('map');
      const parts: unknown[][] = [];
      for (let i = 0; i < p; i++) {
        const s = inlineOf(r, v, i, map.id)!;
        expect(s.lists!.buf!.distribution).toBe('split');
        expect(s.lists!.all).toEqual({ distribution: 'union', items: ['a', 'b', 'c'] });
        parts.push(s.lists!.buf!.items);
      }
      // Concatenated in subtask order, the parts are the old lists concatenated: contiguous, each item once.
      expect(parts.flat()).toEqual([1, 2, 3, 4, 5]);
      // Balanced when the parallelism changed: sizes differ by at most one (at 3, each subtask's own list).
      const sizes = parts.map((x) => x.length);
      if (p !== 3) expect(Math.max(...sizes) - Math.min(...sizes)).toBeLessThanOrEqual(1);
    });
  }

  // Old split lists [1, 2, 3], [4, 5], [] concatenated and cut at floor(i * 5 / p); union ['a'], ['b', 'c'], [] whole.
  // At the same parallelism each subtask gets its own list back, as Flink's round-robin
  // repartitioner (before: [1], [2, 3], [4, 5], which moves items tied to their subtask).
  const EXACT_SPLIT: Record<number, number[][]> = {
    1: [[1, 2, 3, 4, 5]],
    2: [[1, 2], [3, 4, 5]],
    3: [[1, 2, 3], [4, 5], []],
    5: [[1], [2], [3], [4], [5]],
    6: [[], [1], [2], [3], [4], [5]],
  };
  for (const [p, want] of Object.entries(EXACT_SPLIT).map(([p, w]) => [Number(p), w] as const)) {
    it(`3 -> ${p}: exactly which items each subtask gets`, () => {
      const j = job({ sourceP: 1, mapP: p, keyedP: 1, sinkP: 1 });
      const map = j.node('map');
      const m = metadata([op(map, 3, 128, false, states.map((s, i) => ({ subtask: i, inline: inline(s), stateSize: 10 })))]);
      const r = plan(m, j);
      const v = j.vertexOf('map');
      for (let i = 0; i < p; i++) {
        expect(r.tasks[taskId(v, i)]!.operators[map.id], `subtask ${i}`).toEqual({
          inline: { lists: { buf: { distribution: 'split', items: want[i] }, all: { distribution: 'union', items: ['a', 'b', 'c'] } } },
        });
      }
      expect(Object.keys(r.tasks).filter((k) => k.startsWith(`${v}:`)).sort()).toEqual(Array.from({ length: p }, (_, i) => `${v}:${i}`));
    });
  }

  it('union state is a copy per subtask (mutating one does not change another)', () => {
    const j = job({ sourceP: 1, mapP: 2, keyedP: 1, sinkP: 1 });
    const map = j.node('map');
    const r = plan(metadata([op(map, 3, 128, false, states.map((s, i) => ({ subtask: i, inline: inline(s), stateSize: 10 })))]), j);
    const v = j.vertexOf('map');
    inlineOf(r, v, 0, map.id)!.lists!.all!.items.push('x');
    expect(inlineOf(r, v, 1, map.id)!.lists!.all!.items).toEqual(['a', 'b', 'c']);
  });
});

describe('broadcast state', () => {
  it('is given to every subtask, whatever the new parallelism', () => {
    const j = job({ sourceP: 1, mapP: 4, keyedP: 1, sinkP: 1 });
    const map = j.node('map');
    const rules: [unknown, unknown][] = [['r1', { limit: 3 }], ['r2', { limit: 9 }]];
    const subtasks = [0, 1].map((i) => ({ subtask: i, inline: inline({ broadcast: { rules } }), stateSize: 20 }));
    const r = plan(metadata([op(map, 2, 128, false, subtasks)]), j);
    const v = j.vertexOf('map');
    for (let i = 0; i < 4; i++) expect(r.tasks[taskId(v, i)]!.operators[map.id]).toEqual({ inline: { broadcast: { rules } } });
    expect(Object.keys(r.tasks).filter((k) => k.startsWith(`${v}:`)).sort()).toEqual([`${v}:0`, `${v}:1`, `${v}:2`, `${v}:3`]);
  });

  it('scaling down, every remaining subtask still gets the whole broadcast state, next to its split list share', () => {
    const j = job({ sourceP: 1, mapP: 2, keyedP: 1, sinkP: 1 });
    const map = j.node('map');
    const rules: [unknown, unknown][] = [['r1', { limit: 3 }], ['r2', { limit: 9 }], ['r3', null]];
    const subtasks = [0, 1, 2].map((i) => ({
      subtask: i,
      inline: inline({ broadcast: { rules }, lists: { seen: { distribution: 'split', items: [i * 10, i * 10 + 1] } } }),
      stateSize: 20,
    }));
    const r = plan(metadata([op(map, 3, 128, false, subtasks)]), j);
    const v = j.vertexOf('map');
    expect(inlineOf(r, v, 0, map.id)).toEqual({ lists: { seen: { distribution: 'split', items: [0, 1, 10] } }, broadcast: { rules } });
    expect(inlineOf(r, v, 1, map.id)).toEqual({ lists: { seen: { distribution: 'split', items: [11, 20, 21] } }, broadcast: { rules } });
  });
});

describe('broadcast state copies that differ (an unaligned checkpoint: each subtask at its own point of the broadcast stream)', () => {
  it('at the same parallelism each subtask gets its own copy back; scaled up, new subtask i gets old (i mod old p)\'s', () => {
    const copy = (i: number): [unknown, unknown][] => Array.from({ length: 30 + i }, (_, k) => [k, i]);
    const subtasks = [0, 1].map((i) => ({ subtask: i, inline: inline({ broadcast: { rules: copy(i) } }), stateSize: 20 }));
    for (const p of [2, 3]) {
      const j = job({ sourceP: 1, mapP: p, keyedP: 1, sinkP: 1 });
      const map = j.node('map');
      const r = plan(metadata([op(map, 2, 128, false, subtasks)]), j);
      const v = j.vertexOf('map');
      for (let i = 0; i < p; i++) expect(inlineOf(r, v, i, map.id)?.broadcast?.rules, `p ${p}, subtask ${i}`).toEqual(copy(i % 2));
    }
  });
});

describe('serializer records of list and broadcast state', () => {
  const v = (version: number) => ({ name: 'app.count', version });
  const states = [0, 1, 2].map((i) => ({
    lists: { buf: { distribution: 'split' as const, items: [{ n: i }] }, all: { distribution: 'union' as const, items: [{ n: 10 + i }] } },
    broadcast: { cfg: [['a', { n: 20 + i }]] as [unknown, unknown][] },
    serializers: { 'list:buf': v(1), 'list:all': v(1), 'broadcast:cfg': v(1) },
  }));

  for (const p of [3, 2, 5]) {
    it(`3 -> ${p}: every new subtask gets the record of each list and broadcast state it is given (before: dropped, v1's encoding restored as raw values)`, () => {
      const j = job({ sourceP: 1, mapP: p, keyedP: 1, sinkP: 1 });
      const map = j.node('map');
      const r = plan(metadata([op(map, 3, 128, false, states.map((s, i) => ({ subtask: i, inline: inline(s), stateSize: 10 })))]), j);
      for (let i = 0; i < p; i++) {
        const s = inlineOf(r, j.vertexOf('map'), i, map.id)!;
        expect(s.serializers, `subtask ${i}`).toEqual({ 'list:buf': v(1), 'list:all': v(1), 'broadcast:cfg': v(1) });
        expect(s.broadcast!.cfg).toEqual([['a', { n: 20 + (i % 3) }]]);
      }
    });
  }

  it('a broadcast state\'s record comes from the old subtask whose copy is given; lists of old subtasks that differ are kept apart at the same parallelism', () => {
    // Old subtask 1 never claimed the states after a restore that changed the serializer: still v1.
    const differ = states.map((s, i) => ({ ...s, serializers: i === 1 ? s.serializers : { 'list:buf': v(2), 'list:all': v(2), 'broadcast:cfg': v(2) } }));
    const j = job({ sourceP: 1, mapP: 3, keyedP: 1, sinkP: 1 });
    const map = j.node('map');
    const only = differ.map((s) => ({ lists: { buf: s.lists.buf }, broadcast: s.broadcast, serializers: { 'list:buf': s.serializers['list:buf'], 'broadcast:cfg': s.serializers['broadcast:cfg'] } }));
    const r = plan(metadata([op(map, 3, 128, false, only.map((s, i) => ({ subtask: i, inline: inline(s), stateSize: 10 })))]), j);
    for (let i = 0; i < 3; i++) expect(inlineOf(r, j.vertexOf('map'), i, map.id)!.serializers).toEqual({ 'list:buf': v(i === 1 ? 1 : 2), 'broadcast:cfg': v(i === 1 ? 1 : 2) });
    // Items of differing records merged into one subtask would be decoded with one version: refused.
    const union = plan.bind(null, metadata([op(map, 3, 128, false, differ.map((s, i) => ({ subtask: i, inline: inline(s), stateSize: 10 })))]), j);
    expect(union).toThrow(RestoreError);
    expect(union).toThrow('list state "all" is recorded with serializer "app.count" v2 by subtask 0 and with serializer "app.count" v1 by subtask 1');
  });

  it('an inline state of an earlier version (no records) gets none: its values are raw', () => {
    const j = job({ sourceP: 1, mapP: 2, keyedP: 1, sinkP: 1 });
    const map = j.node('map');
    const old = states.map(({ serializers: _, ...s }) => s);
    const r = plan(metadata([op(map, 3, 128, false, old.map((s, i) => ({ subtask: i, inline: inline(s), stateSize: 10 })))]), j);
    for (let i = 0; i < 2; i++) expect(inlineOf(r, j.vertexOf('map'), i, map.id)!.serializers).toBeUndefined();
  });
});

describe('source splits', () => {
  for (const p of [1, 2, 3, 4]) {
    it(`splits of 2 readers plus unassigned ones are dealt out k mod ${p}, positions kept`, () => {
      const j = job({ sourceP: p, mapP: 1, keyedP: 1, sinkP: 1 });
      const src = j.node('src');
      const a = { id: 'lane-0', lane: 0, lanes: 4, next: 40 };
      const b = { id: 'lane-2', lane: 2, lanes: 4, next: 42 };
      const c = { id: 'lane-1', lane: 1, lanes: 4, next: 17 };
      const d = { id: 'lane-3', lane: 3, lanes: 4, next: 3 };
      const m = metadata(
        [op(src, 2, 128, false, [{ subtask: 0, inline: inline({ splits: [a, b] }), stateSize: 10 }, { subtask: 1, inline: inline({ splits: [c] }), stateSize: 5 }])],
        { [src.id]: [d] },
      );
      const r = plan(m, j);
      const v = j.vertexOf('src');
      const all = [a, b, c, d];
      for (let i = 0; i < p; i++) expect(r.splits[taskId(v, i)]).toEqual(all.filter((_, k) => k % p === i));
      expect(Object.keys(r.splits).filter((k) => k.startsWith(`${v}:`))).toHaveLength(p);
    });
  }

  it('a source whose readers had no splits left restores with none (it does not start over)', () => {
    const j = job({ sourceP: 2, mapP: 1, keyedP: 1, sinkP: 1 });
    const src = j.node('src');
    const m = metadata([op(src, 2, 128, false, [{ subtask: 0, inline: inline({ splits: [] }), stateSize: 1 }, { subtask: 1, inline: inline({ splits: [] }), stateSize: 1 }])]);
    const r = plan(m, j);
    const v = j.vertexOf('src');
    expect(r.splits[taskId(v, 0)]).toEqual([]);
    expect(r.splits[taskId(v, 1)]).toEqual([]);
  });
});

describe('sink committables', () => {
  for (const [oldP, p] of [[3, 1], [3, 2], [2, 3], [1, 4], [2, 2], [3, 3]] as const) {
    it(`${oldP} -> ${p}: each committable goes to exactly one subtask`, () => {
      const j = job({ sourceP: 1, mapP: 1, keyedP: 1, sinkP: p });
      const sink = j.node('sink');
      const subtasks = Array.from({ length: oldP }, (_, i) => ({
        subtask: i,
        inline: inline({ committables: Array.from({ length: i + 2 }, (_, k) => ({ pending: `.part-${i}-${k}.pending`, final: `part-${i}-${k}` })) }),
        stateSize: 10,
      }));
      const r = plan(metadata([op(sink, oldP, 128, false, subtasks)]), j);
      const v = j.vertexOf('sink');
      const seen: string[] = [];
      for (let i = 0; i < p; i++) for (const c of inlineOf(r, v, i, sink.id)?.committables ?? []) seen.push((c as { final: string }).final);
      const want = subtasks.flatMap((s, i) => Array.from({ length: i + 2 }, (_, k) => `part-${i}-${k}`));
      expect(seen.sort()).toEqual(want.sort());
      expect(new Set(seen).size).toBe(seen.length);
      // Every subtask also learns the whole set, to tell a lost pending file from a referenced one.
      for (let i = 0; i < p; i++) {
        const all = r.tasks[taskId(v, i)]!.operators[sink.id]!.referencedCommittables!.map((c) => (c as { final: string }).final);
        expect(all.sort()).toEqual(want.sort());
      }
      // An old subtask's committables stay together and in order, with subtask (old index mod
      // p): its committed position (a progress key per subtask) must not see a later
      // checkpoint's committable committed before an earlier one by another subtask.
      for (let i = 0; i < p; i++) {
        const got = (inlineOf(r, v, i, sink.id)?.committables ?? []).map((c) => (c as { final: string }).final);
        const mine = subtasks.flatMap((_, old) => (old % p === i ? Array.from({ length: old + 2 }, (_, k) => `part-${old}-${k}`) : []));
        expect(got, `new subtask ${i}`).toEqual(mine);
      }
    });
  }
});

describe('sink committables by the subtask that prepared them', () => {
  it('4 -> 2 -> 4: what writer 2 prepared, held by subtask 0 after the scale-down, goes back to subtask 2, before its new work', () => {
    // Holder 0 of a p=2 snapshot taken after 4 -> 2 with commits still pending: its own (owner 0)
    // and old subtask 2's (owner 2). Holder 1: owners 1 and 3.
    const j = job({ sourceP: 1, mapP: 1, keyedP: 1, sinkP: 4 });
    const sink = j.node('sink');
    const c = (owner: number, chk: number) => ({ sub: owner, chk });
    const subtasks = [
      { subtask: 0, inline: inline({ committables: [c(0, 1), c(2, 1), c(0, 2)], committableOwners: [0, 2, 0] }), stateSize: 10 },
      { subtask: 1, inline: inline({ committables: [c(1, 1), c(3, 1), c(1, 2)], committableOwners: [1, 3, 1] }), stateSize: 10 },
    ];
    const r = plan(metadata([op(sink, 2, 128, false, subtasks)]), j);
    const v = j.vertexOf('sink');
    const got = [0, 1, 2, 3].map((i) => inlineOf(r, v, i, sink.id));
    expect(got.map((g) => g?.committables)).toEqual([[c(0, 1), c(0, 2)], [c(1, 1), c(1, 2)], [c(2, 1)], [c(3, 1)]]);
    expect(got.map((g) => g?.committableOwners)).toEqual([[0, 0], [1, 1], [2], [3]]);
    // And 4 -> 2 again: owners 2 and 3 go to 0 and 1, after... each owner's committables stay in order.
    const down = plan(metadata([op(j.node('sink'), 4, 128, false, got.map((g, i) => ({ subtask: i, inline: inline(g!), stateSize: 10 })))]), job({ sourceP: 1, mapP: 1, keyedP: 1, sinkP: 2 }));
    const d = [0, 1].map((i) => inlineOf(down, v, i, sink.id));
    expect(d.map((g) => g?.committables)).toEqual([[c(0, 1), c(0, 2), c(2, 1)], [c(1, 1), c(1, 2), c(3, 1)]]);
    expect(d.map((g) => g?.committableOwners)).toEqual([[0, 0, 2], [1, 1, 3]]);
  });
});

describe('operator matching', () => {
  it('state of an operator the job no longer has fails the restore, listing the operators by name and uid', () => {
    const j = job({ sourceP: 1, mapP: 1, keyedP: 1, sinkP: 1 });
    const gone1 = { id: 'aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa', name: 'Old Dedup', uid: 'dedup' };
    const gone2 = { id: 'bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb', name: 'Old Enrich' };
    const m = metadata([
      op(gone1, 1, 128, true, [{ subtask: 0, file: 'x.state', fileSize: 10, keyGroupRange: { start: 0, end: 127 }, stateSize: 10 }]),
      op(gone2, 1, 128, false, [{ subtask: 0, inline: inline({ lists: { l: { distribution: 'split', items: [1] } } }), stateSize: 4 }]),
      op(j.node('map'), 1, 128, false, [{ subtask: 0, inline: inline({ lists: { l: { distribution: 'split', items: [1] } } }), stateSize: 4 }]),
    ]);
    expect(() => plan(m, j)).toThrow(RestoreError);
    let msg = '';
    try {
      plan(m, j);
    } catch (e) {
      msg = (e as Error).message;
    }
    expect(msg).toContain('"Old Dedup" (uid dedup)');
    expect(msg).toContain('"Old Enrich"');
    expect(msg).not.toContain(j.node('map').name);
    expect(msg).toMatch(/allow-non-restored-state/);
  });

  it('when allowed, unmatched state is dropped and reported; matched state is still restored', () => {
    const j = job({ sourceP: 1, mapP: 1, keyedP: 1, sinkP: 1 });
    const gone = { id: 'aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa', name: 'Old Dedup', uid: 'dedup' };
    const map = j.node('map');
    const m = metadata([
      op(gone, 1, 128, false, [{ subtask: 0, inline: inline({ lists: { l: { distribution: 'split', items: [1] } } }), stateSize: 4 }]),
      op(map, 1, 128, false, [{ subtask: 0, inline: inline({ lists: { l: { distribution: 'split', items: [9] } } }), stateSize: 4 }]),
    ]);
    const r = plan(m, j, true);
    expect(r.unmatched).toEqual([gone.id]);
    expect(inlineOf(r, j.vertexOf('map'), 0, map.id)).toEqual({ lists: { l: { distribution: 'split', items: [9] } } });
    expect(JSON.stringify(r.tasks)).not.toContain(gone.id);
  });

  it('an incremental keyed operator the job no longer has fails the restore when its last delta was empty (before: stateSize 0 read as stateless, its state dropped without a word)', () => {
    const j = job({ sourceP: 1, mapP: 1, keyedP: 1, sinkP: 1 });
    const gone = { id: 'dddddddddddddddddddddddddddddddd', name: 'Quiet Counter', uid: 'counter' };
    const chain = [{ name: 'base-1', size: 341, checkpointId: 1, kind: 'base' as const }, { name: 'delta-2', size: 191, checkpointId: 2, kind: 'delta' as const }];
    const m = metadata([op(gone, 1, 128, true, [{ subtask: 0, chain, keyGroupRange: { start: 0, end: 127 }, stateSize: 0 }])]);
    expect(() => plan(m, j)).toThrow(/"Quiet Counter" \(uid counter\)/);
    expect(plan(m, j, true).unmatched).toEqual([gone.id]);
  });

  it('keyed state restored into an operator that is no longer keyed (same uid, no keyBy) is refused before the job starts (before: every restart failed on it, for ever)', () => {
    const j = job({ sourceP: 1, mapP: 1, keyedP: 1, sinkP: 1 });
    const map = j.node('map');
    const keyedState = op(map, 1, 128, true, [{ subtask: 0, file: 'x.state', fileSize: 10, keyGroupRange: { start: 0, end: 127 }, stateSize: 10 }]);
    expect(() => plan(metadata([keyedState]), j)).toThrow(/operator "[^"]+" has keyed state in the snapshot but is not keyed now/);
    expect(() => plan(metadata([op(map, 1, 128, true, [{ subtask: 0, stateSize: 0 }])]), j)).not.toThrow(); // keyed, but held nothing
    expect(() => plan(metadata([op(j.node('keyed'), 1, 128, true, [...keyedState.subtasks])]), j)).not.toThrow();
  });

  it('an unmatched operator without state is no reason to fail', () => {
    const j = job({ sourceP: 1, mapP: 1, keyedP: 1, sinkP: 1 });
    const m = metadata([op({ id: 'cccccccccccccccccccccccccccccccc', name: 'Stateless' }, 1, 128, false, [{ subtask: 0, stateSize: 0 }])]);
    expect(plan(m, j).unmatched).toEqual([]);
  });

  it('operators new in the job start empty: no entry for them', () => {
    const j = job({ sourceP: 1, mapP: 1, keyedP: 1, sinkP: 1 });
    const map = j.node('map');
    const r = plan(metadata([op(map, 1, 128, false, [{ subtask: 0, inline: inline({ lists: { l: { distribution: 'split', items: [1] } } }), stateSize: 4 }])]), j);
    for (const uid of ['keyed', 'sink']) {
      const n = j.node(uid);
      for (const t of Object.values(r.tasks)) expect(t.operators[n.id]).toBeUndefined();
    }
    // The source was not in the snapshot: its splits are planned fresh (no restored entry).
    expect(r.splits).toEqual({});
  });
});

describe('event time of keyed operators (the watermark at the snapshot)', () => {
  const old = [0, 1].map((i) => keyGroupRangeForSubtask(128, 2, i));
  const withWatermarks = (wms: (number | undefined)[]): SubtaskStateMeta[] =>
    wms.map((w, i) => ({ subtask: i, file: `keyed-${i}.state`, fileSize: 10, keyGroupRange: old[i]!, stateSize: 5, ...(w !== undefined ? { watermark: w } : {}) }));

  for (const p of [1, 2, 3]) {
    it(`2 -> ${p}: the old subtasks agreed (aligned barriers): every new subtask starts there`, () => {
      const j = job({ sourceP: 1, mapP: 1, keyedP: p, sinkP: 1, maxP: 128 });
      const keyed = j.node('keyed');
      const r = plan(metadata([op(keyed, 2, 128, true, withWatermarks([4000, 4000]))]), j);
      for (let i = 0; i < p; i++) expect(r.tasks[taskId(j.vertexOf('keyed'), i)]!.operators[keyed.id]!.watermark).toBe(4000);
    });
  }

  it('2 -> 2, the old subtasks at different event times (unaligned): each new subtask starts at its own old one\'s', () => {
    const j = job({ sourceP: 1, mapP: 1, keyedP: 2, sinkP: 1, maxP: 128 });
    const keyed = j.node('keyed');
    const r = plan(metadata([op(keyed, 2, 128, true, withWatermarks([4999, 4000]))]), j);
    expect([0, 1].map((i) => r.tasks[taskId(j.vertexOf('keyed'), i)]!.operators[keyed.id]!.watermark)).toEqual([4999, 4000]);
  });

  for (const p of [1, 3]) {
    it(`2 -> ${p}, the old subtasks at different event times: refused (a window could fire twice, or records be dropped), unless duplicates are accepted (then the minimum)`, () => {
      const j = job({ sourceP: 1, mapP: 1, keyedP: p, sinkP: 1, maxP: 128 });
      const keyed = j.node('keyed');
      const m = metadata([op(keyed, 2, 128, true, withWatermarks([4999, 4000]))]);
      expect(() => plan(m, j)).toThrow(RestoreError);
      expect(() => plan(m, j)).toThrow(
        new RegExp(`subtasks at different event times \\(watermarks 4000 to 4999; an unaligned checkpoint\\), and restoring it at parallelism ${p} could fire a window twice or drop records: restore it at parallelism 2 and take a savepoint`),
      );
      const r = planRestore(m, DIR, j.graph, planExecution(j.graph, 2), false, true);
      for (let i = 0; i < p; i++) expect(r.tasks[taskId(j.vertexOf('keyed'), i)]!.operators[keyed.id]!.watermark).toBe(4000);
    });
  }

  it('an old subtask that recorded none (it had seen no event time) restarts with none; the others at their own, unless rescaled', () => {
    const j = job({ sourceP: 1, mapP: 1, keyedP: 2, sinkP: 1, maxP: 128 });
    const keyed = j.node('keyed');
    const wm = (r: RestorePlan, jj: typeof j, i: number) => r.tasks[taskId(jj.vertexOf('keyed'), i)]?.operators[keyed.id]?.watermark;
    // Before, the subtask past 4999 restarted with none as well: windows it had fired (and kept
    // for allowed lateness) fired again, and records it had dropped as late were taken.
    const r = plan(metadata([op(keyed, 2, 128, true, withWatermarks([4999, undefined]))]), j);
    expect([0, 1].map((i) => wm(r, j, i))).toEqual([4999, undefined]);
    const missing = plan(metadata([op(keyed, 2, 128, true, withWatermarks([4999]))]), j);
    expect([0, 1].map((i) => wm(missing, j, i))).toEqual([4999, undefined]);
    const j3 = job({ sourceP: 1, mapP: 1, keyedP: 3, sinkP: 1, maxP: 128 });
    const rescaled = plan(metadata([op(j3.node('keyed'), 2, 128, true, withWatermarks([4999, undefined]))]), j3);
    expect([0, 1, 2].map((i) => rescaled.tasks[taskId(j3.vertexOf('keyed'), i)]?.operators[j3.node('keyed').id]?.watermark)).toEqual([undefined, undefined, undefined]);
  });

  it('a subtask with no state but a watermark still passes it on', () => {
    const j = job({ sourceP: 1, mapP: 1, keyedP: 1, sinkP: 1, maxP: 128 });
    const keyed = j.node('keyed');
    const r = plan(metadata([op(keyed, 1, 128, true, [{ subtask: 0, stateSize: 0, watermark: 123 }])]), j);
    expect(r.tasks[taskId(j.vertexOf('keyed'), 0)]!.operators[keyed.id]).toEqual({ watermark: 123 });
  });

  it('a watermark that is not a finite number is corrupt metadata, named with the snapshot and operator', () => {
    const j = job({ sourceP: 1, mapP: 1, keyedP: 1, sinkP: 1, maxP: 128 });
    const keyed = j.node('keyed');
    const bad = [{ subtask: 0, stateSize: 0, watermark: 'soon' as unknown as number }];
    expect(() => plan(metadata([op(keyed, 1, 128, true, bad)]), j)).toThrow(/chk-7: operator ".*" subtask 0 records watermark "soon", not a finite number/);
  });
});

describe('channel state of unaligned checkpoints', () => {
  const cs = (subtask: number): SubtaskStateMeta => ({ subtask, stateSize: 10, channelState: { file: `h-${subtask}.channels.state`, fileSize: 10, persistedBytes: 8 } });
  /** Per new subtask of `uid`'s vertex: the old subtasks whose files it reads, and those it is primary for. */
  function channelFiles(p: RestorePlan, j: ReturnType<typeof job>, uid: string, parallelism: number) {
    const v = j.vertexOf(uid);
    return Array.from({ length: parallelism }, (_, i) => {
      const r = p.tasks[taskId(v, i)]?.channelState;
      const old = (path: string) => Number(/h-(\d+)\./.exec(path)![1]);
      return { reads: (r?.files ?? []).map((f) => old(f.path)), primary: (r?.files ?? []).filter((f) => f.primary).map((f) => old(f.path)), rescaled: r?.rescaled };
    });
  }

  it('same parallelism: each subtask gets its own file, primary, not rescaled', () => {
    const j = job({ sourceP: 2, mapP: 2, keyedP: 3, sinkP: 2 });
    const p = plan(metadata([op(j.node('keyed'), 3, 128, true, [cs(0), cs(1), cs(2)])]), j);
    expect(channelFiles(p, j, 'keyed', 3)).toEqual([0, 1, 2].map((i) => ({ reads: [i], primary: [i], rescaled: false })));
    expect(p.tasks[taskId(j.vertexOf('keyed'), 0)]!.channelState!.files[0]!.path).toBe(join(DIR, 'h-0.channels.state'));
  });

  it('a keyed head at a new parallelism reads every old file (it keeps its own key groups); each old file is primary at exactly one subtask', () => {
    for (const [oldP, newP] of [[3, 2], [2, 5]] as const) {
      const j = job({ sourceP: 2, mapP: 2, keyedP: newP, sinkP: 2 });
      const p = plan(metadata([op(j.node('keyed'), oldP, 128, true, Array.from({ length: oldP }, (_, i) => cs(i)))]), j);
      const got = channelFiles(p, j, 'keyed', newP);
      for (const g of got) {
        expect(g.reads).toEqual(Array.from({ length: oldP }, (_, i) => i));
        expect(g.rescaled).toBe(true);
      }
      expect(got.flatMap((g) => g.primary).sort()).toEqual(Array.from({ length: oldP }, (_, i) => i));
    }
  });

  it('a head fed by a keyBy that keeps no keyed state (keyBy(k).map(f)) reads every old file like a keyed one (before: by old subtask number, a key\'s older records at another subtask than its new ones)', () => {
    const env = new StreamExecutionEnvironment({ defaultParallelism: 1 });
    env.fromGenerator((i) => ({ k: `k${i % 10}` }), { count: 10 }).uid('src')
      .keyBy((r) => r.k).map((r) => r).uid('after-keyby').setParallelism(3)
      .addSink(() => {}).uid('sink');
    const graph = buildJobGraph(env);
    const v = graph.vertices.find((x) => x.operators[0]!.node.transformation.uid === 'after-keyby')!;
    const node = v.operators[0]!.node;
    expect(node.transformation.kind === 'one-input' && node.transformation.keySelector).toBeFalsy(); // the premise: not a keyed operator
    const p = planRestore(metadata([op(node, 2, node.maxParallelism, false, [cs(0), cs(1)])]), DIR, graph, planExecution(graph, 2), false);
    const got = [0, 1, 2].map((i) => p.tasks[taskId(v.index, i)]?.channelState?.files.map((f) => [Number(/h-(\d+)\./.exec(f.path)![1]), f.primary]));
    expect(got).toEqual([[[0, true], [1, false]], [[0, false], [1, true]], [[0, false], [1, false]]]);
  });

  it('a non-keyed head at a new parallelism: old subtask k goes to new subtask k mod p only', () => {
    const j = job({ sourceP: 1, mapP: 2, keyedP: 2, sinkP: 2 }); // the map heads its own vertex
    const p = plan(metadata([op(j.node('map'), 3, 128, false, [cs(0), cs(1), cs(2)])]), j);
    expect(channelFiles(p, j, 'map', 2)).toEqual([
      { reads: [0, 2], primary: [0, 2], rescaled: true },
      { reads: [1], primary: [1], rescaled: true },
    ]);
  });
});

describe('channel state when chaining changed', () => {
  const cs = (subtask: number): SubtaskStateMeta => ({ subtask, stateSize: 10, channelState: { file: `map-${subtask}.channels.state`, fileSize: 10, persistedBytes: 8 } });
  const withEdges = (m: CheckpointMetadata, j: ReturnType<typeof job>): CheckpointMetadata => ({ ...m, channelEdges: channelEdgesOf(j.graph.edges) });

  it('in-flight data of an operator that no longer begins a chain is refused, naming it (before: its files went to no task)', () => {
    const old = job({ sourceP: 1, mapP: 2, keyedP: 2, sinkP: 2 }); // [src] [map] [keyed]
    const m = withEdges(metadata([op(old.node('map'), 2, 128, false, [cs(0), cs(1)])]), old);
    const now = job({ sourceP: 1, mapP: 1, keyedP: 1, sinkP: 1 }); // [src, map] chained
    expect(() => plan(m, now, false, 1)).toThrow(RestoreError);
    expect(() => plan(m, now, false, 1)).toThrow(/operator "[^"]+" has in-flight data \(an unaligned checkpoint\), and in this job it no longer begins a chain/);
    // Also when the snapshot predates recorded edges.
    expect(() => plan({ ...m, channelEdges: undefined }, now, false, 1)).toThrow(/no longer begins a chain/);
  });

  it('output in flight on an edge whose meaning changed is refused (before: the source\'s raw records were replayed into the keyed operator)', () => {
    const old = job({ sourceP: 1, mapP: 1, keyedP: 1, sinkP: 1 }); // [src, map]: edge 0 is map -> keyed
    const srcCs = (subtask: number): SubtaskStateMeta => ({ subtask, stateSize: 10, channelState: { file: `src-${subtask}.channels.state`, fileSize: 10, persistedBytes: 8 } });
    const m = withEdges(metadata([op(old.node('src'), 1, 128, false, [srcCs(0)])]), old);
    const now = job({ sourceP: 1, mapP: 2, keyedP: 2, sinkP: 2 }); // [src] [map]: edge 0 is src -> map
    expect(() => plan(m, now)).toThrow(/the job's edges changed since this unaligned checkpoint \(edge 0 was [^,]+, is [^)]+\)/);
  });

  it('a rescale that keeps chains and edges restores the in-flight data as before', () => {
    const old = job({ sourceP: 1, mapP: 2, keyedP: 2, sinkP: 2 });
    const m = withEdges(metadata([op(old.node('map'), 2, 128, false, [cs(0), cs(1)])]), old);
    const now = job({ sourceP: 1, mapP: 3, keyedP: 3, sinkP: 3 });
    const p = plan(m, now, false, 3);
    const files = Object.values(p.tasks).flatMap((t) => t.channelState?.files.map((f) => f.path) ?? []);
    expect(files.sort()).toEqual([join(DIR, 'map-0.channels.state'), join(DIR, 'map-1.channels.state')]);
  });
});

describe('a two-phase sink\'s identity (its jobId)', () => {
  /** source(uid src) -> sinkTo(a two-phase sink named by `identity`, uid sink). */
  function sinkJob(identity: string | undefined): ReturnType<typeof job> {
    const env = new StreamExecutionEnvironment({ defaultParallelism: 1 });
    const sink: TwoPhaseCommitSink<number, unknown> = {
      name: 'orders',
      createWriter: () => ({ write() {}, prepareCommit: () => [] }),
      createCommitter: () => ({ commit() {} }),
      ...(identity !== undefined ? { identity: () => identity } : {}),
    };
    env.fromGenerator((i) => i, { count: 10 }).uid('src').sinkTo(sink).uid('sink');
    const graph = buildJobGraph(env);
    const all = graph.vertices.flatMap((v) => v.operators.map((o) => ({ v: v.index, node: o.node })));
    const find = (uid: string) => all.find((x) => x.node.transformation.uid === uid)!;
    return { graph, node: (uid) => find(uid).node, vertexOf: (uid) => find(uid).v };
  }
  const snapshotOf = (j: ReturnType<typeof job>, recorded: unknown) =>
    metadata([op(j.node('sink'), 1, 128, false, [{ subtask: 0, inline: inline({ committables: [{ rows: 1 }], sinkIdentity: recorded as string }), stateSize: 10 }])]);

  it('the same identity restores, with the committables', () => {
    const j = sinkJob('jobId orders-1');
    const r = plan(snapshotOf(j, 'jobId orders-1'), j);
    expect(inlineOf(r, j.vertexOf('sink'), 0, j.node('sink').id)?.committables).toEqual([{ rows: 1 }]);
  });

  it('a changed identity is refused: the committables would be committed again under the new one', () => {
    const j = sinkJob('jobId orders-2');
    expect(() => plan(snapshotOf(j, 'jobId orders-1'), j)).toThrow(
      /sink "orders" was checkpointed with jobId orders-1 and now has jobId orders-2: .*write output twice; keep the sink's jobId the same across restarts/,
    );
  });

  it('a snapshot without a recorded identity (older format) or a sink without one is not checked', () => {
    const j = sinkJob('jobId orders-2');
    expect(() => plan(snapshotOf(j, undefined), j)).not.toThrow();
    const k = sinkJob(undefined);
    expect(() => plan(snapshotOf(k, 'jobId orders-1'), k)).not.toThrow();
  });

  it('a recorded identity that is not a string is corrupt metadata, named', () => {
    const j = sinkJob('jobId orders-1');
    expect(() => plan(snapshotOf(j, 42), j)).toThrow(`${DIR}: sink "orders" records identity 42, not a string (corrupt metadata)`);
  });
});
