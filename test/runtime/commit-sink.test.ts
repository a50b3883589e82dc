/**
 * The two-phase-commit sink operator against the real exactly-once file sink, in a seeded,
 * replayable simulation of the race of issue 7: a commit held behind a slow compaction, a
 * later checkpoint completing (its commit queued behind), a snapshot in between, the process
 * killed, and a restore from the later checkpoint. Every line written before the barrier of
 * the checkpoint restored from must end up committed exactly once.
 *
 * "Slow compaction" is a gate after the real commit (renames and compaction) of the file
 * sink: the commit's promise resolves only when the test opens the gate, which is what a
 * compaction over megabytes of async I/O looks like to the operator. "Killed" drops the
 * operator with its commits still held: they never finish, as in a process that died.
 */
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { Rng } from '../../src/core/random.ts';
import type { SinkCommitter, TwoPhaseCommitSink } from '../../src/core/sink.ts';
import { ExactlyOnceFileSink, ManualClock, type FileCommittable } from '../../src/index.ts';
import { CommitSinkOperator } from '../../src/runtime/operators/commit-sink.ts';
import type { OperatorEnvironment } from '../../src/runtime/operators/operator.ts';
import type { Output } from '../../src/runtime/output.ts';
import { OperatorStateStore } from '../../src/state/operator-state.ts';
import type { InlineOperatorState } from '../../src/core/checkpoint-format.ts';

let work: string;
beforeEach(() => {
  work = mkdtempSync(join(tmpdir(), 'weir-commit-sink-'));
});
afterEach(() => rmSync(work, { recursive: true, force: true }));

/** Holds every commit that reaches it until released (a slow compaction); open lets commits through. */
class Gate {
  open = false;
  private held: (() => void)[] = [];
  private arrivals: (() => void)[] = [];
  get waiting(): number {
    return this.held.length;
  }
  pass(): Promise<void> {
    for (const a of this.arrivals.splice(0)) a();
    if (this.open) return Promise.resolve();
    return new Promise((res) => this.held.push(res));
  }
  /** Lets the oldest held commit finish. */
  releaseOne(): void {
    this.held.shift()?.();
  }
  nextArrival(): Promise<void> {
    return new Promise((res) => this.arrivals.push(res));
  }
}

/** The real file sink, its commits finishing only when the gate lets them. */
function gated(real: ExactlyOnceFileSink<string>, gate: Gate): TwoPhaseCommitSink<string, FileCommittable> {
  return {
    name: real.name,
    createWriter: (ctx) => real.createWriter(ctx),
    createCommitter: (ctx): SinkCommitter<FileCommittable> => {
      const c = real.createCommitter(ctx);
      return {
        commit: async (list) => {
          await c.commit(list);
          await gate.pass();
        },
        close: () => c.close?.(),
      };
    },
    recover: (ctx, id, list, all) => real.recover(ctx, id, list, all),
  };
}

function attempt(sink: TwoPhaseCommitSink<string, FileCommittable>, attemptNumber: number, clock: ManualClock, log: string[], restore?: { id: number; inline: InlineOperatorState; all?: unknown[] }, checkpointing = true): CommitSinkOperator {
  const op = new CommitSinkOperator(sink as TwoPhaseCommitSink<unknown, unknown>);
  const env = {
    taskInfo: { operatorName: 'sink', operatorId: 'sink', subtaskIndex: 0, parallelism: 1, maxParallelism: 128, attemptNumber },
    clock,
    scheduleMail: () => ({ cancel() {} }),
    keyedBackend: undefined,
    keySelectors: [],
    operatorState: new OperatorStateStore('sink'),
    isSuspended: () => false,
    isHeldBack: () => false,
    checkpointing,
    objectReuse: false,
    restoredCheckpointId: restore?.id,
    restoredCommittables: restore?.all,
    services: { collect() {}, writeStdout() {}, log: (l: string) => log.push(l) },
  } as unknown as OperatorEnvironment;
  op.setup(env, {} as Output, 1);
  if (restore) op.restoreInline(restore.inline);
  op.open();
  return op;
}

/** Lets queued commits run until the chain is idle or a commit is held at the gate. */
async function settle(op: CommitSinkOperator, gate: Gate): Promise<void> {
  // Commits run one at a time: behind a held one nothing moves until it is released.
  if (gate.waiting === 0) await Promise.race([op.quiesce() ?? Promise.resolve(), gate.nextArrival()]);
  // The arrival resolves before the held commit's own continuation; let file I/O of others end.
  for (let i = 0; i < 5; i++) await new Promise((r) => setImmediate(r));
}

