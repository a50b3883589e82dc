/**
 * The Kinesis connectors' pure decisions: shard discovery (parent before child, known shards
 * never assigned again, restore consistency), fetch pacing, PutRecords batching within the
 * limits, partial-failure answers and barriers. Randomised cases print their seed.
 */
import { describe, expect, it } from 'vitest';
import { compareSequence, decideDiscovery, decidePruning, gaveUpAfter, leastLoaded, nextFetchAt, onFetchFailure, recordsProblem, restoredShardMismatches, type FetchFailure, type ShardInfo } from '../../../src/connectors/kinesis/shards.ts';
import { Barriers, batchSize, PUT_RECORDS_MAX_BYTES, PUT_RECORDS_MAX_RECORDS, shouldSend, splitAnswer, type SinkEntry } from '../../../src/connectors/kinesis/batching.ts';
import { isTransientKinesis } from '../../../src/connectors/kinesis/client.ts';
import { Rng } from '../../../src/core/random.ts';
import { WeirError } from '../../../src/core/errors.ts';

const sh = (shardId: string, parents: string[] = [], closed = false): ShardInfo => ({ shardId, parents, closed });

/** A random history of `steps` splits and merges from three shards (a0..a2; children a3, a4, ...). */
function reshardHistory(rng: Rng, steps: number): ShardInfo[] {
  const shards: ShardInfo[] = [sh('a0'), sh('a1'), sh('a2')];
  let next = 3;
  for (let k = 0; k < steps; k++) {
    const o = shards.filter((s) => !s.closed);
    const i = shards.indexOf(o[rng.int(o.length)]!);
    if (rng.next() < 0.5 || o.length < 2) {
      shards[i] = { ...shards[i]!, closed: true };
      shards.push(sh(`a${next++}`, [shards[i]!.shardId]), sh(`a${next++}`, [shards[i]!.shardId]));
    } else {
      const j = shards.indexOf(o.find((s) => s !== shards[i])!);
      shards[i] = { ...shards[i]!, closed: true };
      shards[j] = { ...shards[j]!, closed: true };
      shards.push(sh(`a${next++}`, [shards[i]!.shardId, shards[j]!.shardId]));
    }
  }
  return shards;
}
const view = (known: string[], finished: string[] = []) => ({ known: new Set(known), finished: new Set(finished) });

