/**
 * Faults the in-memory storage injects, for deterministic tests of what the job does when
 * storage misbehaves. A test declares rules; each rule hits operations on matching references,
 * always or with a probability drawn from a seeded generator, a bounded number of times.
 *
 * - fail-write:  a write (a state stream chunk, a metadata or id-record temp file, a history
 *                append) or a stream creation rejects;
 * - short-write: a write keeps only part of its bytes and reports success (a torn write);
 * - hold-write:  a write waits until the test releases it (a slow disk, with no wall clock);
 * - lose-rename: publishing a file (the rename after its temp file) silently does not happen;
 * - fail-delete: a delete rejects;
 * - fail-list:   listing a directory rejects (an object store's listing failing after its own retries).
 */
import { Rng } from '../../core/random.ts';
import { StorageError } from '../storage-error.ts';

export type FaultKind = 'fail-write' | 'short-write' | 'hold-write' | 'lose-rename' | 'fail-delete' | 'fail-list';

/** The operations faults apply to. */
export type FaultedOperation = 'create' | 'write' | 'publish' | 'delete' | 'list';

const KINDS_BY_OPERATION: Readonly<Record<FaultedOperation, readonly FaultKind[]>> = {
  create: ['fail-write'],
  write: ['fail-write', 'short-write', 'hold-write'],
  publish: ['lose-rename'],
  delete: ['fail-delete'],
  list: ['fail-list'],
};

export interface FaultRule {
  readonly kind: FaultKind;
  /** References it applies to (default: every one). */
  readonly match?: RegExp;
  /** Chance per operation, drawn from the seeded generator (default 1: every matching operation). */
  readonly probability?: number;
  /** Hits at most this many times (default: no limit). */
  readonly times?: number;
  /** Applies only while this says so (a test's condition, e.g. "a checkpoint has completed"); asked at each operation. */
  readonly armed?: () => boolean;
}

export interface InjectedFault {
  readonly kind: FaultKind;
  readonly reference: string;
}

/** Bound on writes held at once: a test that never releases them fails loudly, not by running out of memory. */
const MAX_HELD_WRITES = 10_000;
const MAX_LISTENERS = 100;
/** Bound on the record of injected faults (oldest dropped). */
const MAX_LOG = 10_000;

export class StorageFaults {
  private readonly rng: Rng;
  private readonly rules: { rule: FaultRule; left: number }[] = [];
  private readonly held: (() => void)[] = [];
  private readonly holdListeners: ((reference: string) => void)[] = [];
  private readonly injected: InjectedFault[] = [];

  constructor(readonly seed = 0) {
    this.rng = new Rng(seed);
  }

  inject(rule: FaultRule): this {
    const p = rule.probability ?? 1;
    if (!(p > 0 && p <= 1)) throw new RangeError(`fault probability must be in (0, 1], got ${p}`);
    const times = rule.times ?? Number.POSITIVE_INFINITY;
    if (!(times >= 1)) throw new RangeError(`fault times must be >= 1, got ${times}`);
    this.rules.push({ rule, left: times });
    return this;
  }

  /** Removes every rule (held writes stay held until released). */
  clear(): void {
    this.rules.length = 0;
  }

  /** Every fault injected so far, in order. */
  log(): readonly InjectedFault[] {
    return this.injected;
  }

  count(kind: FaultKind): number {
    return this.injected.filter((f) => f.kind === kind).length;
  }

  /** The fault (if any) that hits this operation; consumes randomness only for probabilistic rules. */
  decide(op: FaultedOperation, reference: string): FaultKind | undefined {
    const kinds = KINDS_BY_OPERATION[op];
    for (const r of this.rules) {
      if (r.left <= 0 || !kinds.includes(r.rule.kind)) continue;
      if (r.rule.match !== undefined && !r.rule.match.test(reference)) continue;
      if (r.rule.armed !== undefined && !r.rule.armed()) continue;
      const p = r.rule.probability ?? 1;
      if (p < 1 && !this.rng.bool(p)) continue;
      r.left--;
      this.injected.push({ kind: r.rule.kind, reference });
      if (this.injected.length > MAX_LOG) this.injected.shift();
      return r.rule.kind;
    }
    return undefined;
  }

  /** Writes being held right now. */
  heldWrites(): number {
    return this.held.length;
  }

  /** Lets every held write go on (in the order they were held). */
  releaseHeld(): number {
    const n = this.held.length;
    for (const release of this.held.splice(0)) release();
    return n;
  }

  /** Calls `fn` whenever a write starts being held (a test then moves its clock on). */
  onHold(fn: (reference: string) => void): void {
    if (this.holdListeners.length >= MAX_LISTENERS) throw new RangeError(`more than ${MAX_LISTENERS} hold listeners`);
    this.holdListeners.push(fn);
  }

  /** A promise that a held write waits on until releaseHeld(). */
  hold(reference: string): Promise<void> {
    if (this.held.length >= MAX_HELD_WRITES) return Promise.reject(new StorageError(`more than ${MAX_HELD_WRITES} writes held (at ${reference}): release them`));
    const p = new Promise<void>((resolve) => this.held.push(resolve));
    for (const fn of this.holdListeners) fn(reference);
    return p;
  }
}

/** The error an injected failure raises. */
export function injectedFailure(kind: FaultKind, reference: string): StorageError {
  return new StorageError(`injected fault (${kind}): ${reference}`);
}
