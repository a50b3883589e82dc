/**
 * The Nexmark benchmark's queries (bench/nexmark/queries.ts, on weir's public API) give the
 * same output as their plain TypeScript implementations (bench/nexmark/oracle.ts) on the same
 * generated events, at parallelism 1 in one thread and at parallelism 2 on two worker threads,
 * from the generator and from a JSON-lines file of the same events. The comparison is the
 * digest the benchmark itself checks (bench/nexmark/check.ts).
 */
import { mkdtempSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { OutputDigest, QUERY_IDS, type QueryId } from '../../bench/nexmark/check.ts';
import { forEachEvent, writeEventsFile } from '../../bench/nexmark/generator.ts';
import type { Event } from '../../bench/nexmark/model.ts';
import { plainQuery } from '../../bench/nexmark/oracle.ts';
import { forEachLineInRange, runPlainThreads, STATELESS_QUERIES } from '../../bench/nexmark/plain-threads.ts';
import { runModule } from '../helpers/run.ts';

const job = fileURLToPath(new URL('../../bench/nexmark/job.ts', import.meta.url));
/** 2 s of event time at 10 000 events/s: auctions close and windows fire (2 s slides) before the end of input. */
const N = 20_000;

function plainDigests(): Record<QueryId, Record<string, number>> {
  const events: Event[] = [];
  forEachEvent(N, (e) => events.push(e));
  const out = {} as Record<QueryId, Record<string, number>>;
  for (const q of QUERY_IDS) {
    const d = new OutputDigest(q);
    const plain = plainQuery(q, (o) => d.add(o));
    for (const e of events) plain.add(e);
    plain.finish();
    out[q] = d.result();
  }
  return out;
}

describe('Nexmark queries on weir equal their plain implementations', () => {
  const want = plainDigests();
  let dir: string;
  let file: string;
  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'weir-nexmark-test-'));
    file = join(dir, 'events.jsonl');
    await writeEventsFile(file, N);
  });
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it('the plain results have work in them', () => {
    for (const q of QUERY_IDS) expect(want[q].records, q).toBeGreaterThan(0);
    // Joined and windowed queries produce more than a handful of records.
    for (const q of ['q3', 'q4', 'q8', 'q9', 'q11'] as const) expect(want[q].records, q).toBeGreaterThan(10);
  });

  it.each([
    { parallelism: 1, workers: 1, source: 'generator' },
    { parallelism: 2, workers: 2, source: 'generator' },
    { parallelism: 2, workers: 2, source: 'file' },
  ])('parallelism $parallelism on $workers worker(s), from the $source', async ({ source, ...config }) => {
    const r = await runModule(job, { ...config, args: ['all', String(N), source === 'file' ? file : '-', 'collect'] });
    for (const q of QUERY_IDS) {
      const d = new OutputDigest(q);
      for (const o of r.collected(q)) d.add(o);
      expect(d.result(), q).toEqual(want[q]);
    }
  }, 300_000);
});

describe("the Nexmark suite's two-thread ceiling (bench/nexmark/plain-threads.ts)", () => {
  const want = plainDigests();

  it('stateless queries split over two threads by event index add up to the query; every thread sees its lane', async () => {
    for (const q of STATELESS_QUERIES) {
      const r = await runPlainThreads(q, N, 2);
      expect(r.seen, q).toBe(N);
      expect(r.result, q).toEqual(want[q]);
    }
    // An odd count: lane 0 has one event more, and the counts still add up.
    expect((await runPlainThreads('q0', N + 1, 2)).seen).toBe(N + 1);
  }, 120_000);

  it('from the file: the two byte ranges take every line once, and stateless queries add up', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'weir-nexmark-ceiling-'));
    try {
      const file = join(dir, 'events.jsonl');
      await writeEventsFile(file, N);
      for (const q of STATELESS_QUERIES) {
        const r = await runPlainThreads(q, N, 2, file);
        expect(r.seen, q).toBe(N);
        expect(r.result, q).toEqual(want[q]);
      }
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  }, 120_000);

  it('byte ranges split a file at line boundaries: every line once, in order, multi-byte characters whole', () => {
    const dir = mkdtempSync(join(tmpdir(), 'weir-nexmark-lines-'));
    try {
      const file = join(dir, 'lines.txt');
      // Lines of 1 to 40 characters, some of them 2-, 3- and 4-byte UTF-8, an empty line, no final newline.
      const lines = Array.from({ length: 300 }, (_, i) => (i % 7 === 0 ? 'é€😀' : 'x').repeat(1 + (i % 40)) + i);
      lines.splice(150, 0, '');
      writeFileSync(file, lines.join('\n'));
      const size = statSync(file).size;
      const want = lines.filter((l) => l !== '');
      const none: string[] = [];
      forEachLineInRange(file, 0, 0, (l) => none.push(l)); // an empty range starts no line
      forEachLineInRange(file, 10, 10, (l) => none.push(l));
      expect(none).toEqual([]);
      for (const parts of [1, 2, 3, 7, 64, 1000]) {
        const got: string[] = [];
        for (let k = 0; k < parts; k++) forEachLineInRange(file, Math.floor((size * k) / parts), Math.floor((size * (k + 1)) / parts), (l) => got.push(l));
        expect(got, `${parts} ranges`).toEqual(want);
      }
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('a stateful query split in two is not the query (its windows see half the bids), so only its event counts are checked', async () => {
    const r = await runPlainThreads('q5', N, 2);
    expect(r.seen).toBe(N);
    expect(r.result).not.toEqual(want.q5);
  }, 60_000);
});
