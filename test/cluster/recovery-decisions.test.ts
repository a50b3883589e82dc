/**
 * What happens when an attempt ends, as pure decisions driven by a fake clock: finish, fall
 * back from a corrupt checkpoint (never to empty state, never away from a snapshot the user
 * named, at most maxCorruptFallbacks in a row), or restart as the restart strategy says, from
 * the newest good checkpoint. The last test runs seeded random failure schedules and checks
 * the invariants; it prints its seed (SEED=... replays it).
 */
import { describe, expect, it } from 'vitest';
import { METADATA_VERSION, type CheckpointMetadata } from '../../src/checkpoint/metadata.ts';
import type { CompletedCheckpointRef } from '../../src/checkpoint/storage.ts';
import { ManualClock } from '../../src/core/clock.ts';
import { Rng } from '../../src/core/random.ts';
import { RecoveryLogic, type AttemptOutcome, type RestartChoice } from '../../src/cluster/decisions/recovery.ts';
import type { SerializedError } from '../../src/cluster/messages.ts';
import { resolveRestartStrategy, RestartBackoff, type RestartStrategySettings } from '../../src/cluster/restart-strategy.ts';

function ref(id: number, dir = '/chk/job', type: 'checkpoint' | 'savepoint' = 'checkpoint'): CompletedCheckpointRef {
  const metadata = { format: 'weir-checkpoint', version: METADATA_VERSION, jobId: 'job', jobName: 'j', checkpointId: id, type } as unknown as CheckpointMetadata;
  return { path: `${dir}/${type === 'checkpoint' ? 'chk' : 'savepoint'}-${id}`, metadata };
}

const ERR: SerializedError = { name: 'Error', code: undefined, message: 'boom', stack: undefined, user: true };
const CORRUPT_ERR: SerializedError = { name: 'CorruptStateError', code: 'CORRUPT_STATE', message: 'block k/count/3 checksum mismatch', stack: undefined, user: false };
const failed: AttemptOutcome = { status: 'FAILED', error: ERR };
const corrupt = (path: string): AttemptOutcome => ({ status: 'FAILED', error: CORRUPT_ERR, corruptCheckpoint: path });
/** Where a restart goes; 'ended' when the job ends instead. */
const fromOf = (c: RestartChoice): CompletedCheckpointRef | undefined | 'ended' => (c.type === 'restart' ? c.from : 'ended');

function recovery(restart: RestartStrategySettings = { type: 'fixed-delay', attempts: 2, delay: 100 }, maxCorruptFallbacks = 10, explicit?: string, random = () => 0.5): RecoveryLogic {
  return new RecoveryLogic({ maxCorruptFallbacks }, new RestartBackoff(resolveRestartStrategy(restart, 'test'), random), explicit);
}

describe('an attempt that does not fail', () => {
  it('ends the job as it ended; a failure after cancel is a cancel', () => {
    const r = recovery();
    expect(r.afterAttempt({ status: 'FINISHED' }, false, 0)).toEqual({ type: 'end', outcome: { status: 'FINISHED' } });
    expect(r.afterAttempt({ status: 'CANCELED' }, true, 0)).toEqual({ type: 'end', outcome: { status: 'CANCELED' } });
    expect(r.afterAttempt(failed, true, 0)).toEqual({ type: 'end', outcome: { status: 'CANCELED' } });
  });
});

