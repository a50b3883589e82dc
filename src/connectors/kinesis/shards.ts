/**
 * Shard discovery as pure decisions (no I/O): which shards of a ListShards answer become
 * splits now, where each starts, and which reader gets it. The enumerator's whole view is
 * derived from the readers' splits (restored or planned) plus what happened in this attempt,
 * so after a restore it agrees with the checkpoint by construction:
 *
 * - A shard is *known* if a reader holds its split (live, or finished as a tombstone) or it
 *   was assigned in this attempt. Known shards are never assigned again (FLINK-8484: closed
 *   shards re-read from the start on restore, duplicating).
 * - A shard is *finished* if a reader read it to its end: a tombstone in the restored splits,
 *   or a reader's report in this attempt.
 * - Lineage comes from ParentShardId / AdjacentParentShardId (kinesalite returns no
 *   ChildShards). A new shard is assigned only when each parent is finished, or gone from
 *   the stream (past retention) without ever being known. A new shard with a known
 *   descendant was read long ago (its tombstone is gone) and is skipped.
 * - A split assigned after a checkpoint's trigger is not in that checkpoint; after a restore
 *   from it the shard is unknown again and is assigned again from its start position, which
 *   is right, since nothing of it was emitted before that checkpoint.
 */

export interface ShardInfo {
  readonly shardId: string;
  /** ParentShardId and AdjacentParentShardId, when present. */
  readonly parents: readonly string[];
  /** Has an EndingSequenceNumber: closed by a split or merge, receives no more records. */
  readonly closed: boolean;
  /**
   * SequenceNumberRange.StartingSequenceNumber: the shard's identity beyond its id. A stream
   * deleted and created again under the same name numbers its shards from shardId-000000000000
   * again, and only this (which grows with time) tells such a shard from the old one.
   */
  readonly startSeq?: string | undefined;
}

/** Where a shard is read from when none of its records has been emitted. */
export type ShardStart = { readonly type: 'TRIM_HORIZON' } | { readonly type: 'AT_TIMESTAMP'; readonly timestamp: number };

export interface EnumeratorView {
  readonly known: ReadonlySet<string>;
  readonly finished: ReadonlySet<string>;
}

export interface DiscoveryDecision {
  /** New shards to assign now, parents before children. */
  readonly assign: readonly ShardInfo[];
  /** New shards held back until their parents are finished. */
  readonly waiting: readonly string[];
  /** New shards skipped: a descendant is known, so they were read before. */
  readonly skipped: readonly string[];
}

export function decideDiscovery(listed: readonly ShardInfo[], view: EnumeratorView): DiscoveryDecision {
  const byId = new Map(listed.map((s) => [s.shardId, s]));
  const children = new Map<string, string[]>();
  for (const s of listed) for (const p of s.parents) {
    const l = children.get(p) ?? [];
    l.push(s.shardId);
    children.set(p, l);
  }
  const hasKnownDescendant = (id: string, seen = new Set<string>()): boolean => {
    for (const c of children.get(id) ?? []) {
      if (seen.has(c)) continue;
      seen.add(c);
      if (view.known.has(c) || hasKnownDescendant(c, seen)) return true;
    }
    return false;
  };
  const skipped = new Set<string>();
  for (const s of listed) if (!view.known.has(s.shardId) && hasKnownDescendant(s.shardId)) skipped.add(s.shardId);
  const parentDone = (p: string): boolean => view.finished.has(p) || skipped.has(p) || (!byId.has(p) && !view.known.has(p));
  const assign: ShardInfo[] = [];
  const waiting: string[] = [];
  for (const s of listed) {
    if (view.known.has(s.shardId) || skipped.has(s.shardId)) continue;
    if (s.parents.every(parentDone)) assign.push(s);
    else waiting.push(s.shardId);
  }
  return { assign, waiting, skipped: [...skipped] };
}

/**
 * At the job's first start with LATEST: shards already closed hold nothing newer than now,
 * so they are finished from the start (tombstones), which lets their open children be read at once.
 */
export function closedAtStartAreFinished(initial: 'LATEST' | 'TRIM_HORIZON' | 'AT_TIMESTAMP'): boolean {
  return initial === 'LATEST';
}

/** The reader with the fewest live splits (ties: the lowest index). */
export function leastLoaded(load: readonly number[]): number {
  let best = 0;
  for (let i = 1; i < load.length; i++) if (load[i]! < load[best]!) best = i;
  return best;
}