describe('shard discovery', () => {
  // s0 split into s2, s3; s3 merged with s1 into s4.
  const lineage = [sh('s0', [], true), sh('s1', [], true), sh('s2', ['s0']), sh('s3', ['s0'], true), sh('s4', ['s3', 's1'])];

  it('at a fresh start assigns only shards whose parents are gone or finished', () => {
    const d = decideDiscovery(lineage, view([]));
    expect(d.assign.map((s) => s.shardId)).toEqual(['s0', 's1']);
    expect(d.waiting).toEqual(['s2', 's3', 's4']);
  });

  it('a child is assigned once its parent is finished; a merge child once both parents are', () => {
    expect(decideDiscovery(lineage, view(['s0', 's1'], ['s0'])).assign.map((s) => s.shardId)).toEqual(['s2', 's3']);
    expect(decideDiscovery(lineage, view(['s0', 's1', 's2', 's3'], ['s0', 's3'])).assign.map((s) => s.shardId)).toEqual([]);
    expect(decideDiscovery(lineage, view(['s0', 's1', 's2', 's3'], ['s0', 's3', 's1'])).assign.map((s) => s.shardId)).toEqual(['s4']);
  });

  it('never assigns a known shard again, finished or not', () => {
    const d = decideDiscovery(lineage, view(['s0', 's1', 's2', 's3', 's4'], ['s0', 's1', 's3']));
    expect(d.assign).toEqual([]);
    expect(d.waiting).toEqual([]);
  });

  it('skips a shard whose descendant is known (its tombstone is gone) and treats parents past retention as finished', () => {
    const d = decideDiscovery(lineage, view(['s2', 's4'], []));
    expect([...d.skipped].sort()).toEqual(['s0', 's1', 's3']);
    expect(d.assign).toEqual([]);
    const gone = decideDiscovery([sh('s9', ['s7', 's8'])], view([]));
    expect(gone.assign.map((s) => s.shardId)).toEqual(['s9']);
  });

  it('randomised split and merge histories: every shard is assigned once, never before its parents (seeded)', () => {
    const seed = Date.now() % 100_000;
    console.log(`shard discovery seed ${seed}`);
    const rng = new Rng(seed);
    for (let round = 0; round < 200; round++) {
      // A random history of splits and merges.
      const shards = reshardHistory(rng, 6);
      // Readers finish shards in a random order; the enumerator assigns what the decision says.
      const known = new Set<string>();
      const finished = new Set<string>();
      const live: string[] = [];
      for (let step = 0; step < 100; step++) {
        for (const s of decideDiscovery(shards, { known, finished }).assign) {
          for (const p of s.parents) expect(finished.has(p), `${s.shardId} before parent ${p} (seed ${seed})`).toBe(true);
          expect(known.has(s.shardId)).toBe(false);
          known.add(s.shardId);
          live.push(s.shardId);
        }
        const closedLive = live.filter((id) => shards.find((s) => s.shardId === id)!.closed);
        if (closedLive.length === 0) break;
        const done = closedLive[rng.int(closedLive.length)]!;
        finished.add(done);
        live.splice(live.indexOf(done), 1);
      }
      expect(known.size, `every shard read (seed ${seed})`).toBe(shards.length);
    }
  });

  it('picks the least loaded reader; compares sequence numbers as numbers; paces GetRecords at 5 per second per shard', () => {
    expect(leastLoaded([3, 1, 1, 2])).toBe(1);
    expect(compareSequence('9', '10')).toBe(-1);
    expect(compareSequence('49680750017836916931004490413212582398665948386746695682', '49680750017836916931004490413212582398665948386746695681')).toBe(1);
    expect(nextFetchAt(1000, false, 200, 250)).toBe(1200);
    expect(nextFetchAt(1000, true, 200, 250)).toBe(1250);
  });

  it('classifies throttling, 5xx and timeouts as transient, a missing stream as not', () => {
    expect(isTransientKinesis({ name: 'ProvisionedThroughputExceededException' })).toBe(true);
    expect(isTransientKinesis({ name: 'LimitExceededException' })).toBe(true);
    expect(isTransientKinesis({ name: 'X', $metadata: { httpStatusCode: 503 } })).toBe(true);
    expect(isTransientKinesis(new WeirError('TIMEOUT', 't'))).toBe(true);
    expect(isTransientKinesis(Object.assign(new Error('refused'), { code: 'ECONNREFUSED' }))).toBe(true);
    expect(isTransientKinesis({ name: 'ResourceNotFoundException', $metadata: { httpStatusCode: 400 } })).toBe(false);
    expect(isTransientKinesis({ name: 'UnrecognizedClientException', $metadata: { httpStatusCode: 400 } })).toBe(false);
    // Bad credentials (AWS's answers; kinesalite never checks signatures, so no server test can show them).
    expect(isTransientKinesis({ name: 'InvalidSignatureException', $metadata: { httpStatusCode: 400 } })).toBe(false);
    expect(isTransientKinesis({ name: 'AccessDeniedException', $metadata: { httpStatusCode: 403 } })).toBe(false);
    expect(isTransientKinesis({ name: 'ExpiredTokenException', $metadata: { httpStatusCode: 400 } })).toBe(false);
  });
});

describe('restored splits against the stream as listed now', () => {
  const OLD = '49590338271490256608559692538361571095921575989136588898';
  const NEW = '49590338271490256608559692540925702759324208523137515618';
  const listed: ShardInfo[] = [{ ...sh('shardId-000000000000'), startSeq: NEW }, { ...sh('shardId-000000000001'), startSeq: NEW }];

  it('a shard of that id that began elsewhere (the stream deleted and created again) is a mismatch, tombstone or position', () => {
    expect(restoredShardMismatches('s', [{ stream: 's', shardId: 'shardId-000000000000', startSeq: OLD, finished: true }], listed))
      .toEqual([`shard shardId-000000000000 began at sequence ${OLD}, the listed one at ${NEW}`]);
    expect(restoredShardMismatches('s', [{ stream: 's', shardId: 'shardId-000000000001', startSeq: OLD, lastSeq: OLD }], listed)).toHaveLength(1);
    expect(restoredShardMismatches('s', [{ stream: 's', shardId: 'shardId-000000000000', startSeq: NEW, lastSeq: NEW }], listed)).toEqual([]);
  });

  it('a split of another stream is a mismatch; a shard no longer listed (past retention) is not', () => {
    expect(restoredShardMismatches('s', [{ stream: 'other', shardId: 'shardId-000000000000', startSeq: NEW }], listed)).toEqual(['shard shardId-000000000000 is of stream "other"']);
    expect(restoredShardMismatches('s', [{ stream: 's', shardId: 'shardId-000000000007', startSeq: OLD, lastSeq: OLD }], listed)).toEqual([]);
  });

  it('splits of checkpoints written before startSeq was recorded still restore; only a position before the shard began is refused', () => {
    expect(restoredShardMismatches('s', [{ stream: 's', shardId: 'shardId-000000000000', finished: true }, { stream: 's', shardId: 'shardId-000000000001' }], listed)).toEqual([]);
    expect(restoredShardMismatches('s', [{ stream: 's', shardId: 'shardId-000000000000', lastSeq: NEW + '' }], listed)).toEqual([]);
    expect(restoredShardMismatches('s', [{ stream: 's', shardId: 'shardId-000000000000', lastSeq: OLD }], listed)).toHaveLength(1);
    // A listing without StartingSequenceNumber decides nothing.
    expect(restoredShardMismatches('s', [{ stream: 's', shardId: 'shardId-000000000000', startSeq: OLD }], [sh('shardId-000000000000')])).toEqual([]);
  });
});

