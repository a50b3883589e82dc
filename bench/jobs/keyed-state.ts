/**
 * Checkpoint and savepoint benchmarks: a job whose keyed state holds N keys.
 *   runJob('bench/jobs/keyed-state.ts', {args: [<keys>, 'build' | 'restore' | 'empty', <samples>]})
 *
 * The source emits every key 'w0' .. 'w<N-1>' exactly once (lanes as the generator source:
 * lane k holds k, k+L, ...), then stays idle (it never ends) so that checkpoints and
 * savepoints can be taken of the finished state. The keyed function sets its ValueState to 1
 * for every key. In `restore` mode (the job restored from a snapshot taken after the build,
 * where every lane is exhausted) each source reader first emits check records for a sample of
 * keys (spread over the key space, divided over the restored lanes); the keyed function checks
 * that the restored value of each is 1. In `empty` mode the source emits nothing at all (a job
 * of the same shape without state, for its fixed start-up cost).
 *
 * The job reports to the process that runs it on a BroadcastChannel (it works across worker
 * threads and within the main thread): a thread when it has loaded the job module, a source
 * reader when its lanes are exhausted, the keyed function when open() has returned (its
 * restored state is loaded and decoded), and the results of the checks.
 */
import { BroadcastChannel, threadId } from 'node:worker_threads';
import {
  defineJob, ValueStateDescriptor, type KeyedProcessFunction, type KeyedRuntimeContext, type PollStatus, type Source,
  type SourceOutput, type SourceReader, type SourceReaderContext, type SourceSplit, type ValueState,
} from 'weir';

export const CHANNEL = 'weir-bench-keyed-state';
export const STATE_NAME = 'value';
/** The keyed operator's uid (its state in snapshots). */
export const OPERATOR_UID = 'keyed-state';

export type JobEvent =
  | { readonly kind: 'loaded'; readonly thread: number; readonly at: number }
  | { readonly kind: 'emitted'; readonly subtask: number; readonly at: number }
  | { readonly kind: 'opened'; readonly subtask: number; readonly parallelism: number; readonly at: number }
  | { readonly kind: 'checked'; readonly subtask: number; readonly ok: number; readonly bad: number; readonly badKeys: readonly string[] };

/** Epoch milliseconds with sub-millisecond resolution, comparable across threads. */
export const epochMs = (): number => performance.timeOrigin + performance.now();

let channel: BroadcastChannel | undefined;
function report(e: JobEvent): void {
  if (channel === undefined) {
    channel = new BroadcastChannel(CHANNEL);
    channel.unref();
  }
  channel.postMessage(e);
}

// A worker thread loads the job module when the job is deployed to it, before it builds and
// starts its tasks (and restores their state).
report({ kind: 'loaded', thread: threadId, at: epochMs() });

export interface KeyRecord {
  readonly key: string;
  /** A check record (restore mode): the key's restored value must be 1; nothing is updated. */
  readonly check?: true;
}

export const keyOf = (i: number): string => 'w' + i;

/** Index of the j-th of `samples` sample keys among `keys`. */
export const sampleKey = (j: number, samples: number, keys: number): number => Math.floor((j * keys) / samples);

interface LaneSplit extends SourceSplit {
  readonly lane: number;
  readonly lanes: number;
  /** Next key index of this lane. */
  next: number;
}

/** Emits every key once, then idles; never ends (the benchmark cancels or stops the job). */
class KeySource implements Source<KeyRecord, LaneSplit> {
  readonly name = 'keys';
  readonly bounded = false;
  constructor(readonly keys: number, readonly samples: number, readonly empty: boolean) {}
  planSplits(parallelism: number): LaneSplit[] {
    // Empty mode: every lane starts exhausted (the job's fixed cost, without state).
    return Array.from({ length: parallelism }, (_, k) => ({ id: `lane-${k}`, lane: k, lanes: parallelism, next: this.empty ? this.keys : k }));
  }
  createReader(ctx: SourceReaderContext): SourceReader<KeyRecord, LaneSplit> {
    return new KeyReader(this, ctx);
  }
}

class KeyReader implements SourceReader<KeyRecord, LaneSplit> {
  private readonly splits: LaneSplit[] = [];
  private current = 0;
  private samplesDone = false;
  private reported = false;
  private wake: { cancel(): void } | undefined;

  constructor(private readonly src: KeySource, private readonly ctx: SourceReaderContext) {}