/** Kinesis sequence numbers are decimal strings of up to 128 bits: compared as numbers. */
export function compareSequence(a: string, b: string): number {
  if (a.length !== b.length) return a.length < b.length ? -1 : 1;
  return a < b ? -1 : a > b ? 1 : 0;
}

export function isSequenceNumber(s: unknown): s is string {
  return typeof s === 'string' && /^[0-9]{1,128}$/.test(s);
}

/**
 * The first problem of a GetRecords reply's records, or undefined. A record without a valid
 * sequence number would leave its shard's position unknown (a restore would start the shard
 * over, or fail on the checkpointed value), so such a reply fails the reader instead.
 */
export function recordsProblem(records: readonly { readonly SequenceNumber?: unknown; readonly Data?: unknown }[]): string | undefined {
  for (let i = 0; i < records.length; i++) {
    const r = records[i]!;
    if (!isSequenceNumber(r.SequenceNumber)) return `record ${i} of the reply has no valid SequenceNumber (${JSON.stringify(r.SequenceNumber) ?? 'none'})`;
    if (r.Data !== undefined && !(r.Data instanceof Uint8Array)) return `record ${i} of the reply (sequence ${r.SequenceNumber}) has Data that is not bytes`;
  }
  return undefined;
}

/**
 * The pause before shard `shard`'s next GetRecords: at least minIntervalMs after the previous
 * call started (AWS: 5 calls per second per shard, so 200 ms), and the empty-fetch interval
 * after a call that returned nothing (Flink's 250 ms), so idle shards are not polled in a storm.
 */
export function nextFetchAt(lastCallAt: number, lastWasEmpty: boolean, minIntervalMs: number, emptyIntervalMs: number): number {
  return lastCallAt + Math.max(minIntervalMs, lastWasEmpty ? emptyIntervalMs : 0);
}

/**
 * What the enumerator knows, from the readers' reports after completed checkpoints, when it
 * decides which tombstones (finished shards kept in the readers' state) can go.
 */
export interface PruneFacts {
  /** The last complete ListShards answer; undefined before the first (then nothing is pruned). */
  readonly listed: readonly ShardInfo[] | undefined;
  /**
   * Tombstones in a completed checkpoint: the checkpoint that finished the shard completed
   * (FLINK-37627: until it has, a restore needs the tombstone). The candidates.
   */
  readonly durableTombstones: Iterable<string>;
  /** Shards whose split (live or finished) was in a completed checkpoint. */
  readonly durable: ReadonlySet<string>;
}

export interface PruneDecision {
  readonly shardId: string;
  /** 'children': every child is in a completed checkpoint (or has a descendant there); 'gone': ListShards no longer lists it (past retention). */
  readonly reason: 'children' | 'gone';
}

/**
 * Which tombstones can be dropped from the checkpoint without a restore ever reading the shard
 * again or losing a child. A tombstone exists so that, after a restore, the enumerator (a) does
 * not assign the finished shard again and (b) lets its children be assigned. Once a checkpoint
 * holds each child (or, for a child itself pruned since, a descendant of it), every later
 * checkpoint does too, and decideDiscovery then skips the shard (a known descendant: read
 * before) and treats it as done for its children; a shard no longer listed is never assigned,
 * and is done for any child still listed. So a durable tombstone goes when either holds:
 * - it is gone from ListShards (past the stream's retention), or
 * - it has at least one child in the listing, and every child is covered: in a completed
 *   checkpoint, or with a descendant that is (children are listed only after their parent
 *   closed, so a closed shard with no listed child keeps its tombstone until the next listing).
 */
export function decidePruning(f: PruneFacts): PruneDecision[] {
  if (f.listed === undefined) return [];
  const listedIds = new Set(f.listed.map((s) => s.shardId));
  const children = new Map<string, string[]>();
  for (const s of f.listed) for (const p of s.parents) {
    const l = children.get(p) ?? [];
    l.push(s.shardId);
    children.set(p, l);
  }
  const covered = (id: string, seen: Set<string>): boolean => {
    if (f.durable.has(id)) return true;
    if (seen.has(id)) return false;
    seen.add(id);
    return (children.get(id) ?? []).some((c) => covered(c, seen));
  };
  const out: PruneDecision[] = [];
  for (const t of f.durableTombstones) {
    if (!listedIds.has(t)) {
      out.push({ shardId: t, reason: 'gone' });
      continue;
    }
    const cs = children.get(t) ?? [];
    if (cs.length > 0 && cs.every((c) => covered(c, new Set()))) out.push({ shardId: t, reason: 'children' });
  }
  return out;
}

