/**
 * Helpers for the event-time / window / timer semantics tests: a punctuated watermark
 * strategy driven by the records themselves, a scripted source that emits one record per
 * poll (so a downstream task sees each record before the next one is produced, and the
 * manual clock can be moved between records), and a signal for cross-source sequencing.
 * Everything runs in one thread (workers: 1), so closures are shared with the job.
 *
 * Why not a map() that calls clock.advanceTo(record.pt) before the window: keyBy is a network
 * edge, so the map runs in the source's task and handles a whole batch (up to 1024 records)
 * before the window's task sees any of it; every record would then be assigned at the last
 * record's processing time. One record per poll, with env.setBufferTimeout(0) so every poll
 * is flushed downstream, makes the downstream task take each record at its own clock time
 * (the single-thread scheduler alternates the runnable tasks).
 */
import { join } from 'node:path';
import {
  defineJob, ExactlyOnceFileSink, runJob, WatermarkStrategy, type AggregateFunction, type DataStream, type JobResult, type KeyedStream,
  type ManualClock, type ProcessFunction, type Source, type SourceReader, type SourceSplit, type WindowedStream,
} from '../../src/index.ts';

/** A record that carries its event timestamp and, optionally, a watermark to emit right after it. */
export interface Stamped {
  readonly ts: number;
  /** Punctuation: the watermark emitted after this record. */
  readonly wm?: number;
}

/**
 * Punctuated watermarks: the watermark is emitted in onEvent, right after the record that
 * carries it, so lateness does not depend on when periodic emission happens to run.
 */
export function punctuated<T extends Stamped>(): WatermarkStrategy<T> {
  return WatermarkStrategy.forGenerator<T>(() => ({
    onEvent(e, _ts, out) {
      if (e.wm !== undefined) out.emitWatermark(e.wm);
    },
    onPeriodicEmit() {},
  })).withTimestampAssigner((e) => e.ts);
}

/** Set once; wakes every source waiting on it. */
export class Signal {
  private set_ = false;
  private waiters: (() => void)[] = [];
  get isSet(): boolean {
    return this.set_;
  }
  set(): void {
    if (this.set_) return;
    this.set_ = true;
    for (const w of this.waiters.splice(0)) w();
  }
  onSet(fn: () => void): void {
    if (this.set_) fn();
    else this.waiters.push(fn);
  }
}

export type Step<T> =
  /** Emit one record (with an event timestamp if ts is given); the poll ends after it. */
  | { readonly emit: T; readonly ts?: number }
  /** Move the manual clock; the poll ends, so due timers and periodic watermarks run before the next step. */
  | { readonly advanceTo: number }
  /**
   * Wait until the signal is set. timeoutMs is a liveness guard only (real time): if the
   * signal never comes (the behaviour under test is broken), the script goes on instead of
   * hanging, and the test's assertions report the failure.
   */
  | { readonly waitFor: Signal; readonly timeoutMs: number }
  /** Run a side effect (e.g. set a flag) at this point of the script. */
  | { readonly run: () => void };

export interface ScriptOptions {
  readonly clock?: ManualClock;
  /** Called when the script returns 'end' (the source then emits the final watermark). */
  readonly onEnd?: () => void;
  /**
   * Collect on the split's own output (out.forSplit), as the built-in readers do: needed for the
   * source's own per-split watermarks (fromSource's `watermarks`).
   */
  readonly splitOutput?: boolean;
}

/** A bounded one-reader source that follows a script, one record per poll. */
export function scripted<T>(steps: readonly Step<T>[], options: ScriptOptions = {}): Source<T, SourceSplit> {
  return {
    name: 'scripted',
    bounded: true,
    maxReaders: 1,
    planSplits: () => [{ id: 'script' }],
    createReader(ctx): SourceReader<T, SourceSplit> {
      let i = 0;
      let waitingOn = -1;
      let timedOut = -1;
      let guard: ReturnType<typeof setTimeout> | undefined;
      return {
        addSplits() {},
        snapshotSplits: () => [{ id: 'script' }],
        poll(out) {
          for (;;) {
            const s = steps[i];
            if (s === undefined) {
              options.onEnd?.();
              return 'end';
            }
            if ('emit' in s) {
              i++;
              (options.splitOutput ? out.forSplit('script') : out).collect(s.emit, s.ts);
              if (i >= steps.length) {
                options.onEnd?.();
                return 'end';
              }
              return 'more';
            }
            if ('advanceTo' in s) {
              if (options.clock === undefined) throw new Error('scripted source: advanceTo needs a clock');
              i++;
              options.clock.advanceTo(s.advanceTo);
              return 'more';
            }
            if ('run' in s) {
              i++;
              s.run();
              continue;
            }
            if (s.waitFor.isSet || timedOut === i) {
              if (guard !== undefined) clearTimeout(guard);
              guard = undefined;
              i++;
              continue;
            }
            if (waitingOn !== i) {
              waitingOn = i;
              const step = i;
              s.waitFor.onSet(() => ctx.wake());
              guard = setTimeout(() => {
                timedOut = step;
                ctx.wake();
              }, s.timeoutMs);
            }
            return 'wait';
          }
        },
        close() {
          if (guard !== undefined) clearTimeout(guard);
        },
      };
    },
  };
}

/** Pairs every record with the event timestamp it carries downstream (undefined if none). */
export function stamped<T>(s: DataStream<T>): DataStream<{ value: T; ts: number | undefined }> {
  return s.process<{ value: T; ts: number | undefined }>({
    processElement(value, ctx, out) {
      out.collect({ value, ts: ctx.timestamp });
    },
  });
}

/** Order-insensitive form: sorted by JSON. */
export function byJson<T>(xs: readonly T[]): T[] {
  return [...xs].sort((a, b) => {
    const x = JSON.stringify(a);
    const y = JSON.stringify(b);
    return x < y ? -1 : x > y ? 1 : 0;
  });
}

