/**
 * Schema evolution of operator state (a non-keyed function's list state, broadcast state), as
 * test/savepoint/schema.test.ts for keyed state: a savepoint holds list items and broadcast
 * values in their descriptor's serializer's encoding and records its name and version; a job
 * with a newer serializer version reads them through its decode(data, writtenVersion)
 * migration, at the same or another parallelism; an incompatible serializer is refused,
 * naming the operator and the state. Before, the values went in raw, nothing was recorded,
 * no migration ran and nothing was refused.
 *
 * v1 keeps a count (serializer app.count v1, encoded n -> {n}); v2 keeps {count, since}
 * (app.count v2, decode(d, 1) = {count: d.n, since: 'migrated'}).
 */
import { afterAll, describe, expect, it } from 'vitest';
import { BroadcastStateDescriptor, defineJob, ListStateDescriptor, runJob, type JobResult, type RunOptions, type StateSerializer, type StreamExecutionEnvironment } from '../../src/index.ts';
import { decodeSnapshot, fingerprint, runThenStop, tempDir } from './helpers.ts';

const tmp = tempDir('sp-opstate-schema');
afterAll(() => tmp.cleanup());

const s1: StateSerializer<number> = { name: 'app.count', version: 1, encode: (n) => ({ n }), decode: (d) => (d as { n: number }).n };
interface C { count: number; since: string }
const s2: StateSerializer<C> = { name: 'app.count', version: 2, encode: (c) => c, decode: (d, w) => (w === 1 ? { count: (d as { n: number }).n, since: 'migrated' } : (d as C)) };
const renamed: StateSerializer<number> = { name: 'other.count', version: 1 };

/** 'renamed-bc': the broadcast state's serializer renamed, the list's kept (v1). */
type Variant = 'v1' | 'v2' | 'renamed' | 'renamed-bc';
const serializerOf = (v: Variant): StateSerializer<any> => (v === 'v1' ? s1 : v === 'v2' ? s2 : renamed);
const listSerializerOf = (v: Variant): StateSerializer<any> => (v === 'renamed-bc' ? s1 : serializerOf(v));

function build(variant: Variant) {
  return (env: StreamExecutionEnvironment) => {
    const listD = new ListStateDescriptor<any>('counts', { serializer: listSerializerOf(variant) });
    const bcD = new BroadcastStateDescriptor<string, any>('cfg', { serializer: serializerOf(variant) });
    const next = (cur: any) => (variant === 'v2' ? { count: (cur?.count ?? 0) + 1, since: cur?.since ?? 'new' } : (cur ?? 0) + 1);
    const rules = env.fromGenerator((i) => ({ i }), { ratePerSecond: 50 }).uid('rules').setParallelism(1).broadcast(bcD);
    env.fromGenerator((i) => ({ i }), { ratePerSecond: 300 }).uid('src')
      .process<any>({
        st: undefined as any,
        open(ctx: any) { this.st = ctx.getListState(listD); },
        processElement(r: any, _c: any, out: any) { const cur = this.st.get()[0]; out.collect({ i: r.i, read: cur }); this.st.update([next(cur)]); },
      } as any).uid('ops').collect('list');
    env.fromGenerator((i) => ({ i }), { ratePerSecond: 300 }).uid('src2')
      .connect(rules)
      .process<any>({
        processElement(r: any, ctx: any, out: any) { out.collect({ i: r.i, read: ctx.getBroadcastState(bcD).get('a') }); },
        processBroadcastElement(_r: any, ctx: any) { const st = ctx.getBroadcastState(bcD); st.put('a', next(st.get('a'))); },
      } as any).uid('bc').collect('bc');
  };
}

/** Runs the job for `ms` and stops it with a savepoint. */
const stopped = (variant: Variant, options: RunOptions, ms: number): Promise<{ sp: string; result: JobResult }> =>
  runThenStop(defineJob(build(variant)), { workers: 1, ...options }, ms, tmp.fresh(`sp-${variant}`));

describe('operator list state and broadcast state through a serializer upgrade', () => {
  for (const [p1, p2] of [[1, 1], [2, 3]]) {
    it(`v1 at parallelism ${p1} writes {n} with app.count v1 recorded; v2 at ${p2} reads it migrated`, async () => {
      const v1 = await stopped('v1', { parallelism: p1 }, 400);
      const d = await decodeSnapshot(v1.sp);
      const lists = d.inline('ops').map((s) => s!);
      const bcs = d.inline('bc').map((s) => s!);
      expect(lists).toHaveLength(p1);
      for (const s of lists) {
        expect(s.serializers?.['list:counts']).toEqual({ name: 'app.count', version: 1 });
        for (const x of s.lists!.counts!.items) expect(x).toEqual({ n: expect.any(Number) });
      }
      for (const s of bcs) {
        expect(s.serializers?.['broadcast:cfg']).toEqual({ name: 'app.count', version: 1 });
        expect(s.broadcast!.cfg).toEqual([['a', { n: expect.any(Number) }]]);
      }
      const listWritten = lists.flatMap((s) => s.lists!.counts!.items as { n: number }[]).map((x) => x.n).sort();

      // Long enough for every subtask to read its item on a loaded machine: at 250 ms, with the
      // CPUs overcommitted 2x, one of 3 subtasks read nothing before the stop.
      const v2 = await stopped('v2', { parallelism: p2, from: v1.sp }, 1000);
      const listReads = v2.result.collected<{ i: number; read?: C }>('list');
      const bcReads = v2.result.collected<{ i: number; read?: C }>('bc');
      // Every value read went through the migration (none raw {n}); each v1 count is read, migrated.
      for (const r of [...listReads, ...bcReads]) if (r.read !== undefined) expect(r.read).toEqual({ count: expect.any(Number), since: expect.stringMatching(/^(migrated|new)$/) });
      const migrated = listReads.filter((r) => r.read?.since === 'migrated').map((r) => r.read!.count);
      for (const n of listWritten) expect(migrated).toContain(n);
      // Broadcast state was given to every subtask: none starts without it.
      expect(bcReads.filter((r) => r.read?.since !== 'migrated')).toEqual([]);
      expect(bcReads.length).toBeGreaterThan(0);
      const d2 = await decodeSnapshot(v2.sp);
      for (const s of d2.inline('ops')) expect(s!.serializers?.['list:counts']).toEqual({ name: 'app.count', version: 2 });
    }, 30000);
  }

  const refused: [Variant, RegExp][] = [
    ['renamed', /operator "[^"]+" \(uid "(ops|bc)", subtask 1\/1\): state "(counts|cfg)" was written by serializer "app.count" v1 and the job now uses "other.count" v1; they are incompatible/],
    // Broadcast state is claimed at its first use (a record, not open()): refused there as well.
    ['renamed-bc', /operator "[^"]+" \(uid "bc", subtask 1\/1\): state "cfg" was written by serializer "app.count" v1 and the job now uses "other.count" v1; they are incompatible/],
  ];
  for (const [variant, message] of refused) {
    it(`a renamed serializer (${variant}) is refused, naming the operator and the state, and the savepoint is left as it was`, async () => {
      const v1 = await stopped('v1', { parallelism: 1 }, 300);
      const before = fingerprint(v1.sp);
      const r = await runJob(defineJob(build(variant)), { workers: 1, parallelism: 1, from: v1.sp, stdout: () => {}, log: () => {} });
      expect(r.status).toBe('FAILED');
      expect(r.error?.message).toMatch(message);
      expect(fingerprint(v1.sp)).toEqual(before);
    }, 30000);
  }
});