function committedLines(dir: string): string[] {
  if (!existsSync(dir)) return [];
  return readdirSync(dir)
    .filter((f) => !f.startsWith('.'))
    .flatMap((f) => readFileSync(join(dir, f), 'utf8').split('\n').filter((l) => l !== ''))
    .sort();
}

interface Snapshot {
  readonly id: number;
  readonly inline: InlineOperatorState;
  /** Lines written before this checkpoint's barrier. */
  readonly linesBefore: string[];
}

/**
 * One run of the simulation: warm-up checkpoints, the race (commit k held, k+1 completes and
 * queues behind it, snapshot k+2 taken and completed), a kill; a restored attempt whose re-commit
 * is held in turn while it takes and completes a checkpoint, a second kill; a last attempt that
 * runs to the end. Returns what must be committed and what is.
 */
async function simulate(seed: number): Promise<{ expected: string[]; got: string[]; log: string[]; hidden: string[] }> {
  const rng = new Rng(seed);
  const dir = join(work, `out-${seed}`);
  // Real compaction, so re-commits after a restore meet files already merged away.
  const real = new ExactlyOnceFileSink<string>(dir, { compactMinFiles: 2 + rng.int(3), compactBelow: 1 << 20 });
  const clock = new ManualClock(0);
  const log: string[] = [];
  const written: string[] = [];
  let n = 0;
  let nextId = 1;
  const completed: Snapshot[] = [];
  const write = (op: CommitSinkOperator) => {
    const k = 1 + rng.int(20);
    const lines: string[] = [];
    for (let i = 0; i < k; i++) lines.push(`r${n++}`);
    op.processBatch({ values: lines, timestamps: lines.map(() => 0) } as never);
    written.push(...lines.map((l) => JSON.stringify(l)));
  };
  const snapshot = (op: CommitSinkOperator): Snapshot => {
    const id = nextId++;
    return { id, inline: op.snapshotInline(id) ?? {}, linesBefore: written.slice() };
  };

  // Attempt 0: warm-up checkpoints that complete and commit normally.
  let gate = new Gate();
  gate.open = true;
  let op = attempt(gated(real, gate), 0, clock, log);
  for (let w = rng.int(4); w > 0; w--) {
    write(op);
    const s = snapshot(op);
    completed.push(s);
    op.notifyCheckpointComplete(s.id);
    await settle(op, gate);
  }
  // The race: checkpoint k's commit is held (slow compaction) ...
  gate.open = false;
  write(op);
  const k = snapshot(op);
  completed.push(k);
  op.notifyCheckpointComplete(k.id);
  await settle(op, gate);
  expect(gate.waiting).toBe(1);
  // ... checkpoint k+1 completes and its commit queues behind it ...
  write(op);
  const k1 = snapshot(op);
  completed.push(k1);
  op.notifyCheckpointComplete(k1.id);
  await settle(op, gate);
  // ... and checkpoint k+2 is taken (and completes) before either commit has finished.
  write(op);
  const k2 = snapshot(op);
  completed.push(k2);
  if (rng.int(2) === 0) {
    op.notifyCheckpointComplete(k2.id); // or the notification is lost with the process
    await settle(op, gate);
  }
  write(op); // lines after the last barrier: never committed by this attempt
  // Killed: held commits never finish, the operator is gone.

  // Attempt 1 restores from k+2; its re-commit is held while it takes and completes a checkpoint.
  gate = new Gate();
  let restoreFrom = completed[completed.length - 1]!;
  let expectedLines = restoreFrom.linesBefore;
  written.length = 0;
  written.push(...restoreFrom.linesBefore);
  op = attempt(gated(real, gate), 1, clock, log, { id: restoreFrom.id, inline: restoreFrom.inline, all: restoreFrom.inline.committables });
  await settle(op, gate);
  write(op);
  const m = snapshot(op);
  completed.push(m);
  op.notifyCheckpointComplete(m.id);
  await settle(op, gate);
  write(op);
  // Killed again, the restored checkpoint's re-commit still held.

  // Attempt 2 restores from m and runs to the end with nothing held.
  gate = new Gate();
  gate.open = true;
  restoreFrom = completed[completed.length - 1]!;
  written.length = 0;
  written.push(...restoreFrom.linesBefore);
  op = attempt(gated(real, gate), 2, clock, log, { id: restoreFrom.id, inline: restoreFrom.inline, all: restoreFrom.inline.committables });
  write(op);
  const last = snapshot(op);
  op.notifyCheckpointComplete(last.id);
  await op.quiesce();
  op.close();
  expectedLines = last.linesBefore;
  const hidden = readdirSync(dir).filter((f) => f.startsWith('.') && !f.startsWith('.weir-')); // .weir-*: the sink's own records
  return { expected: expectedLines.slice().sort(), got: committedLines(dir), log, hidden };
}