/** A step of a replayable script: a record (with its event time), a wait, or a side effect. */
export type ReplayStep<T> = { readonly emit: T; readonly ts: number } | { readonly waitFor: Signal } | { readonly run: () => void };

interface ScriptSplit extends SourceSplit {
  readonly next: number;
}

/**
 * A replayable script: one record per poll; the split's position (the next step) is
 * checkpointed, so a restore replays from there. A side effect that throws fails the attempt.
 */
export function replayable<T>(steps: readonly ReplayStep<T>[]): Source<T, ScriptSplit> {
  return {
    name: 'replayable script',
    bounded: true,
    maxReaders: 1,
    planSplits: () => [{ id: 'script', next: 0 }],
    createReader(ctx): SourceReader<T, ScriptSplit> {
      let i = 0;
      let waiting = false;
      return {
        addSplits(splits) {
          for (const s of splits) i = s.next;
        },
        snapshotSplits: () => [{ id: 'script', next: i }],
        poll(out) {
          for (;;) {
            const s = steps[i];
            if (s === undefined) {
              out.splitFinished('script');
              return 'end';
            }
            if ('emit' in s) {
              i++;
              out.forSplit('script').collect(s.emit, s.ts);
              return 'more';
            }
            if ('run' in s) {
              i++;
              s.run();
              continue;
            }
            if (s.waitFor.isSet) {
              i++;
              continue;
            }
            if (!waiting) {
              waiting = true;
              s.waitFor.onSet(() => ctx.wake());
            }
            return 'wait';
          }
        },
      };
    },
  };
}

/**
 * A pass-through process function (run it at parallelism 1) that sets `signal` once a
 * checkpoint whose barrier passed it after a record matching `marks` has completed: every
 * operator downstream then holds that record's effect in a completed checkpoint.
 */
export function signalCheckpointAfter<T>(marks: (x: T) => boolean, signal: Signal): ProcessFunction<T, T> {
  let seen = false;
  let target: number | undefined;
  return {
    processElement(x, _ctx, o) {
      if (marks(x)) seen = true;
      o.collect(x);
    },
    snapshotState({ checkpointId }) {
      if (seen && target === undefined) target = checkpointId;
    },
    notifyCheckpointComplete(id) {
      if (target !== undefined && id >= target) signal.set();
    },
  };
}

/** A keyed record of a replayed script (window restore tests): key, event time, value, optional punctuation. */
export interface KeyedRec { readonly k: string; readonly ts: number; readonly v: number; readonly wm?: number }

/** The replay step emitting KeyedRec {k, ts, v} at event time ts, with punctuation wm when given. */
export const keyedStep = (k: string, ts: number, v: number, wm?: number): ReplayStep<KeyedRec> =>
  ({ emit: wm === undefined ? { k, ts, v } : { k, ts, v, wm }, ts });

/** Sum of v, with merge() and a number accumulator. */
export const sumOfV: AggregateFunction<KeyedRec, number, number> = {
  createAccumulator: () => 0,
  add: (x, acc) => acc + x.v,
  getResult: (acc) => acc,
  merge: (a, b) => a + b,
  commutative: true,
};

/** What a window restore test varies: the windows, where its files go, its parallelism and state backend. */
export interface WindowRestoreRun {
  readonly script: readonly ReplayStep<KeyedRec>[];
  /** Signalled at the first barrier after the script's record of key 'b' (signalCheckpointAfter). */
  readonly checkpointed: Signal;
  readonly window: (keyed: KeyedStream<KeyedRec, string>) => WindowedStream<KeyedRec, string>;
  /** The window operator's uid. */
  readonly uid: string;
  /** The test's work directory; the run writes `out-<name>` and `chk-<name>` in it. */
  readonly dir: string;
  /** Distinguishes this run's directories from the other runs' of the test. */
  readonly name: string;
  readonly parallelism: number;
  readonly stateBackend?: 'heap' | 'disk';
}

/**
 * The window restore tests' job, run with one restart allowed: the script replayed, keyed by k,
 * windowed, summed (sumOfV) into "k start end total" lines that an exactly-once file sink commits
 * to `out` (the script's own step injects the failure).
 */
export async function runWindowsWithRestart(r: WindowRestoreRun): Promise<{ result: JobResult; out: string }> {
  const out = join(r.dir, `out-${r.name}`);
  const job = defineJob((env) => {
    env.setParallelism(r.parallelism);
    env.setAutoWatermarkInterval(0);
    const keyed = env.fromSource(replayable(r.script), { name: 'script', watermarks: punctuated<KeyedRec>() }).uid('script')
      // The first barrier after b's record: the windows downstream snapshot after it too.
      .process<KeyedRec>(signalCheckpointAfter((x) => x.k === 'b', r.checkpointed))
      .setParallelism(1)
      .uid('probe')
      .keyBy((x) => x.k);
    r.window(keyed)
      .aggregate(sumOfV, { process: (k, ctx, [total], o) => o.collect(`${k} ${ctx.window.start} ${ctx.window.end} ${total!}`) })
      .uid(r.uid)
      .sinkTo(new ExactlyOnceFileSink(out, { compactBelow: 0 }))
      .setParallelism(1)
      .uid('sink');
  });
  const result = await runJob(job, {
    workers: 1, parallelism: r.parallelism, stdout: () => {}, log: () => {},
    ...(r.stateBackend !== undefined ? { stateBackend: r.stateBackend } : {}),
    checkpoint: { interval: '20ms', dir: join(r.dir, `chk-${r.name}`) },
    restartStrategy: { type: 'fixed-delay', attempts: 1, delay: 0 },
  });
  return { result, out };
}
