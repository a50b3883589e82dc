/**
 * In-memory checkpoint storage: the same contract as the local directory (run against both),
 * every injectable fault doing what it says, deterministically (failed, short and held
 * writes, lost renames of the metadata, failing deletes), and what a job does about each: the
 * checkpoint fails with a reason, and the job goes on to finish with all its output. Jobs run
 * in one thread on a manual clock that the source moves, 10 ms per record; faults are seeded.
 * And a job on in-memory storage that fails once restores its keyed state from there exactly
 * (the state files opened through the storage's worker view, as every restore does).
 */
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { checkpoint, JOB, metadata, roots, storageContract } from './storage-contract.ts';
import { baseNameOf, childReference, parentReference, stateFileName } from '../../src/checkpoint/names.ts';
import { lookupValue, summarize } from '../../src/checkpoint/inspect.ts';
import { storageResolver } from '../../src/checkpoint/storage-resolver.ts';
import { runAsyncPhase } from '../../src/runtime/checkpointing/async-phase.ts';
import { Scheduler } from '../../src/runtime/scheduler.ts';
import { HeapKeyedStateBackend } from '../../src/state/heap/backend.ts';
import { MemoryCheckpointStorage, StorageFaults } from '../../src/checkpoint/memory/index.ts';
import { LocalCheckpointStorage, type CheckpointStorage } from '../../src/checkpoint/storage.ts';
import { errorCode } from '../../src/core/errors.ts';
import { CheckpointFailureReason as R } from '../../src/checkpoint/failure-reason.ts';
import { defineJob, ManualClock, runJob, ValueStateDescriptor, type JobResult, type Source, type SourceReader, type SourceSplit } from '../../src/index.ts';

const implementations: [string, () => CheckpointStorage][] = [
  ['local', () => {
    const root = mkdtempSync(join(tmpdir(), 'weir-contract-'));
    roots.push(root);
    return new LocalCheckpointStorage(root);
  }],
  ['memory', () => new MemoryCheckpointStorage()],
];

storageContract(implementations);

describe('the newest completed checkpoint, with a job still running in the directory', () => {
  /** Runs `hook` once, right after the first listing of the job's directory. */
  function afterFirstListing(s: MemoryCheckpointStorage, hook: () => Promise<void>): { listings: () => number } {
    const list = s.files.list.bind(s.files);
    let listings = 0;
    s.files.list = async (dir) => {
      const r = await list(dir);
      if (dir === s.jobDir(JOB) && listings++ === 0) await hook();
      return r;
    };
    return { listings: () => listings };
  }

  it('is found when the one listed was discarded and a newer one completed between the listing and the reads (before: none, and a resume next to a running job said "no completed checkpoint" instead of meeting its lease)', async () => {
    const s = new MemoryCheckpointStorage({ store: 'newest-race' });
    await s.initJob(JOB);
    const four = await checkpoint(s, 4);
    afterFirstListing(s, async () => {
      await checkpoint(s, 5); // what the running job does meanwhile: completes 5, then discards 4
      await s.discard(four);
    });
    expect((await s.newestCompleted(JOB))?.metadata.checkpointId).toBe(5);
  });

  it('is none after one more listing when nothing changed (a checkpoint still in progress), and a damaged one is logged once', async () => {
    const s = new MemoryCheckpointStorage({ store: 'newest-none' });
    await s.initJob(JOB);
    await s.initCheckpoint(JOB, 6); // in progress: a directory without metadata
    const probe = afterFirstListing(s, async () => {});
    expect(await s.newestCompleted(JOB)).toBeUndefined();
    expect(probe.listings()).toBe(2);
    // A damaged checkpoint beside it: skipped with one line, however many listings.
    const seven = await checkpoint(s, 7);
    await s.files.delete(childReference(seven, 'op-keyed-0.state'));
    const logs: string[] = [];
    expect(await s.newestCompleted(JOB, (l) => logs.push(l))).toBeUndefined();
    expect(logs).toHaveLength(1);
    expect(logs[0]).toMatch(/chk-7: state file op-keyed-0\.state .* is missing/);
  });
});