describe('a corrupt checkpoint', () => {
  it('falls back to the newest good checkpoint before it, without spending a restart', () => {
    const r = recovery({ type: 'none' });
    const all = [ref(1), ref(2), ref(3)];
    const step = r.afterAttempt(corrupt(all[2]!.path), false, 0);
    expect(step).toEqual({ type: 'fall-back', corrupt: all[2]!.path, error: CORRUPT_ERR });
    if (step.type !== 'fall-back') return;
    const choice = r.chooseFallback(step, all, all[2]);
    expect(choice).toEqual({
      type: 'restore', from: all[1],
      log: `weir: checkpoint /chk/job/chk-3 cannot be restored (block k/count/3 checksum mismatch); falling back to the previous checkpoint /chk/job/chk-2`,
    });
    // The next one is bad too: chk-1; never chk-3 or chk-2 again.
    const again = r.afterAttempt(corrupt(all[1]!.path), false, 0);
    if (again.type !== 'fall-back') throw new Error('expected a fall-back');
    expect(r.chooseFallback(again, all, all[1])).toMatchObject({ type: 'restore', from: all[0] });
  });

  it('a restored snapshot from elsewhere is the last fallback; never empty state', () => {
    const r = recovery();
    const savepoint = ref(5, '/sp');
    const step = r.afterAttempt(corrupt('/chk/job/chk-7'), false, 0);
    if (step.type !== 'fall-back') throw new Error('expected a fall-back');
    expect(r.chooseFallback(step, [ref(7)], savepoint)).toMatchObject({ type: 'restore', from: savepoint });
    const last = r.afterAttempt(corrupt(savepoint.path), false, 0);
    if (last.type !== 'fall-back') throw new Error('expected a fall-back');
    expect(r.chooseFallback(last, [ref(7)], savepoint)).toEqual({
      type: 'end', outcome: { status: 'FAILED', error: { ...CORRUPT_ERR, message: `cannot restore from /sp/chk-5: ${CORRUPT_ERR.message}` } },
    });
  });

  it('never falls back from a snapshot the user named', () => {
    const r = recovery({ type: 'fixed-delay', attempts: 5 }, 10, '/sp/savepoint-1');
    expect(r.afterAttempt(corrupt('/sp/savepoint-1'), false, 0)).toEqual({
      type: 'end', outcome: { status: 'FAILED', error: { ...CORRUPT_ERR, message: `cannot restore from /sp/savepoint-1: ${CORRUPT_ERR.message}` } },
    });
  });

  it('gives up after maxCorruptFallbacks in a row; an ordinary failure in between resets the count', () => {
    const r = recovery({ type: 'fixed-delay', attempts: 100 }, 2);
    expect(r.afterAttempt(corrupt('/a'), false, 0).type).toBe('fall-back');
    expect(r.afterAttempt(corrupt('/b'), false, 0).type).toBe('fall-back');
    expect(r.afterAttempt(failed, false, 0).type).toBe('restart');
    expect(r.afterAttempt(corrupt('/c'), false, 0).type).toBe('fall-back');
    expect(r.afterAttempt(corrupt('/d'), false, 0).type).toBe('fall-back');
    const end = r.afterAttempt(corrupt('/e'), false, 0);
    expect(end).toMatchObject({ type: 'end', outcome: { status: 'FAILED' } });
    expect(end.type === 'end' && end.outcome.status === 'FAILED' && end.outcome.error.message).toBe(`cannot restore from /e: ${CORRUPT_ERR.message} (3 corrupt checkpoints in a row; giving up)`);
  });
});

