/**
 * Incremental checkpoints end to end with runJob (the recovery fixture: per-key running counts
 * in keyed state through the exactly-once file sink, n = floor(i/4) + 1 for record i):
 * - a failed run keeps checkpoints whose keyed state is a chain (base + deltas) in shared/;
 *   resuming from the latest (mid-chain, and after a re-materialization) commits every record
 *   exactly once with the right counts;
 * - rescaling 2 -> 3 from an incremental chain;
 * - the shared directory holds exactly the retained chains' files: subsumed checkpoints'
 *   exclusive deltas are deleted, the base they shared with retained ones stays;
 * - a chain file deleted by hand makes that checkpoint corrupt: skipped with a log line, the
 *   previous checkpoint restores;
 * - a finished job leaves no shared files behind.
 */
import { existsSync, mkdtempSync, readdirSync, rmSync, unlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { committedLines } from '../helpers/output.ts';
import { LocalCheckpointStorage, type CompletedCheckpointRef } from '../../src/checkpoint/storage.ts';
import { runJob, type JobResult, type RunOptions } from '../../src/index.ts';
import { lookupValue, summarize } from '../../src/checkpoint/inspect.ts';

const JOB = join(dirname(fileURLToPath(import.meta.url)), '..', 'fixtures', 'jobs', 'recoverable-counts.ts');
const C = 1000;

let work: string;
let k = 0;
const fresh = (name: string) => join(work, `${name}-${k++}`);
beforeAll(() => {
  work = mkdtempSync(join(tmpdir(), 'weir-incremental-'));
});
afterAll(() => rmSync(work, { recursive: true, force: true }));

interface Run { result: JobResult; out: string; chk: string; logs: string[] }

async function run(options: RunOptions & { out?: string; chk?: string; fail?: string; rate?: number } = {}): Promise<Run> {
  const out = options.out ?? fresh('out');
  const chk = options.chk ?? fresh('chk');
  const logs: string[] = [];
  const { fail = 'never', rate = 250, out: _o, chk: _c, ...rest } = options;
  const result = await runJob(JOB, {
    workers: 1,
    parallelism: 1,
    stdout: () => {},
    log: (l) => logs.push(l),
    args: [out, String(C), String(rate), fail, '-', '0'],
    ...rest,
    checkpoint: { interval: 20, dir: chk, incremental: true, ...rest.checkpoint },
  });
  return { result, out, chk, logs };
}

function expectedLines(): string[] {
  return Array.from({ length: C }, (_, i) => JSON.stringify({ i, key: `k${i % 4}`, n: Math.floor(i / 4) + 1 })).sort();
}

/** Records of a resumed run agree with the restored state and positions, and the last record is there. */
function expectConsistent(lines: string[]): void {
  expect(lines.length).toBeGreaterThan(0);
  for (const l of lines) {
    const r = JSON.parse(l) as { i: number; n: number };
    expect(r.n, l).toBe(Math.floor(r.i / 4) + 1);
  }
  expect(lines.some((l) => JSON.parse(l).i === C - 1)).toBe(true);
}

function sharedFiles(chk: string, jobId: string): string[] {
  const d = join(chk, jobId, 'shared');
  return existsSync(d) ? readdirSync(d).sort() : [];
}

function chainsOf(c: CompletedCheckpointRef): { name: string; checkpointId: number; kind: string }[][] {
  return c.metadata.operators.flatMap((o) => o.subtasks.filter((s) => s.chain !== undefined).map((s) => [...s.chain!]));
}

/** A run that fails after `after` checkpoints and keeps its 3 newest. */
async function failedRun(options: RunOptions & { fail?: string } = {}): Promise<{ first: Run; kept: CompletedCheckpointRef[] }> {
  const first = await run({ fail: 'always@6', restartStrategy: { type: 'none' }, ...options, checkpoint: { retention: 'retain-on-cancel', numRetained: 3, ...options.checkpoint } });
  expect(first.result.status).toBe('FAILED');
  const kept = await new LocalCheckpointStorage(first.chk).completed(first.result.jobId);
  expect(kept.length).toBe(3);
  return { first, kept };
}

describe('incremental checkpoints: restore', () => {
  it('from the middle of a chain: every record committed exactly once across both runs', async () => {
    const { first, kept } = await failedRun({ checkpoint: { incrementalMaxDeltas: 1000, incrementalMaxDeltaRatio: 1000 } });
    const chains = chainsOf(kept[2]!);
    expect(chains.length).toBe(1);
    expect(chains[0]!.length).toBeGreaterThan(2); // a base and several deltas
    expect(chains[0]![0]!.kind).toBe('base');
    expect(chains[0]![0]!.checkpointId).toBeLessThan(kept[0]!.metadata.checkpointId); // the base outlived its checkpoint
    // Inspection reads the chain: 4 keys once each, and a key's latest count.
    const summary = await summarize(kept[2]!.path);
    const counts = summary.operators.find((o) => o.uid === 'counts')!;
    expect(counts.states.find((st) => st.name === 'count')?.keys).toBe(4);
    const v = await lookupValue(kept[2]!.path, 'counts', 'count', 'k0');
    expect(v.found).toBe(true);
    expect(typeof v.value).toBe('number');
    const second = await run({ out: first.out, chk: first.chk, from: 'latest' });
    expect(second.result.status, second.result.error?.message).toBe('FINISHED');
    expect(second.result.checkpoints.lastRestore?.id).toBe(kept[2]!.metadata.checkpointId);
    expect(committedLines(first.out)).toEqual(expectedLines());
    // A finished job deletes its checkpoints, and with them every shared file.
    expect(sharedFiles(first.chk, first.result.jobId)).toEqual([]);
  });

  it('after re-materializations (max 1 delta): exactly once as well', async () => {
    const { first, kept } = await failedRun({ checkpoint: { incrementalMaxDeltas: 1, incrementalMaxDeltaRatio: 1000 } });
    const chains = kept.map((c) => chainsOf(c)[0]!);
    for (const ch of chains) expect(ch.length).toBeLessThanOrEqual(2);
    // A base written after the first checkpoint: the chain was materialized again.
    expect(chains.some((ch) => ch[0]!.checkpointId > 1)).toBe(true);
    const second = await run({ out: first.out, chk: first.chk, from: 'latest' });
    expect(second.result.status, second.result.error?.message).toBe('FINISHED');
    expect(committedLines(first.out)).toEqual(expectedLines());
  });

  it('with unaligned checkpoints too: resumes exactly once', async () => {
    const { first, kept } = await failedRun({ workers: 2, parallelism: 2, checkpoint: { unaligned: true, incrementalMaxDeltas: 1000, incrementalMaxDeltaRatio: 1000 } });
    expect(chainsOf(kept[2]!).every((ch) => ch.length > 1)).toBe(true);
    const second = await run({ out: first.out, chk: first.chk, from: 'latest', workers: 2, parallelism: 2, checkpoint: { unaligned: true } });
    expect(second.result.status, second.result.error?.message).toBe('FINISHED');
    expect(committedLines(first.out)).toEqual(expectedLines());
  });

  it('rescales 2 -> 3 from incremental chains', async () => {
    const { first, kept } = await failedRun({ workers: 2, parallelism: 2 });
    expect(chainsOf(kept[2]!).length).toBe(2);
    const second = await run({ out: first.out, chk: first.chk, from: 'latest', workers: 3, parallelism: 3 });
    expect(second.result.status, second.result.error?.message).toBe('FINISHED');
    expect(committedLines(first.out)).toEqual(expectedLines());
  });
});

describe('incremental checkpoints: the disk backend', () => {
  it('writes chains too, resumes exactly once from them, and restores a heap chain (and the heap one of its own)', async () => {
    const { first, kept } = await failedRun({ stateBackend: 'disk', checkpoint: { incrementalMaxDeltas: 1000, incrementalMaxDeltaRatio: 1000 } });
    expect(chainsOf(kept[2]!)[0]!.length).toBeGreaterThan(2);
    const second = await run({ out: first.out, chk: first.chk, from: 'latest', stateBackend: 'disk' });
    expect(second.result.status, second.result.error?.message).toBe('FINISHED');
    expect(committedLines(first.out)).toEqual(expectedLines());
    // Across backends: a heap chain into the disk backend, and a disk chain into the heap backend.
    for (const [from, to] of [['heap', 'disk'], ['disk', 'heap']] as const) {
      const f = await failedRun({ stateBackend: from });
      const s = await run({ out: f.first.out, chk: f.first.chk, from: 'latest', stateBackend: to });
      expect(s.result.status, s.result.error?.message).toBe('FINISHED');
      expect(committedLines(f.first.out)).toEqual(expectedLines());
    }
  });
});

describe('incremental checkpoints: shared files', () => {
  // A delta builds on the previous completed checkpoint, so retained chains reference files
  // written by subsumed checkpoints (their base and deltas); files no retained chain names
  // (a chain replaced by a new base, an aborted checkpoint's file) are deleted.
  for (const [maxDeltas, expectation] of [[1000, 'subsumed checkpoints\' files kept while a retained chain uses them'], [1, 'old chains deleted once a new base replaced them']] as const) {
    it(`hold exactly the retained chains' files (max ${maxDeltas} deltas: ${expectation})`, async () => {
      const { first, kept } = await failedRun({ checkpoint: { incrementalMaxDeltas: maxDeltas, incrementalMaxDeltaRatio: 1000 } });
      const jobId = first.result.jobId;
      const completed = first.result.checkpoints.entries().filter((e) => e.status === 'COMPLETED').map((e) => e.id);
      const keptIds = kept.map((c) => c.metadata.checkpointId);
      const subsumed = completed.filter((id) => !keptIds.includes(id));
      expect(subsumed.length).toBeGreaterThan(0);
      const referenced = [...new Set(kept.flatMap((c) => chainsOf(c).flat().map((f) => f.name)))].sort();
      expect(sharedFiles(first.chk, jobId)).toEqual(referenced);
      const writtenBy = (id: number) => sharedFiles(first.chk, jobId).some((f) => f.endsWith(`-${id}.state`));
      if (maxDeltas === 1000) expect(subsumed.some(writtenBy)).toBe(true);
      else expect(subsumed.some((id) => !writtenBy(id))).toBe(true);
    });
  }

  it('a chain file deleted by hand: that checkpoint is skipped with a log line, the previous one restores', async () => {
    const { first, kept } = await failedRun({ checkpoint: { incrementalMaxDeltas: 1000, incrementalMaxDeltaRatio: 1000 } });
    const newest = kept[2]!;
    const own = chainsOf(newest)[0]!.at(-1)!;
    expect(own.checkpointId).toBe(newest.metadata.checkpointId); // its own delta: no other checkpoint needs it
    unlinkSync(join(first.chk, first.result.jobId, 'shared', own.name));
    const out = fresh('out-after-delete');
    const second = await run({ out, chk: first.chk, from: 'latest' });
    expect(second.result.status, second.result.error?.message).toBe('FINISHED');
    const skip = second.logs.find((l) => l.includes(newest.path));
    expect(skip, second.logs.join('\n')).toMatch(/skipping checkpoint .*chk-\d+: shared state file .* \(incremental chain\) is missing/);
    expect(second.result.checkpoints.lastRestore?.id).toBe(kept[1]!.metadata.checkpointId);
    expectConsistent(committedLines(out));
  });
});