describe('injected faults', () => {
  it('fail-write: the state stream write rejects with code STORAGE; nothing is published', async () => {
    const s = new MemoryCheckpointStorage({ faults: new StorageFaults().inject({ kind: 'fail-write', match: /\.state$/, times: 1 }) });
    const e = await checkpoint(s, 1).catch((x: unknown) => x);
    expect(errorCode(e)).toBe('STORAGE');
    expect(String(e)).toMatch(/injected fault \(fail-write\): memory:\/\/weir\/.*\/chk-1\/op-keyed-0\.state/);
    expect(await s.completed(JOB)).toEqual([]);
    expect(s.faults.count('fail-write')).toBe(1);
    expect(await checkpoint(s, 2)).toBe(s.checkpointDir(JOB, 2)); // once only
  });

  it('short-write: the writer is told all went well, and finalize finds the state file truncated', async () => {
    const s = new MemoryCheckpointStorage({ faults: new StorageFaults().inject({ kind: 'short-write', match: /op-keyed-1\.state$/, times: 1 }) });
    await expect(checkpoint(s, 1)).rejects.toThrow(/chk-1 does not verify after its metadata was written: state file op-keyed-1\.state of operator "Sums" has \d+ bytes, expected 24 \(truncated\)/);
    expect(await s.completed(JOB, () => {})).toEqual([]);
  });

  it('hold-write: writes wait for the test, not for a clock; release lets them finish', async () => {
    const s = new MemoryCheckpointStorage({ faults: new StorageFaults().inject({ kind: 'hold-write', match: /\.state$/ }) });
    let done = false;
    const p = checkpoint(s, 1, 2, 1).then(() => (done = true));
    for (let i = 0; i < 20 && s.faults.heldWrites() === 0; i++) await Promise.resolve();
    expect(s.faults.heldWrites()).toBe(1);
    await new Promise((r) => setImmediate(r));
    expect(done).toBe(false);
    s.faults.clear();
    expect(s.faults.releaseHeld()).toBe(1);
    await p;
    expect(done).toBe(true);
  });

  it('lose-rename: the metadata is never published, finalize says so, and the attempt is garbage', async () => {
    const s = new MemoryCheckpointStorage({ faults: new StorageFaults().inject({ kind: 'lose-rename', match: /_metadata$/, times: 1 }) });
    await expect(checkpoint(s, 1)).rejects.toThrow(/chk-1 does not verify after its metadata was written: no metadata/);
    expect(s.files.listFiles().map((f) => f.reference.split('/').pop())).toContain('_metadata.tmp');
    expect(await s.completed(JOB)).toEqual([]);
    expect(await s.collectGarbage(JOB)).toBe(1);
    expect(s.files.listFiles()).toEqual([]);
  });

  it('fail-delete: a discard fails, and the checkpoint is still there, whole', async () => {
    const s = new MemoryCheckpointStorage({ faults: new StorageFaults().inject({ kind: 'fail-delete', times: 1 }) });
    const ref = await checkpoint(s, 1);
    await expect(s.discard(ref)).rejects.toThrow(/injected fault \(fail-delete\)/);
    expect((await s.verify(ref)).ok).toBe(true);
    await s.discard(ref);
    expect((await s.verify(ref)).ok).toBe(false);
  });

  it('probabilistic rules are a function of the seed: the same seed injects the same faults', async () => {
    const seed = Number(process.env.SEED ?? Date.now() % 1_000_000);
    console.log(`memory storage faults seed=${seed} (replay with SEED=${seed})`);
    async function run(): Promise<string[]> {
      const s = new MemoryCheckpointStorage({ faults: new StorageFaults(seed).inject({ kind: 'fail-write', probability: 0.3 }).inject({ kind: 'lose-rename', probability: 0.3 }) });
      const outcome: string[] = [];
      for (let id = 1; id <= 30; id++) outcome.push(await checkpoint(s, id).then(() => 'ok', (e: Error) => e.message));
      return [...outcome, ...s.faults.log().map((f) => `${f.kind} ${f.reference}`)];
    }
    const a = await run();
    expect(await run()).toEqual(a);
  });

  it('rules are validated', () => {
    expect(() => new StorageFaults().inject({ kind: 'fail-write', probability: 0 })).toThrow(RangeError);
    expect(() => new StorageFaults().inject({ kind: 'fail-write', times: 0 })).toThrow(RangeError);
  });
});

// ---- a job over faulty storage

const RECORDS = 400;
const KEYS = 8;
const STEP_MS = 10;

interface HistoryEntry {
  readonly id: number;
  readonly status: string;
  readonly failureReason?: string;
  readonly failureMessage?: string;
}