describe('restarts', () => {
  it('never go to a checkpoint of an earlier run the user went back past (--from an older checkpoint of the same job)', () => {
    const r = recovery();
    const all = [ref(2), ref(3), ref(4), ref(5), ref(6)];
    r.abandon(all.slice(1).map((c) => c.path)); // this run started from chk-2
    const step = r.afterAttempt(failed, false, 0);
    if (step.type !== 'restart') throw new Error('expected a restart');
    expect(fromOf(r.restartFrom(step, all, all[0]))).toBe(all[0]);
    // This run's own checkpoints come after them (ids continue past the highest) and are chosen.
    expect(fromOf(r.restartFrom(step, [...all, ref(7)], all[0]))).toEqual(ref(7));
    const corruptStep = r.afterAttempt(corrupt(ref(7).path), false, 0);
    if (corruptStep.type !== 'fall-back') throw new Error('expected a fall-back');
    expect(r.chooseFallback(corruptStep, [...all, ref(7)], ref(7))).toMatchObject({ type: 'restore', from: all[0] });
  });

  it('never go back past a savepoint whose output the sinks committed (a stop\'s), unless it cannot be restored', () => {
    const r = recovery();
    const sp = ref(3, '/sp', 'savepoint');
    r.savepointCommitted(sp);
    r.savepointCommitted(ref(1, '/sp', 'savepoint')); // an older one changes nothing
    const step = r.afterAttempt(failed, false, 0);
    if (step.type !== 'restart') throw new Error('expected a restart');
    expect(r.restartFrom(step, [ref(1), ref(2)], undefined)).toEqual({ type: 'restart', from: sp, log: 'weir: job failed (boom); restarting in 100 ms (attempt 1 of 2) from savepoint 3' });
    // A checkpoint after it (the job ran on) is newer: chosen.
    expect(fromOf(r.restartFrom(step, [ref(2), ref(4)], sp))).toEqual(ref(4));
    // Without checkpointing (nothing listed) too (before: from the beginning, the committed output written again).
    expect(fromOf(r.restartFrom(step, undefined, undefined))).toEqual(sp);
    // The savepoint turns out corrupt: the newest good checkpoint before it.
    const c = r.afterAttempt(corrupt(sp.path), false, 0);
    if (c.type !== 'fall-back') throw new Error('expected a fall-back');
    expect(r.chooseFallback(c, [ref(1), ref(2)], sp)).toMatchObject({ type: 'restore', from: ref(2) });
  });

  it('when no listed checkpoint can be restored though this run completed one (the newest failed its check, retention kept no other), the job ends instead of going back to empty state or to where the run began (before: restarted from the beginning, or from a snapshot retention had deleted, writing output again)', () => {
    const r = recovery();
    const step = r.afterAttempt(failed, false, 0);
    if (step.type !== 'restart') throw new Error('expected a restart');
    for (const restored of [undefined, ref(3)]) {
      const c = r.restartFrom(step, [], restored, 7);
      expect(c.type).toBe('end');
      if (c.type !== 'end' || c.outcome.status !== 'FAILED') return;
      expect(c.outcome.error.message).toBe(`boom; and it cannot restart: checkpoint 7, the newest this run completed, and every other it kept cannot be restored (see the lines above), and going back to ${restored === undefined ? 'empty state' : 'checkpoint 3'} would write its output again; restore one by hand (--from) once it is repaired, or start over on purpose`);
    }
    // An older good checkpoint kept beside the bad newest one: the documented fallback.
    expect(fromOf(r.restartFrom(step, [ref(5)], ref(3), 7))).toEqual(ref(5));
    // Nothing completed in this run: where it began, as before.
    expect(fromOf(r.restartFrom(step, [], ref(3), undefined))).toEqual(ref(3));
    expect(fromOf(r.restartFrom(step, [], undefined, undefined))).toBeUndefined();
  });

  it('as the restart strategy says, with its delay, from the newest good checkpoint; then it stops, saying why', () => {
    const clock = new ManualClock(0);
    const r = recovery({ type: 'fixed-delay', attempts: 2, delay: 250 });
    const step = r.afterAttempt(failed, false, clock.now());
    expect(step).toEqual({ type: 'restart', delayMs: 250, reason: 'attempt 1 of 2', error: ERR });
    if (step.type !== 'restart') return;
    expect(r.restartFrom(step, [ref(1), ref(2)], undefined)).toEqual({ type: 'restart', from: ref(2), log: 'weir: job failed (boom); restarting in 250 ms (attempt 1 of 2) from checkpoint 2' });
    expect(r.restartFrom(step, undefined, undefined)).toEqual({ type: 'restart', from: undefined, log: 'weir: job failed (boom); restarting in 250 ms (attempt 1 of 2) from the beginning' });
    expect(r.restartFrom(step, [], ref(9, '/sp'))).toMatchObject({ from: ref(9, '/sp') });
    clock.advance(1000);
    expect(r.afterAttempt(failed, false, clock.now()).type).toBe('restart');
    expect(r.afterAttempt(failed, false, clock.now())).toEqual({
      type: 'end', outcome: failed, log: 'weir: job failed and will not restart again (fixed-delay restart strategy exhausted its 2 attempt(s))',
    });
  });

  it('restart strategy none: the job fails, and the caller reports the error (no log line)', () => {
    expect(recovery({ type: 'none' }).afterAttempt(failed, false, 0)).toEqual({ type: 'end', outcome: failed });
  });

  it('failure-rate counts failures in a window of the fake clock', () => {
    const clock = new ManualClock(0);
    const r = recovery({ type: 'failure-rate', maxFailuresPerInterval: 2, failureRateInterval: 1000, delay: 10 });
    expect(r.afterAttempt(failed, false, clock.now()).type).toBe('restart');
    clock.advance(600);
    expect(r.afterAttempt(failed, false, clock.now()).type).toBe('restart');
    clock.advance(600); // the first failure left the window
    expect(r.afterAttempt(failed, false, clock.now()).type).toBe('restart');
    clock.advance(100);
    expect(r.afterAttempt(failed, false, clock.now()).type).toBe('end');
  });
});