describe('two-phase-commit sink operator: a commit held behind a slow compaction, a snapshot, a kill', () => {
  const base = Number(process.env.SEED ?? Math.floor(Math.random() * 1_000_000));
  it(`every line written before the restored checkpoint's barrier is committed exactly once (seeds ${base}..${base + 19}; replay with SEED=${base})`, async () => {
    console.log(`commit-sink simulation seed=${base} (replay with SEED=${base})`);
    for (let s = base; s < base + 20; s++) {
      const r = await simulate(s);
      expect(r.got.length, `seed ${s}: committed line count`).toBe(r.expected.length);
      expect(r.got, `seed ${s}`).toEqual(r.expected);
      expect(r.log, `seed ${s}: no output reported lost`).toEqual([]);
      expect(r.hidden, `seed ${s}: nothing uncommitted left behind`).toEqual([]);
    }
  });
});

describe('the ledger keeps committables until their commit has finished', () => {
  it('a snapshot taken while a commit is held still carries that commit\'s committables', async () => {
    const dir = join(work, 'out');
    const gate = new Gate();
    const log: string[] = [];
    const op = attempt(gated(new ExactlyOnceFileSink<string>(dir, { compactBelow: 0 }), gate), 0, new ManualClock(0), log);
    op.processBatch({ values: ['a'], timestamps: [0] } as never);
    const s1 = op.snapshotInline(1)!.committables as FileCommittable[];
    expect(s1).toHaveLength(1);
    op.notifyCheckpointComplete(1);
    await settle(op, gate);
    expect(gate.waiting).toBe(1);
    op.processBatch({ values: ['b'], timestamps: [0] } as never);
    const s2 = op.snapshotInline(2)!.committables as FileCommittable[];
    expect(s2.map((c) => c.pending)).toEqual([s1[0]!.pending, expect.stringMatching(/chk-2\.pending$/)]);
    gate.releaseOne();
    await settle(op, gate);
    const s3 = op.snapshotInline(3)!.committables as FileCommittable[];
    expect(s3.map((c) => c.pending)).toEqual([s2[1]!.pending]);
  });
});