/** What a restored split says of the shard it was taken from. */
export interface RestoredShard {
  readonly stream: string;
  readonly shardId: string;
  /** The shard's StartingSequenceNumber when the split was made (absent in checkpoints written before it was recorded). */
  readonly startSeq?: string | undefined;
  /** The last record emitted. */
  readonly lastSeq?: string | undefined;
  readonly finished?: boolean | undefined;
}

/**
 * Restored splits that are not of the stream the source reads now, as the first listing after a
 * restore shows it: a split of another stream name, or of a shard whose StartingSequenceNumber
 * differs from the one recorded (the stream was deleted and created again under the same name:
 * its shard ids start over, so a tombstone would hide the new shard of that id and a position
 * would be refused by GetShardIterator on every restart). A shard no longer listed is not a
 * mismatch: it is past the stream's retention (the reader finds it gone and finishes it).
 * Splits from checkpoints written before startSeq was recorded get a weaker check: a position
 * below the listed shard's first sequence number cannot be in that shard; a tombstone or a split
 * with no position cannot be told apart from the new shard, and passes.
 */
export function restoredShardMismatches(stream: string, restored: Iterable<RestoredShard>, listed: readonly ShardInfo[]): string[] {
  const byId = new Map(listed.map((s) => [s.shardId, s]));
  const out: string[] = [];
  for (const r of restored) {
    if (r.stream !== stream) {
      out.push(`shard ${r.shardId} is of stream "${r.stream}"`);
      continue;
    }
    const now = byId.get(r.shardId);
    if (now === undefined || now.startSeq === undefined) continue;
    if (r.startSeq !== undefined) {
      if (r.startSeq !== now.startSeq) out.push(`shard ${r.shardId} began at sequence ${r.startSeq}, the listed one at ${now.startSeq}`);
    } else if (r.lastSeq !== undefined && compareSequence(r.lastSeq, now.startSeq) < 0) {
      out.push(`shard ${r.shardId}'s position ${r.lastSeq} is before the listed shard's first sequence number ${now.startSeq}`);
    }
  }
  return out;
}

/** What a shard's reader does after a failed GetShardIterator or GetRecords. */
export type FetchFailureAction =
  /** Get a new iterator at once, from the last record fetched. */
  | 'renew-iterator'
  /** Back off and try again (until the retry deadline). */
  | 'retry'
  /** The shard (or the stream) is gone: ask whether the stream exists; if it does, the shard is past retention. */
  | 'check-stream'
  /** The restored position is not in this shard: the checkpoint is not of this stream. */
  | 'restored-position-refused'
  | 'fail';

export interface FetchFailure {
  /** The AWS error name (errorName), if any. */
  readonly name: string | undefined;
  /** isTransientKinesis of the error. */
  readonly transient: boolean;
  readonly call: 'GetShardIterator' | 'GetRecords';
  /** The iterator was renewed after an expiry and no GetRecords has succeeded since. */
  readonly renewedAfterExpiry: boolean;
  /** The iterator was asked for at a position restored from the checkpoint (nothing fetched since). */
  readonly atRestoredPosition: boolean;
}

/**
 * An expired iterator is renewed once at once (the normal case: the reader was paused or
 * backpressured past the iterator's 5 minutes); expired again before any GetRecords succeeded,
 * it is a failure like throttling, retried with backoff until the deadline (before: renewed in
 * a tight loop for ever). ResourceNotFound names a missing shard or stream: Flink finishes the
 * split, here only once the stream is known to exist. InvalidArgument for a restored position
 * would be met again by every restart.
 */
export function onFetchFailure(f: FetchFailure): FetchFailureAction {
  if (f.name === 'ExpiredIteratorException') return f.renewedAfterExpiry ? 'retry' : 'renew-iterator';
  if (f.name === 'ResourceNotFoundException') return 'check-stream';
  if (f.name === 'InvalidArgumentException' && f.call === 'GetShardIterator' && f.atRestoredPosition) return 'restored-position-refused';
  return f.transient ? 'retry' : 'fail';
}

/** The end of a message of a call given up after retries: how many tries, how long, and the setting that bounds it. */
export function gaveUpAfter(tries: number, elapsedMs: number, setting: string, deadlineMs: number): string {
  return `(gave up after ${tries} tries in ${Math.round(elapsedMs / 100) / 10} s; ${setting} is ${deadlineMs} ms)`;
}