/**
 * A source that moves the manual clock 10 ms per record, and waits while a checkpoint is in
 * flight (unless a write of it is held by the test): so checkpoint timing depends on the
 * manual clock and the storage's answers, not on how fast this machine runs a scheduler slice.
 */
function clockedSource(clock: ManualClock, quiet: () => boolean, onQuiet: (wake: () => void) => void, at: Record<number, () => void>): Source<number, SourceSplit> {
  return {
    name: 'clocked', bounded: true, maxReaders: 1,
    planSplits: () => [{ id: 'all' }],
    createReader(ctx): SourceReader<number, SourceSplit> {
      let i = 0;
      return {
        addSplits() {},
        snapshotSplits: () => [{ id: 'all' }],
        poll(out) {
          if (i >= RECORDS) return 'end';
          if (!quiet()) {
            onQuiet(() => ctx.wake());
            return 'wait';
          }
          at[i]?.();
          clock.advanceTo((i + 1) * STEP_MS);
          out.collect(i++);
          return 'more';
        },
        close() {},
      };
    },
  };
}

/**
 * Counts per key over RECORDS records, checkpointing every 100 ms of the manual clock (every
 * 10 records) into `storage`; `at` runs a step of the test before a record.
 */
async function runOver(storage: MemoryCheckpointStorage, at: Record<number, () => void> = {}): Promise<{ result: JobResult; history: HistoryEntry[]; logs: string[] }> {
  const clock = new ManualClock(0);
  // Checkpoints in flight: from their location's creation to their history line (written when
  // each ends); a checkpoint with a write held by the test is stalled, and the clock moves on.
  const inFlight = new Set<number>();
  const stalled = new Set<number>();
  let wakers: (() => void)[] = [];
  const wakeAll = () => {
    for (const w of wakers.splice(0)) w();
  };
  const initCheckpoint = storage.initCheckpoint.bind(storage);
  storage.initCheckpoint = (jobId, id) => {
    inFlight.add(id);
    return initCheckpoint(jobId, id);
  };
  const appendHistory = storage.appendHistory.bind(storage);
  storage.appendHistory = (jobId, entry) => {
    inFlight.delete((entry as HistoryEntry).id);
    wakeAll();
    return appendHistory(jobId, entry);
  };
  storage.faults.onHold((reference) => {
    stalled.add(Number(/\/chk-(\d+)\//.exec(reference)?.[1]));
    wakeAll();
  });
  const quiet = () => [...inFlight].every((id) => stalled.has(id));
  const logs: string[] = [];
  const count = new ValueStateDescriptor<number>('count', { defaultValue: 0 });
  const result = await runJob(defineJob((env) => {
    env.fromSource(clockedSource(clock, quiet, (w) => wakers.push(w), at)).keyBy((i) => i % KEYS).process<[number, number]>({
      processElement(i, ctx, out) {
        const n = ctx.getState(count);
        n.update(n.value()! + 1);
        out.collect([i, n.value()!]);
      },
    }).uid('counts').collect('out');
  }), {
    workers: 1, parallelism: 1, clock, stdout: () => {}, log: (l) => logs.push(l), checkpointStorage: storage,
    checkpoint: { interval: 100, timeout: 250, tolerableFailures: 1000 },
    restartStrategy: { type: 'none' },
  });
  wakers = [];
  const history = (await storage.readHistory(result.jobId)).entries as HistoryEntry[];
  return { result, history, logs };
}

/** The job went on: finished, every record counted exactly once, checkpoints completed after the faults. */
function expectWentOn(r: { result: JobResult; history: HistoryEntry[] }): void {
  expect(r.result.status, r.result.error?.message).toBe('FINISHED');
  const out = r.result.collected<[number, number]>('out');
  expect(out.length).toBe(RECORDS);
  for (const [i, n] of out) expect(n, `record ${i}`).toBe(Math.floor(i / KEYS) + 1);
  const lastFailed = Math.max(0, ...r.history.filter((h) => h.status === 'FAILED').map((h) => h.id));
  expect(r.history.some((h) => h.status === 'COMPLETED' && h.id > lastFailed), 'a checkpoint completed after the last failure').toBe(true);
}

function failures(history: HistoryEntry[]): string[] {
  return history.filter((h) => h.status === 'FAILED').map((h) => `${h.failureReason}: ${h.failureMessage}`);
}

describe('a job over faulty storage: the checkpoint fails with a reason, the job goes on', () => {
  it('a failed state write: the task declines (CHECKPOINT_ASYNC_EXCEPTION)', async () => {
    const storage = new MemoryCheckpointStorage({ faults: new StorageFaults().inject({ kind: 'fail-write', match: /\.state$/, times: 2 }) });
    const r = await runOver(storage);
    expect(failures(r.history)).toEqual([
      expect.stringMatching(new RegExp(`^${R.CHECKPOINT_ASYNC_EXCEPTION}: asynchronous phase failed in .*injected fault \\(fail-write\\): memory://weir/.*/chk-1/`)),
      expect.stringMatching(new RegExp(`^${R.CHECKPOINT_ASYNC_EXCEPTION}: .*chk-2/`)),
    ]);
    expectWentOn(r);
  });

  it('a short state write: the metadata is written, the checkpoint does not verify, it is not complete (FINALIZE_CHECKPOINT_FAILURE)', async () => {
    const storage = new MemoryCheckpointStorage({ faults: new StorageFaults().inject({ kind: 'short-write', match: /\.state$/, times: 1 }) });
    const r = await runOver(storage);
    expect(failures(r.history)).toEqual([expect.stringMatching(new RegExp(`^${R.FINALIZE_CHECKPOINT_FAILURE}: cannot write metadata: .*chk-1 does not verify .*has \\d+ bytes, expected \\d+ \\(truncated\\)`))]);
    expectWentOn(r);
  });

  it('a lost rename of the metadata: the checkpoint does not exist, and is not reported complete', async () => {
    const storage = new MemoryCheckpointStorage({ faults: new StorageFaults().inject({ kind: 'lose-rename', match: /_metadata$/, times: 1 }) });
    const r = await runOver(storage);
    expect(failures(r.history)).toEqual([expect.stringMatching(new RegExp(`^${R.FINALIZE_CHECKPOINT_FAILURE}: .*chk-1 does not verify after its metadata was written: no metadata`))]);
    expectWentOn(r);
  });

  it('a failed metadata write (FINALIZE_CHECKPOINT_FAILURE) and a failed id record (IO_EXCEPTION: storage failing while triggering counts, as in Flink)', async () => {
    const storage = new MemoryCheckpointStorage({
      faults: new StorageFaults().inject({ kind: 'fail-write', match: /_metadata\.tmp$/, times: 1 }).inject({ kind: 'fail-write', match: /last-checkpoint-id\.tmp$/, times: 1 }),
    });
    const r = await runOver(storage);
    expect(failures(r.history).sort()).toEqual([
      expect.stringMatching(new RegExp(`^${R.FINALIZE_CHECKPOINT_FAILURE}: cannot write metadata: injected fault \\(fail-write\\)`)),
      expect.stringMatching(new RegExp(`^${R.IO_EXCEPTION}: injected fault \\(fail-write\\): .*last-checkpoint-id\\.tmp`)),
    ].sort());
    expectWentOn(r);
  });

  it('a slow write, held by the test while the clock moves on: the checkpoint expires (CHECKPOINT_EXPIRED); released later, it changes nothing', async () => {
    const faults = new StorageFaults().inject({ kind: 'hold-write', match: /\.state$/, times: 1 });
    const storage = new MemoryCheckpointStorage({ faults });
    let heldAtRelease = 0;
    const r = await runOver(storage, { 200: () => (heldAtRelease = faults.releaseHeld()) });
    expect(heldAtRelease).toBe(1);
    expect(failures(r.history)).toEqual([expect.stringMatching(new RegExp(`^${R.CHECKPOINT_EXPIRED}: checkpoint 1 expired before completing \\(timeout 250 ms\\)`))]);
    expectWentOn(r);
    expect(faults.heldWrites()).toBe(0);
  });

  it('failing deletes of subsumed checkpoints: said in the log, the job goes on (and the leftovers stay whole)', async () => {
    const storage = new MemoryCheckpointStorage({ faults: new StorageFaults().inject({ kind: 'fail-delete', match: /\/chk-[12]$|chk-[12]\/_metadata$/ }) });
    const r = await runOver(storage);
    expect(r.logs.filter((l) => l.includes('cannot discard')).length).toBeGreaterThanOrEqual(2);
    expect(failures(r.history)).toEqual([]);
    expectWentOn(r);
    const left = await storage.completed(r.result.jobId);
    expect(left.map((c) => c.metadata.checkpointId)).toEqual([1, 2]);
  });

  it('seeded random faults of every kind: every failure has a reason the fault explains, and the job goes on', async () => {
    const seed = Number(process.env.SEED ?? Date.now() % 1_000_000);
    console.log(`faulty storage job seed=${seed} (replay with SEED=${seed})`);
    const faults = new StorageFaults(seed)
      .inject({ kind: 'fail-write', probability: 0.05, times: 6 })
      .inject({ kind: 'short-write', match: /\.state$/, probability: 0.05, times: 4 })
      .inject({ kind: 'lose-rename', match: /_metadata$/, probability: 0.1, times: 4 })
      .inject({ kind: 'fail-delete', probability: 0.2, times: 4 });
    const storage = new MemoryCheckpointStorage({ faults });
    const r = await runOver(storage);
    const explained = [R.CHECKPOINT_ASYNC_EXCEPTION, R.FINALIZE_CHECKPOINT_FAILURE, R.TRIGGER_CHECKPOINT_FAILURE, R.IO_EXCEPTION];
    for (const f of r.history.filter((h) => h.status === 'FAILED')) {
      expect(explained, JSON.stringify(f)).toContain(f.failureReason);
      expect(f.failureMessage, JSON.stringify(f)).toMatch(/injected fault|does not verify/);
    }
    expect(r.history.filter((h) => h.status === 'FAILED').length).toBeLessThanOrEqual(faults.log().filter((x) => x.kind !== 'fail-delete').length);
    expectWentOn(r);
  });
});

// ---- restoring from in-memory storage

describe('a job on in-memory storage that fails once', () => {
  it('restarts from its latest checkpoint there, opening the state files through storage: keyed state restored exactly', async () => {
    const FAIL_AT = 205;
    const storage = new MemoryCheckpointStorage();
    const clock = new ManualClock(0);
    // As runOver: the source waits while a checkpoint of its attempt is in flight, so each
    // checkpoint k records the source at record 10k; a new attempt forgets the old one's.
    const inFlight = new Set<number>();
    let wakers: (() => void)[] = [];
    let completed = 0;
    const initCheckpoint = storage.initCheckpoint.bind(storage);
    storage.initCheckpoint = (jobId, id) => {
      inFlight.add(id);
      return initCheckpoint(jobId, id);
    };
    const appendHistory = storage.appendHistory.bind(storage);
    storage.appendHistory = (jobId, entry) => {
      const e = entry as HistoryEntry;
      inFlight.delete(e.id);
      if (e.status === 'COMPLETED') completed = Math.max(completed, e.id);
      for (const w of wakers.splice(0)) w();
      return appendHistory(jobId, entry);
    };
    const opened: string[] = [];
    const openState = storage.workerView.openState.bind(storage.workerView);
    storage.workerView.openState = (reference) => {
      opened.push(reference);
      return openState(reference);
    };
    let attempt = -1;
    const restoredAt: number[] = [];
    const source: Source<number, SourceSplit & { next?: number }> = {
      name: 'positioned', bounded: true, maxReaders: 1,
      planSplits: () => [{ id: 'all' }],
      createReader(ctx): SourceReader<number, SourceSplit & { next?: number }> {
        attempt++;
        inFlight.clear();
        let i = 0;
        return {
          addSplits(splits) {
            i = splits[0]?.next ?? 0;
            if (attempt > 0) restoredAt.push(i);
          },
          snapshotSplits: () => [{ id: 'all', next: i }],
          poll(out) {
            if (i >= RECORDS) return 'end';
            if (inFlight.size > 0) {
              wakers.push(() => ctx.wake());
              return 'wait';
            }
            clock.advance(STEP_MS);
            out.collect(i++);
            return 'more';
          },
          close() {},
        };
      },
    };
    const count = new ValueStateDescriptor<number>('count', { defaultValue: 0 });
    const outputs: [number, number][][] = [[], []];
    let completedAtFailure = 0;
    const logs: string[] = [];
    const result = await runJob(defineJob((env) => {
      env.fromSource(source).keyBy((i) => i % KEYS).process<[number, number]>({
        processElement(i, ctx, out) {
          if (attempt === 0 && i === FAIL_AT) {
            completedAtFailure = completed;
            throw new Error(`injected failure at record ${i}`);
          }
          const n = ctx.getState(count);
          n.update(n.value()! + 1);
          outputs[attempt]!.push([i, n.value()!]);
          out.collect([i, n.value()!]);
        },
      }).uid('counts').collect('out');
    }), {
      workers: 1, parallelism: 1, clock, stdout: () => {}, checkpointStorage: storage,
      log: (l) => {
        logs.push(l);
        // The restart waits 0 ms on the manual clock, which only the source moves: move it once the wait is set.
        if (/restarting in 0 ms/.test(l)) setImmediate(() => clock.advance(0));
      },
      checkpoint: { interval: 100, timeout: 250 },
      restartStrategy: { type: 'fixed-delay', attempts: 1, delay: 0 },
    });
    wakers = [];
    expect(result.status, result.error?.message).toBe('FINISHED');
    expect(result.attempts).toBe(2);
    expect(result.checkpoints.counts.restored).toBe(1);
    // Checkpoint k was taken at record 10k: the last one before the failure at record 205 is 20.
    expect(completedAtFailure).toBe(20);
    const restart = logs.find((l) => /restarting in/.test(l));
    expect(restart, logs.join('\n')).toMatch(/injected failure at record 205/);
    expect(restart).toMatch(new RegExp(`restarting in 0 ms \\(attempt 1 of 1\\) from checkpoint ${completedAtFailure}\\b`));
    // The restore opened checkpoint 20's one state file in memory, through the storage's worker view.
    expect(opened).toHaveLength(1);
    expect(parentReference(opened[0]!)).toBe(storage.checkpointDir(result.jobId, 20));
    expect(baseNameOf(opened[0]!)).toMatch(/^[0-9a-f]{16}-0\.state$/);
    // The source resumed where checkpoint 20 recorded it, and the counts went on from exactly
    // the state at that checkpoint: every record's count is what a failure-free run gives.
    expect(restoredAt).toEqual([200]);
    const expected = (from: number, to: number): [number, number][] => Array.from({ length: to - from }, (_, k) => [from + k, Math.floor((from + k) / KEYS) + 1]);
    expect(outputs[0]).toEqual(expected(0, FAIL_AT));
    expect(outputs[1]).toEqual(expected(200, RECORDS));
    expect(result.collected<[number, number]>('out')).toEqual([...expected(0, FAIL_AT), ...expected(200, RECORDS)]);
  });
});

describe('inspecting a snapshot in memory', () => {
  it('summarize and lookupValue verify the metadata and open the state files through the storage', async () => {
    const storage = new MemoryCheckpointStorage();
    const loc = await storage.initCheckpoint(JOB, 1);
    // The heap backend writes its state file through the location's streams, as a task does.
    const b = new HeapKeyedStateBackend({ start: 0, end: 127 }, 128, new ManualClock(0), 'test');
    const count = new ValueStateDescriptor<number>('count');
    for (let k = 0; k < 10; k++) {
      b.setCurrentKey(`k${k}`);
      b.getValueState(count).update(k * 10);
    }
    const file = stateFileName('op-keyed', 0);
    const h = await runAsyncPhase(b.snapshot(), storage.workerView.resolveLocation(loc.reference), file, new Scheduler());
    const m = metadata(1, [{ file, fileSize: h.streams[0]!.size }]);
    await loc.finalize({ ...m, operators: m.operators.map((o) => ({ ...o, subtasks: o.subtasks.map((s) => ({ ...s, keyGroupRange: { start: 0, end: 127 } })) })) });
    const opened: string[] = [];
    const openState = storage.workerView.openState.bind(storage.workerView);
    storage.workerView.openState = (reference) => {
      opened.push(reference);
      return openState(reference);
    };
    const storages = storageResolver(storage);
    const summary = await summarize(loc.reference, storages);
    expect(summary.operators.map((o) => [o.uid, o.states.map((s) => [s.name, s.keys]), o.ranges.map((r) => [r.file, r.keys])])).toEqual([['sums', [['count', 10]], [[file, 10]]]]);
    expect(await lookupValue(loc.reference, 'sums', 'count', 'k7', storages)).toMatchObject({ found: true, value: 70 });
    expect(await lookupValue(loc.reference, 'sums', 'count', 'k99', storages)).toMatchObject({ found: false });
    expect(new Set(opened)).toEqual(new Set([childReference(loc.reference, file)]));
    // Without the storage that serves it, the reference is refused by name.
    await expect(summarize(loc.reference)).rejects.toThrow(/no checkpoint storage here serves memory:\/\/weir/);
  });
});