  addSplits(splits: LaneSplit[]): void {
    for (const s of splits) this.splits.push({ ...s });
  }

  poll(out: SourceOutput<KeyRecord>, maxRecords: number): PollStatus {
    const { keys, samples } = this.src;
    const splits = this.splits;
    for (let k = 0; k < splits.length; k++) {
      const s = splits[(this.current + k) % splits.length]!;
      if (s.next >= keys) continue;
      let i = s.next;
      let n = 0;
      while (n < maxRecords && i < keys) {
        out.collect({ key: keyOf(i) });
        i += s.lanes;
        n++;
      }
      s.next = i;
      this.current = (this.current + k + 1) % splits.length;
      return 'more';
    }
    if (!this.samplesDone) {
      // Check records, once per start of the reader: the sample keys of its lanes.
      this.samplesDone = true;
      for (const s of splits) {
        for (let j = s.lane; j < samples; j += s.lanes) out.collect({ key: keyOf(sampleKey(j, samples, keys)), check: true });
      }
      if (samples > 0 && splits.length > 0) return 'more';
    }
    if (!this.reported) {
      this.reported = true;
      report({ kind: 'emitted', subtask: this.ctx.subtaskIndex, at: epochMs() });
    }
    // Idle: look again now and then (mail such as checkpoint triggers wakes the task anyway).
    this.wake ??= this.ctx.schedule(this.ctx.now() + 200, () => {
      this.wake = undefined;
      this.ctx.wake();
    });
    return 'wait';
  }

  snapshotSplits(): LaneSplit[] {
    return this.splits.map((s) => ({ ...s }));
  }

  close(): void {
    this.wake?.cancel();
  }
}

/** Sets every key's value to 1; checks restored values on check records. */
class KeyedState implements KeyedProcessFunction<string, KeyRecord, never> {
  private value!: ValueState<number>;
  private subtask = 0;
  private ok = 0;
  private bad = 0;
  private badKeys: string[] = [];
  open(ctx: KeyedRuntimeContext): void {
    // Own fields per subtask (subtasks sharing a thread get shallow copies of this object).
    this.badKeys = [];
    this.subtask = ctx.taskInfo.subtaskIndex;
    this.value = ctx.getState(new ValueStateDescriptor<number>(STATE_NAME));
    report({ kind: 'opened', subtask: this.subtask, parallelism: ctx.taskInfo.parallelism, at: epochMs() });
  }
  processElement(r: KeyRecord): void {
    if (r.check !== true) {
      this.value.update(1);
      return;
    }
    if (this.value.value() === 1) this.ok++;
    else {
      this.bad++;
      if (this.badKeys.length < 5) this.badKeys.push(r.key);
    }
    // The running tally; the receiver keeps the latest per subtask (a few thousand messages at most).
    report({ kind: 'checked', subtask: this.subtask, ok: this.ok, bad: this.bad, badKeys: this.badKeys });
  }
}

export type KeyedStateMode = 'build' | 'restore' | 'empty';

/** Reads `<keys> <build|restore|empty> [samples]`. */
export function keyedStateArgs(args: readonly string[]): { keys: number; mode: KeyedStateMode; samples: number } {
  const keys = Number(args[0] ?? 1_000_000);
  const mode = args[1] ?? 'build';
  const samples = Number(args[2] ?? (mode === 'restore' ? 1000 : 0));
  if (!Number.isSafeInteger(keys) || keys < 1) throw new RangeError(`keyed-state: key count must be a positive integer, got ${args[0]}`);
  if (mode !== 'build' && mode !== 'restore' && mode !== 'empty') throw new RangeError(`keyed-state: mode must be build, restore or empty, got ${mode}`);
  if (!Number.isSafeInteger(samples) || samples < 0 || samples > keys) throw new RangeError(`keyed-state: samples must be 0..keys, got ${args[2]}`);
  return { keys, mode, samples: mode === 'restore' ? samples : 0 };
}

export default defineJob((env, args) => {
  const { keys, mode, samples } = keyedStateArgs(args);
  env.setJobName('bench keyed-state');
  env
    .fromSource(new KeySource(keys, samples, mode === 'empty'))
    .name('keys')
    .keyBy((r: KeyRecord) => r.key)
    .process(new KeyedState())
    .uid(OPERATOR_UID)
    .name('keyed state')
    .addSink({ invoke() {} })
    .name('discard');
});