describe('a failed GetShardIterator or GetRecords', () => {
  const f = (o: Partial<FetchFailure>): FetchFailure => ({ name: undefined, transient: false, call: 'GetRecords', renewedAfterExpiry: false, atRestoredPosition: false, ...o });

  it('an expired iterator is renewed at once the first time, retried with backoff when it expires again before a GetRecords succeeded', () => {
    expect(onFetchFailure(f({ name: 'ExpiredIteratorException' }))).toBe('renew-iterator');
    expect(onFetchFailure(f({ name: 'ExpiredIteratorException', renewedAfterExpiry: true }))).toBe('retry');
  });

  it('ResourceNotFound asks whether the stream exists; InvalidArgument for a restored position is the checkpoint\'s, otherwise a failure', () => {
    expect(onFetchFailure(f({ name: 'ResourceNotFoundException', call: 'GetShardIterator' }))).toBe('check-stream');
    expect(onFetchFailure(f({ name: 'ResourceNotFoundException' }))).toBe('check-stream');
    expect(onFetchFailure(f({ name: 'InvalidArgumentException', call: 'GetShardIterator', atRestoredPosition: true }))).toBe('restored-position-refused');
    expect(onFetchFailure(f({ name: 'InvalidArgumentException', call: 'GetShardIterator' }))).toBe('fail');
    expect(onFetchFailure(f({ name: 'ProvisionedThroughputExceededException', transient: true }))).toBe('retry');
    expect(onFetchFailure(f({ name: 'AccessDeniedException' }))).toBe('fail');
  });

  it('a call given up after retries says how many tries, how long, and the setting', () => {
    expect(gaveUpAfter(5, 1949, 'retryDeadlineMs', 3000)).toBe('(gave up after 5 tries in 1.9 s; retryDeadlineMs is 3000 ms)');
  });
});

const entry = (seq: number, size: number): SinkEntry => ({ data: new Uint8Array(0), partitionKey: 'k', explicitHashKey: undefined, size, seq, queuedAt: 0, failures: 0 });

