/**
 * Deterministic stepping for task-level tests (not a test file itself):
 * - ManualScheduler runs subtasks and snapshot jobs only when the test says so, one step at a
 *   time or until nothing is runnable, instead of on setImmediate slices;
 * - TrackedIo is a CheckpointStorageWorkerView (the task side of checkpoint storage, the only
 *   source of state streams) over storage's own local streams, which counts the stream
 *   operations in flight (creating, writing, closing, aborting, opening, discarding), so a test
 *   can wait for exactly "all I/O done and nothing runnable" instead of sleeping; and injects
 *   faults at the stream level: a write held until the test releases it, failed, or cut short
 *   (the stream reports success and keeps half: a torn write).
 * With a ManualClock for processing time, nothing in such a test happens on its own: absence
 * ("no ack yet") is a fact at the step where it is checked, not a guess after a sleep.
 */
import { childReference, isPlainName } from '../../src/checkpoint/names.ts';
import { storageResolver } from '../../src/checkpoint/storage-resolver.ts';
import type { CheckpointStorageWorkerView } from '../../src/checkpoint/storage.ts';
import { StorageError } from '../../src/checkpoint/storage-error.ts';
import type { CheckpointStreamFactory, StateInputHandle, StateOutputStream } from '../../src/core/state-streams.ts';
import { Scheduler, type Schedulable } from '../../src/runtime/scheduler.ts';

export class ManualScheduler extends Scheduler {
  private readonly runnable: Schedulable[] = [];
  private readonly hooks: (() => void)[] = [];
  /** Steps run so far. */
  steps = 0;

  override wake(t: Schedulable): void {
    if (t.queued) return;
    t.queued = true;
    this.runnable.push(t);
  }

  override onEndOfSlice(fn: () => void): void {
    this.hooks.push(fn);
  }

  /** Nothing is runnable: only new input, I/O completing or a timer can change that. */
  get idle(): boolean {
    return this.runnable.length === 0;
  }

  /** Runs one step of the longest-waiting runnable task; false if none was runnable. */
  runOne(): boolean {
    const t = this.runnable.shift();
    if (t === undefined) return false;
    t.queued = false;
    this.steps++;
    if (t.step()) this.wake(t);
    for (const h of this.hooks) h();
    return true;
  }

  /** Runs steps until nothing is runnable; returns how many ran. */
  runUntilIdle(maxSteps = 1_000_000): number {
    let n = 0;
    while (this.runOne()) {
      if (++n > maxSteps) throw new Error(`still runnable after ${maxSteps} steps`);
    }
    return n;
  }
}

const nextTurn = (): Promise<void> => new Promise((res) => setImmediate(res));

/** What happens to one stream write: held until released, failed, or cut short (half kept, success reported). */
export type StreamFault = 'hold' | 'fail' | 'short';

/** Picks the fault (if any) of a write: the stream's reference, and the write's number on that stream (0: the first, a state file's header). */
export type StreamFaultRule = (reference: string, write: number) => StreamFault | undefined;

/**
 * The task side of checkpoint storage (by default the one tasks get in a worker thread: local
 * paths through storage's own local streams; a location no storage serves is refused), with
 * every operation tracked and faults injectable per write.
 */
export class TrackedIo implements CheckpointStorageWorkerView {
  private readonly inFlight = new Set<Promise<unknown>>();
  private readonly held: (() => void)[] = [];
  /** State streams asked for, by reference (a path for local storage), in order. */
  readonly opened: string[] = [];
  /** Writes held so far (released or not). */
  holds = 0;
  /** Writes failed so far. */
  failures = 0;
  /** Decides the fault of each write from now on; undefined: none. */
  fault: StreamFaultRule | undefined;

  constructor(private readonly storage: CheckpointStorageWorkerView = storageResolver().workerView) {}

  /** Operations in flight: held writes are not (nothing is happening to them until released). */
  get pending(): number {
    return this.inFlight.size;
  }

  /** Writes waiting for releaseHeld() right now. */
  heldWrites(): number {
    return this.held.length;
  }

  /** Lets the held writes go on, in the order they were held; returns how many. */
  releaseHeld(): number {
    const n = this.held.length;
    for (const release of this.held.splice(0)) release();
    return n;
  }

  private track<T>(p: Promise<T>): Promise<T> {
    this.inFlight.add(p);
    const done = () => void this.inFlight.delete(p);
    p.then(done, done);
    return p;
  }

  resolveLocation(location: string): CheckpointStreamFactory {
    // Resolved at once, as storage does: a location no storage serves fails here.
    const streams = this.storage.resolveLocation(location);
    return {
      createStateStream: async (name: string): Promise<StateOutputStream> => {
        const created = this.track(streams.createStateStream(name)); // storage checks the name
        const reference = isPlainName(name) ? childReference(location, name) : name;
        this.opened.push(reference);
        return this.trackedStream(reference, await created);
      },
    };
  }

  openState(reference: string): Promise<StateInputHandle> {
    return this.track(this.storage.openState(reference));
  }

  discardState(location: string, name: string): Promise<void> {
    return this.track(this.storage.discardState(location, name));
  }

  private trackedStream(reference: string, out: StateOutputStream): StateOutputStream {
    let writes = 0;
    return {
      write: async (chunks) => {
        const fault = this.fault?.(reference, writes++);
        if (fault === 'hold') {
          this.holds++;
          await new Promise<void>((resolve) => this.held.push(resolve));
        }
        if (fault === 'fail') {
          this.failures++;
          throw new StorageError(`injected stream fault (fail): ${reference}`);
        }
        if (fault === 'short') {
          const all = Buffer.concat(chunks.map((c) => Buffer.from(c.buffer, c.byteOffset, c.byteLength)));
          return this.track(out.write([all.subarray(0, Math.floor(all.length / 2))]));
        }
        return this.track(out.write(chunks));
      },
      close: () => this.track(out.close()),
      abort: () => this.track(out.abort()),
    };
  }

  /** Waits (without stepping the scheduler) until `cond` holds, e.g. a snapshot job became runnable once its stream was open. */
  async waitFor(cond: () => boolean): Promise<void> {
    for (let rounds = 0; rounds < 100_000; rounds++) {
      if (cond()) return;
      await nextTurn();
      if (!cond() && this.pending === 0) {
        await nextTurn();
        if (!cond() && this.pending === 0) throw new Error('no I/O in flight and the awaited condition does not hold');
      }
      if (this.pending > 0) await Promise.allSettled([...this.inFlight]);
    }
    throw new Error('condition never held');
  }

  /**
   * Steps the scheduler and waits for tracked I/O until nothing is runnable and no I/O is in
   * flight (or until `until` holds, checked whenever the scheduler is idle). Continuations of
   * finished I/O run in microtasks, which a turn of the event loop drains.
   */
  async quiesce(scheduler: ManualScheduler, until?: () => boolean): Promise<void> {
    for (let rounds = 0; rounds < 100_000; rounds++) {
      scheduler.runUntilIdle();
      if (until?.()) return;
      await nextTurn();
      if (scheduler.idle && this.pending === 0) {
        if (until === undefined || until()) return;
        throw new Error('quiet (nothing runnable, no I/O in flight) but the awaited condition does not hold');
      }
      if (this.pending > 0) await Promise.allSettled([...this.inFlight]);
    }
    throw new Error('did not quiesce');
  }
}