describe('a failed commit stops the commits queued behind it', () => {
  /** A sink whose committables are the checkpoint ids; commits are recorded, and held until the test settles them. */
  function recording(): { sink: TwoPhaseCommitSink<string, number>; calls: number[]; upTo: (number | undefined)[]; settle: { resolve: () => void; reject: (e: Error) => void }[] } {
    const calls: number[] = [];
    const upTo: (number | undefined)[] = [];
    const settle: { resolve: () => void; reject: (e: Error) => void }[] = [];
    const sink: TwoPhaseCommitSink<string, number> = {
      name: 'recording',
      createWriter: () => ({ write() {}, prepareCommit: (id: number) => [id] }),
      createCommitter: () => ({
        commit: (list: number[], id?: number) => {
          calls.push(...list);
          upTo.push(id);
          return new Promise<void>((resolve, reject) => settle.push({ resolve, reject }));
        },
      }),
    };
    return { sink, calls, upTo, settle };
  }

  it('checkpoint 2 completes while the commit of 1 runs; 1 fails: 2 is never committed and the task fails', async () => {
    const { sink, calls, settle } = recording();
    const op = attempt(sink as unknown as TwoPhaseCommitSink<string, FileCommittable>, 0, new ManualClock(0), []);
    op.snapshotInline(1);
    op.notifyCheckpointComplete(1);
    await new Promise((r) => setImmediate(r));
    expect(calls).toEqual([1]);
    op.snapshotInline(2);
    op.notifyCheckpointComplete(2);
    settle[0]!.reject(new Error('the store went away'));
    for (let i = 0; i < 5; i++) await new Promise((r) => setImmediate(r));
    // Committing 2 after 1 failed would move the sink's committed position past 1, and the
    // restore's re-commit of 1 (and 2) would then skip 1.
    expect(calls).toEqual([1]);
    await expect(op.quiesce()).rejects.toThrow(/the store went away/);
    expect(() => op.processBatch({ values: ['x'], timestamps: [0] } as never)).toThrow(/the store went away/);
  });

  it('commits that succeed run in checkpoint order, one after the other', async () => {
    const { sink, calls, settle } = recording();
    const op = attempt(sink as unknown as TwoPhaseCommitSink<string, FileCommittable>, 0, new ManualClock(0), []);
    for (const id of [1, 2, 3]) {
      op.snapshotInline(id);
      op.notifyCheckpointComplete(id);
    }
    for (let k = 0; k < 3; k++) {
      await new Promise((r) => setImmediate(r));
      expect(calls).toEqual([1, 2, 3].slice(0, k + 1));
      settle[k]!.resolve();
    }
    await op.quiesce();
    expect(op.snapshotInline(4)!.committables).toEqual([4]);
  });

  it('restored committables stay in the state until recover() has finished too (an S3 open part is completed there, not by the commit)', async () => {
    const { sink, calls, settle } = recording();
    let recovered!: () => void;
    const withRecover = { ...sink, recover: () => new Promise<void>((r) => (recovered = r)) } as unknown as TwoPhaseCommitSink<string, FileCommittable>;
    const op = attempt(withRecover, 1, new ManualClock(0), [], { id: 5, inline: { committables: [5] } });
    await new Promise((r) => setImmediate(r));
    expect(calls).toEqual([5]);
    settle[0]!.resolve();
    for (let i = 0; i < 5; i++) await new Promise((r) => setImmediate(r));
    // The re-commit finished, recover() has not: checkpoint 6 still names 5 (before: [6]; a crash
    // after 6 completed then lost what recover() was to complete).
    expect(op.snapshotInline(6)!.committables).toEqual([5, 6]);
    recovered();
    for (let i = 0; i < 5; i++) await new Promise((r) => setImmediate(r));
    expect(op.snapshotInline(7)!.committables).toEqual([6, 7]);
  });

  it('a commit is bounded by the sink\'s commitTimeoutMs: the task fails naming it', async () => {
    const { sink } = recording(); // its commits never settle
    const op = attempt({ ...sink, commitTimeoutMs: 30 } as unknown as TwoPhaseCommitSink<string, FileCommittable>, 0, new ManualClock(0), []);
    op.snapshotInline(1);
    op.notifyCheckpointComplete(1);
    await expect(op.quiesce()).rejects.toThrow(/commit did not finish within 0\.03 s \(the sink's commitTimeoutMs\)/);
  });

  it('without checkpointing, the end commits what intermediate savepoints prepared, then the rest, under the id after the last savepoint\'s (before: 0, below it)', async () => {
    const { sink, calls, upTo, settle } = recording();
    const op = attempt(sink as unknown as TwoPhaseCommitSink<string, FileCommittable>, 0, new ManualClock(0), [], undefined, false);
    op.snapshotInline(1); // a savepoint: tasks are not told it completed
    op.snapshotInline(2);
    op.finish();
    await new Promise((r) => setImmediate(r));
    settle[0]!.resolve();
    await op.quiesce();
    expect(calls).toEqual([1, 2, 3]);
    // One commit: a writer may carry a savepoint's output into the end's (the PostgreSQL
    // two-phase sink), and its committer leaves the savepoint's out only when it sees both.
    expect(upTo).toEqual([3]);
  });

  it('without checkpointing and without output at the end, the savepoints\' committables are committed under the last one\'s id', async () => {
    const calls: number[] = [];
    const upTo: (number | undefined)[] = [];
    const sink: TwoPhaseCommitSink<string, number> = {
      name: 'recording',
      createWriter: () => ({ write() {}, prepareCommit: (id: number) => (id <= 2 ? [id] : []) }),
      createCommitter: () => ({ commit: (list: number[], id?: number) => void (calls.push(...list), upTo.push(id)) }),
    };
    const op = attempt(sink as unknown as TwoPhaseCommitSink<string, FileCommittable>, 0, new ManualClock(0), [], undefined, false);
    op.snapshotInline(1);
    op.snapshotInline(2);
    op.finish();
    await op.quiesce();
    expect(calls).toEqual([1, 2]);
    expect(upTo).toEqual([2]);
  });
});