describe('PutRecords batching', () => {
  it('batches stay within 500 records and 5 MiB, and always take at least one (seeded)', () => {
    const seed = Date.now() % 100_000;
    console.log(`batching seed ${seed}`);
    const rng = new Rng(seed);
    for (let round = 0; round < 100; round++) {
      const q = Array.from({ length: rng.int(2000) + 1 }, (_, i) => entry(i, rng.next() < 0.1 ? 1024 * 1024 : rng.int(20_000) + 1));
      let taken = 0;
      while (taken < q.length) {
        const n = batchSize(q.slice(taken), PUT_RECORDS_MAX_RECORDS, PUT_RECORDS_MAX_BYTES);
        expect(n).toBeGreaterThan(0);
        expect(n).toBeLessThanOrEqual(500);
        const bytes = q.slice(taken, taken + n).reduce((a, e) => a + e.size, 0);
        expect(bytes, `seed ${seed}`).toBeLessThanOrEqual(PUT_RECORDS_MAX_BYTES);
        taken += n;
      }
    }
  });

  it('sends full batches at once (by records or by bytes), partial ones when urgent (a flush, no room) or after maxTimeInBuffer', () => {
    const limits = { maxRecords: 500, maxBytes: PUT_RECORDS_MAX_BYTES };
    const q = (records: number, bytes = records * 100) => ({ records, bytes });
    expect(shouldSend(q(500), limits, false, 0, 1, 5000)).toBe(true);
    expect(shouldSend(q(10), limits, false, 0, 1, 5000)).toBe(false);
    expect(shouldSend(q(10), limits, true, 0, 1, 5000)).toBe(true);
    expect(shouldSend(q(10), limits, false, 0, 5000, 5000)).toBe(true);
    expect(shouldSend(q(0), limits, true, undefined, 1, 5000)).toBe(false);
    // 25 records of 200 KiB fill a request: sent at once (before: one request every maxTimeInBuffer).
    expect(shouldSend(q(26, 26 * 200 * 1024), limits, false, 0, 1, 5000)).toBe(true);
  });

  it('re-queues only the entries of an answer with an ErrorCode; a malformed answer retries all', () => {
    const batch = [entry(0, 1), entry(1, 1), entry(2, 1)];
    const a = splitAnswer(batch, [{ SequenceNumber: '1' }, { ErrorCode: 'ProvisionedThroughputExceededException', ErrorMessage: 'Rate exceeded' }, { SequenceNumber: '2' }]);
    expect(a.acked.map((e) => e.seq)).toEqual([0, 2]);
    expect(a.failed.map((e) => e.seq)).toEqual([1]);
    expect(a.firstError).toContain('ProvisionedThroughputExceeded');
    expect(splitAnswer(batch, [{ SequenceNumber: '1' }]).failed.length).toBe(3);
  });

  it('a GetRecords reply whose records lack a valid sequence number or bytes is named as a problem', () => {
    const bytes = new Uint8Array([1]);
    expect(recordsProblem([])).toBeUndefined();
    expect(recordsProblem([{ SequenceNumber: '1', Data: bytes }, { SequenceNumber: '2' }])).toBeUndefined();
    expect(recordsProblem([{ SequenceNumber: '1', Data: bytes }, { Data: bytes }])).toBe('record 1 of the reply has no valid SequenceNumber (none)');
    expect(recordsProblem([{ SequenceNumber: 'abc', Data: bytes }])).toBe('record 0 of the reply has no valid SequenceNumber ("abc")');
    expect(recordsProblem([{ SequenceNumber: '7', Data: 'text' }])).toBe('record 0 of the reply (sequence 7) has Data that is not bytes');
  });

  it('a result with neither ErrorCode nor a sequence number is not taken as written: it is retried', () => {
    const batch = [entry(0, 1), entry(1, 1), entry(2, 1)];
    const a = splitAnswer(batch, [{}, { SequenceNumber: '49590338271490256608559692538361571095921575989136588898' }, { SequenceNumber: 'abc' }]);
    expect(a.acked.map((e) => e.seq)).toEqual([1]);
    expect(a.failed.map((e) => e.seq)).toEqual([0, 2]);
    expect(a.firstError).toMatch(/PutRecords result 0 has neither SequenceNumber nor ErrorCode/);
  });

  it('a barrier resolves once every entry before it is acknowledged, not the ones after', async () => {
    const b = new Barriers();
    let done = false;
    void b.add(3, 3).then(() => (done = true));
    b.acked(5);
    b.acked(0);
    b.acked(2);
    await Promise.resolve();
    expect(done).toBe(false);
    b.acked(1);
    await Promise.resolve();
    await Promise.resolve();
    expect(done).toBe(true);
    expect(b.size).toBe(0);
    await expect(b.add(1, 0)).resolves.toBeUndefined();
  });
});