describe('invariants under seeded random failure schedules', () => {
  it('never restores a known-bad snapshot, bounds fallbacks and restarts, and always ends', () => {
    const seed = Number(process.env.SEED ?? Date.now() % 1_000_000);
    console.log(`recovery simulation seed=${seed} (replay with SEED=${seed})`);
    for (let round = 0; round < 300; round++) simulate(new Rng(seed, round), `seed=${seed} round=${round}`);
  });
});

function simulate(rng: Rng, label: string): void {
  const attempts = rng.range(0, 5);
  const maxFallbacks = rng.range(0, 4);
  const r = recovery({ type: 'fixed-delay', attempts, delay: rng.range(0, 100) }, maxFallbacks, undefined, () => rng.next());
  const clock = new ManualClock(0);
  let checkpoints = Array.from({ length: rng.range(0, 5) }, (_, i) => ref(i + 1));
  let from: CompletedCheckpointRef | undefined = rng.bool() ? ref(100, '/sp') : undefined;
  const bad = new Set<string>();
  let restarts = 0;
  let inRow = 0;
  for (let step = 0; ; step++) {
    expect(step, `${label}: did not end`).toBeLessThan(attempts + (maxFallbacks + 1) * (attempts + 1) + 2);
    // The attempt restored `from`: a corrupt one fails with it; otherwise an ordinary failure.
    const outcome = from !== undefined && rng.bool(0.5) ? corrupt(from.path) : failed;
    if (outcome.status === 'FAILED' && outcome.corruptCheckpoint !== undefined) bad.add(outcome.corruptCheckpoint);
    const s = r.afterAttempt(outcome, false, clock.now());
    if (s.type === 'end') return;
    if (s.type === 'fall-back') {
      inRow++;
      expect(inRow, label).toBeLessThanOrEqual(maxFallbacks);
      const c = r.chooseFallback(s, checkpoints, from);
      if (c.type === 'end') return;
      expect(bad.has(c.from.path), `${label}: chose a bad snapshot`).toBe(false);
      from = c.from;
      continue;
    }
    inRow = 0;
    restarts++;
    expect(restarts, label).toBeLessThanOrEqual(attempts);
    // Between attempts a new checkpoint may have completed.
    if (rng.bool(0.3)) checkpoints = [...checkpoints, ref(checkpoints.length + 1)];
    const next = r.restartFrom(s, checkpoints, from);
    if (next.type !== 'restart') throw new Error(`${label}: ended without a checkpoint this run completed`);
    if (next.from !== undefined && next.from !== from) expect(bad.has(next.from.path), `${label}: restarted from a bad snapshot`).toBe(false);
    from = next.from;
    clock.advance(s.delayMs);
  }
}

describe('a checkpoint that does not fit the job (RESTORE)', () => {
  it('ends the job without spending restarts: every restart would be refused the same way', () => {
    const r = recovery({ type: 'fixed-delay', attempts: 5, delay: 100 });
    const error: SerializedError = { name: 'RestoreError', code: 'RESTORE', message: 'sink "s" was checkpointed with jobId a and now has jobId b', stack: undefined, user: true };
    const step = r.afterAttempt({ status: 'FAILED', error }, false, 0);
    expect(step).toEqual({
      type: 'end', outcome: { status: 'FAILED', error },
      log: 'weir: job failed and will not restart: the checkpoint cannot be restored into this job (sink "s" was checkpointed with jobId a and now has jobId b)',
    });
    // Other failures still restart.
    expect(r.afterAttempt(failed, false, 0)).toMatchObject({ type: 'restart' });
  });

  it('a malformed record or state that does not fit ends the job too: every restart reads them again (before: restarted for ever with checkpointing\'s default strategy)', () => {
    const r = recovery({ type: 'fixed-delay', attempts: 5, delay: 100 });
    for (const code of ['MALFORMED_RECORD', 'STATE_RESTORE'] as const) {
      const error: SerializedError = { name: 'WeirError', code, message: 'malformed record at in.jsonl:2', stack: undefined, user: true };
      const step = r.afterAttempt({ status: 'FAILED', error }, false, 0);
      expect(step).toMatchObject({ type: 'end', outcome: { status: 'FAILED', error } });
      expect((step as { log: string }).log).toMatch(/^weir: job failed and will not restart: .*\(malformed record at in\.jsonl:2\)$/);
    }
    expect(r.afterAttempt(failed, false, 0)).toMatchObject({ type: 'restart' });
  });
});
