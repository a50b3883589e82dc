/**
 * Event time of the file source per file (issue 9, point 1): one reader (p = 1) reading two
 * files whose event times overlap, one after the other. With watermarks per reader
 * (assignTimestampsAndWatermarks after the source) the first file's watermark makes most of
 * the second file late: those records are dropped, and the drop is counted in the job's
 * progress. With the strategy given to the source (fromFile's `watermarks`) each file keeps its
 * own watermark: nothing is late and the windows equal the oracle. With maxDrift the reader
 * interleaves the files instead of reading one to its end first.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { TumblingEventTimeWindows, WatermarkStrategy } from '../../src/index.ts';
import { runInline, sorted } from '../helpers/run.ts';

interface Ev { k: string; ts: number; f: number }
const PER_FILE = 20_000;
const SPAN_MS = 100_000;
const T0 = 1_700_000_000_000;
let dir: string;
let oracle: [string, number, number][];

beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), 'weir-file-et-'));
  mkdirSync(join(dir, 'in'));
  const counts = new Map<string, number>();
  for (const f of [0, 1]) {
    const lines: string[] = [];
    for (let i = 0; i < PER_FILE; i++) {
      // Both files cover the same 100 s of event time, in order, 5 keys.
      const e: Ev = { k: `k${i % 5}`, ts: T0 + Math.floor((i * SPAN_MS) / PER_FILE), f };
      lines.push(JSON.stringify(e));
      const w = Math.floor((e.ts - T0) / 10_000);
      counts.set(`${e.k}|${w}`, (counts.get(`${e.k}|${w}`) ?? 0) + 1);
    }
    writeFileSync(join(dir, 'in', `part-${f}.jsonl`), lines.join('\n') + '\n');
  }
  oracle = sorted([...counts].map(([kw, n]) => { const [k, w] = kw.split('|'); return [k!, Number(w), n]; }));
});
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const strategy = () => WatermarkStrategy.forBoundedOutOfOrderness<Ev>('1 s').withTimestampAssigner((e) => e.ts);

function windowCounts(stream: import('../../src/index.ts').DataStream<Ev>): void {
  stream
    .keyBy((e) => e.k)
    .window(TumblingEventTimeWindows.of('10 s'))
    .aggregate(
      { createAccumulator: () => 0, add: (_e: Ev, n: number) => n + 1, getResult: (n: number) => n, merge: (a: number, b: number) => a + b },
      { process: (key: string, ctx, counts: readonly number[], out) => { for (const n of counts) out.collect([key, Math.floor((ctx.window.start - T0) / 10_000), n]); } },
    )
    .collect('out');
}

describe('file source: event time per file', () => {
  it('watermarks per reader: the second file is mostly late, and every dropped record is counted', async () => {
    const r = await runInline((env) => {
      env.setAutoWatermarkInterval(1);
      windowCounts(env.fromFile<Ev>(join(dir, 'in')).assignTimestampsAndWatermarks(strategy()));
    });
    const got = r.collected<[string, number, number]>('out');
    const counted = got.reduce((a, [, , n]) => a + n, 0);
    const dropped = r.progress.lateRecordsDropped ?? 0;
    console.log(`[file event time] per reader: ${counted} counted, ${dropped} dropped as late`);
    expect(dropped).toBeGreaterThan(PER_FILE / 2);
    expect(counted + dropped).toBe(2 * PER_FILE);
  }, 60_000);

  it('watermarks per file (fromFile watermarks): nothing late, windows equal the oracle', async () => {
    const r = await runInline((env) => {
      env.setAutoWatermarkInterval(1);
      windowCounts(env.fromFile<Ev>(join(dir, 'in'), { watermarks: strategy() }));
    });
    expect(r.progress.lateRecordsDropped ?? 0).toBe(0);
    expect(sorted(r.collected<[string, number, number]>('out'))).toEqual(oracle);
  }, 60_000);

  for (const [name, maxDrift, check] of [
    ['without maxDrift the files are read one after the other', undefined, (d: number) => expect(d).toBeGreaterThan(90_000)],
    ['with maxDrift 5 s the reader interleaves the files', '5 s', (d: number) => expect(d).toBeLessThan(20_000)],
  ] as const) {
    it(name, async () => {
      const r = await runInline((env) => {
        env.setAutoWatermarkInterval(1);
        env.fromFile<Ev>(join(dir, 'in'), { watermarks: strategy(), ...(maxDrift ? { maxDrift } : {}) }).collect('seq');
      });
      const seq = r.collected<Ev>('seq');
      expect(seq.length).toBe(2 * PER_FILE);
      // Largest gap in event time between the two files while both are being read.
      const max = [Number.NEGATIVE_INFINITY, Number.NEGATIVE_INFINITY];
      let drift = 0;
      for (const e of seq) {
        max[e.f] = Math.max(max[e.f]!, e.ts);
        if (max[0]! > 0 && max[1]! > 0) drift = Math.max(drift, Math.abs(max[0]! - max[1]!));
        else drift = Math.max(drift, e.ts - T0); // the other file not started yet: it is at T0
      }
      console.log(`[file event time] maxDrift ${maxDrift ?? 'none'}: largest drift between the files ${drift} ms`);
      check(drift);
    }, 60_000);
  }
});