describe('tombstone pruning', () => {
  // s0 split into s2, s3; s3 merged with s1 into s4.
  const lineage = [sh('s0', [], true), sh('s1', [], true), sh('s2', ['s0']), sh('s3', ['s0'], true), sh('s4', ['s3', 's1'])];
  const facts = (durableTombstones: string[], durable: string[], listed: ShardInfo[] | undefined = lineage) => ({ listed, durableTombstones, durable: new Set(durable) });
  const ids = (d: { shardId: string; reason: string }[]) => d.map((x) => `${x.shardId}:${x.reason}`).sort();

  it('keeps a tombstone until the checkpoint that finished the shard completed (FLINK-37627)', () => {
    // s0 finished and both children durable, but s0's tombstone is in no completed checkpoint yet.
    expect(decidePruning(facts([], ['s0', 's2', 's3']))).toEqual([]);
    expect(ids(decidePruning(facts(['s0'], ['s0', 's2', 's3'])))).toEqual(['s0:children']);
  });

  it('keeps a tombstone until every child is in a completed checkpoint', () => {
    expect(decidePruning(facts(['s0'], ['s0', 's2']))).toEqual([]);
    // A merge parent: its one child s4 is not durable yet.
    expect(decidePruning(facts(['s1', 's3'], ['s1', 's3', 's2']))).toEqual([]);
    expect(ids(decidePruning(facts(['s1', 's3'], ['s1', 's3', 's2', 's4'])))).toEqual(['s1:children', 's3:children']);
  });

  it('a child pruned earlier counts through its own durable descendants', () => {
    // s3 (child of s0) was pruned after a restore from which only s4 (its child) came back durable.
    expect(ids(decidePruning(facts(['s0'], ['s0', 's2', 's4'])))).toEqual(['s0:children']);
    expect(decidePruning(facts(['s0'], ['s0', 's2']))).toEqual([]);
  });

  it('keeps a closed shard whose children are not listed yet; prunes nothing before the first listing', () => {
    expect(decidePruning(facts(['s0'], ['s0'], [sh('s0', [], true), sh('s1')]))).toEqual([]);
    expect(decidePruning({ listed: undefined, durableTombstones: ['s0'], durable: new Set(['s0', 's2', 's3']) })).toEqual([]);
  });

  it('drops a tombstone whose shard is gone from ListShards (past retention), children or not', () => {
    const later = lineage.filter((s) => s.shardId !== 's0' && s.shardId !== 's1');
    expect(ids(decidePruning(facts(['s0', 's1'], ['s0', 's1'], later)))).toEqual(['s0:gone', 's1:gone']);
  });

  it('randomised histories: a restore from any checkpoint after pruning assigns exactly what it would without pruning, and no finished shard again (seeded)', () => {
    const seed = Date.now() % 100_000;
    console.log(`tombstone pruning seed ${seed}`);
    const rng = new Rng(seed);
    let prunedTotal = 0;
    for (let round = 0; round < 100; round++) {
      const shards = reshardHistory(rng, 8);
      const gone = new Set<string>();
      const listed = () => shards.filter((s) => !gone.has(s.shardId));
      // The truth (nothing ever pruned) and what the readers hold (pruned tombstones dropped).
      const known = new Set<string>();
      const finished = new Set<string>();
      const pruned = new Set<string>();
      const checkpoints: { known: Set<string>; finished: Set<string>; pruned: Set<string> }[] = [];
      const durable = new Set<string>();
      const durableTombstones = new Set<string>();
      const heldView = (c: { known: Set<string>; finished: Set<string>; pruned: Set<string> }) => ({
        known: new Set([...c.known].filter((x) => !c.pruned.has(x))), finished: new Set([...c.finished].filter((x) => !c.pruned.has(x))),
      });
      for (let step = 0; step < 120; step++) {
        const live = heldView({ known, finished, pruned });
        const d = decideDiscovery(listed(), live);
        const truth = decideDiscovery(listed(), { known, finished });
        expect(d.assign.map((s) => s.shardId), `live assignment (seed ${seed})`).toEqual(truth.assign.map((s) => s.shardId));
        for (const s of d.assign) known.add(s.shardId);
        const r = rng.next();
        if (r < 0.3) {
          const closedLive = [...known].filter((id) => !finished.has(id) && shards.find((s) => s.shardId === id)!.closed);
          if (closedLive.length > 0) finished.add(closedLive[rng.int(closedLive.length)]!);
        } else if (r < 0.5) {
          checkpoints.push({ known: new Set(known), finished: new Set(finished), pruned: new Set(pruned) });
        } else if (r < 0.7 && checkpoints.length > 0) {
          // The latest checkpoint completes: what it held is durable (the readers report it).
          const c = heldView(checkpoints[checkpoints.length - 1]!);
          for (const x of c.known) durable.add(x);
          for (const x of c.finished) durableTombstones.add(x);
        } else if (r < 0.75) {
          // Retention: the oldest finished shard whose parents are gone leaves the listing.
          const old = shards.find((s) => finished.has(s.shardId) && !gone.has(s.shardId) && s.parents.every((p) => gone.has(p)));
          if (old !== undefined) gone.add(old.shardId);
        } else {
          for (const p of decidePruning({ listed: listed(), durableTombstones: [...durableTombstones].filter((x) => !pruned.has(x)), durable })) {
            expect(finished.has(p.shardId), `only tombstones are pruned (seed ${seed})`).toBe(true);
            pruned.add(p.shardId);
            prunedTotal++;
          }
        }
        // A restore from any checkpoint taken so far decides as it would have without pruning.
        for (const c of checkpoints.slice(-4)) {
          const restored = heldView(c);
          const got = decideDiscovery(listed(), restored).assign.map((s) => s.shardId);
          expect(got, `restore (seed ${seed})`).toEqual(decideDiscovery(listed(), { known: c.known, finished: c.finished }).assign.map((s) => s.shardId));
          for (const id of got) expect(c.finished.has(id), `finished shard ${id} assigned again (seed ${seed})`).toBe(false);
        }
      }
    }
    expect(prunedTotal).toBeGreaterThan(50);
  });
});
