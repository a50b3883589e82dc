/**
 * Block splitting of the file source (file-ranges.ts): the boundary rule over random files and
 * random range boundaries (every line read by exactly one range, in order), the real reader over
 * real files cut at random places (CRLF, blank lines, a final line without newline, multi-byte
 * characters across boundaries, boundaries exactly at line starts), CSV headers read once and
 * applied to every range, a reader restored mid-range, planning, and messages naming the byte.
 * Seeded: the seed is printed; replay with SEED=<n>.
 */
import { afterAll, describe, expect, it } from 'vitest';
import { mkdirSync, mkdtempSync, readdirSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Rng } from '../../src/core/random.ts';
import type { MalformedRecord, ReaderOutput, SourceReaderContext } from '../../src/core/source.ts';
import { byteRanges, MIN_SPLIT_BYTES, RangeLines, targetSplitBytes } from '../../src/connectors/file/file-ranges.ts';
import { FileSource, rangeSplit, type FileSourceOptions, type FileSplit } from '../../src/connectors/file/file-source.ts';
import { DEAD_LETTERS, TumblingEventTimeWindows, WatermarkStrategy } from '../../src/index.ts';
import { runInline, sorted } from '../helpers/run.ts';

const SEED = Number(process.env.SEED ?? Math.floor(Math.random() * 1e9));
console.log(`[file-splits] seed=${SEED} (replay with SEED=${SEED})`);

const root = mkdtempSync(join(tmpdir(), 'weir-file-splits-'));
afterAll(() => rmSync(root, { recursive: true, force: true }));
let fileNo = 0;
function write(name: string, content: string | Buffer): string {
  const p = join(root, `${fileNo++}-${name}`);
  writeFileSync(p, content);
  return p;
}

const GLYPHS = ['a', 'b', 'é', 'ß', '漢', '字', '😀', '🚀', ' ', ',', 'x'];

/**
 * A random JSON-lines file: record lines (unique ids, multi-byte text), blank lines ("" and
 * "\r"), LF or CRLF, with or without a final newline. Returns the bytes and the records in order.
 */
function randomFile(rng: Rng, lines: number): { bytes: Buffer; records: unknown[] } {
  const parts: string[] = [];
  const records: unknown[] = [];
  for (let i = 0; i < lines; i++) {
    const kind = rng.int(10);
    let text: string;
    if (kind === 0) text = '';
    else if (kind === 1) text = '\r';
    else {
      const r = { id: records.length, t: Array.from({ length: rng.int(30) }, () => rng.pick(GLYPHS)).join('') };
      records.push(r);
      text = JSON.stringify(r) + (rng.bool(0.3) ? '\r' : '');
    }
    parts.push(text);
  }
  const body = parts.join('\n') + (rng.bool() ? '\n' : '');
  return { bytes: Buffer.from(body), records };
}

/** Offsets at which lines start (0 and after every "\n" that is not the last byte). */
function lineStarts(bytes: Buffer): number[] {
  const out = bytes.length > 0 ? [0] : [];
  for (let i = 0; i < bytes.length - 1; i++) if (bytes[i] === 10) out.push(i + 1);
  return out;
}

/** Random cut points in (0, size): some arbitrary, some exactly at line starts, some just before or after one. */
function randomCuts(rng: Rng, bytes: Buffer): number[] {
  const starts = lineStarts(bytes);
  const cuts = new Set<number>();
  const n = 1 + rng.int(8);
  for (let k = 0; k < n; k++) {
    const mode = rng.int(4);
    let c: number;
    if (mode === 0 || starts.length < 2) c = 1 + rng.int(Math.max(1, bytes.length - 1));
    else c = rng.pick(starts) + (mode === 1 ? 0 : mode === 2 ? -1 : 1);
    if (c > 0 && c < bytes.length) cuts.add(c);
  }
  return [...cuts].sort((a, b) => a - b);
}

function rangesFromCuts(cuts: number[]): { start: number; end: number | undefined }[] {
  const bounds = [0, ...cuts];
  return bounds.map((s, i) => ({ start: s, end: i + 1 < bounds.length ? bounds[i + 1] : undefined }));
}

describe('the boundary rule (RangeLines), random files and boundaries', () => {
  it(`every line start is found by exactly one range, in order, with the whole line (seed ${SEED})`, () => {
    const rng = new Rng(SEED, 1);
    for (let iter = 0; iter < 400; iter++) {
      const { bytes } = randomFile(rng, rng.int(40));
      const ranges = rng.bool() ? rangesFromCuts(randomCuts(rng, bytes)) : byteRanges(bytes.length, 1 + rng.int(bytes.length + 1));
      const found: { start: number; end: number; text: string }[] = [];
      for (const r of ranges) {
        const rl = new RangeLines(r.start, r.end, r.start);
        let at = rl.readFrom;
        // Random chunk sizes, 1 byte up: characters and "\r\n" straddle chunk boundaries too.
        while (!rl.done) {
          const len = 1 + rng.int(20);
          const chunk = bytes.subarray(at, at + len);
          at += chunk.length;
          for (const l of rl.feed(Buffer.from(chunk), chunk.length === 0)) found.push({ start: l.startOffset, end: l.endOffset, text: l.text });
        }
      }
      const where = `seed ${SEED}, iteration ${iter}, ranges ${JSON.stringify(ranges)}, file ${JSON.stringify(bytes.toString())}`;
      const starts = lineStarts(bytes);
      expect(found.map((f) => f.start), where).toEqual(starts);
      for (let i = 0; i < found.length; i++) {
        const f = found[i]!;
        const end = i + 1 < starts.length ? starts[i + 1]! : bytes.length;
        expect(f.end, where).toBe(end);
        const raw = bytes.toString('utf8', f.start, end);
        expect(f.text, where).toBe(raw.endsWith('\n') ? raw.slice(0, -1) : raw);
      }
    }
  });

  it('exhaustively: every pair of cut points in a small file with CRLF, blank lines, 4-byte characters and no final newline', () => {
    const bytes = Buffer.from('😀é\r\n\n{"a":"漢"}\r\n\r\n😀\nx');
    const starts = lineStarts(bytes);
    for (let i = 1; i < bytes.length; i++) {
      for (let j = i; j < bytes.length; j++) {
        const ranges = rangesFromCuts(i === j ? [i] : [i, j]);
        const found: number[] = [];
        const texts: string[] = [];
        for (const r of ranges) {
          const rl = new RangeLines(r.start, r.end, r.start);
          for (const l of rl.feed(bytes.subarray(rl.readFrom), true)) {
            found.push(l.startOffset);
            texts.push(l.text);
          }
        }
        expect(found, `cuts ${i}, ${j}`).toEqual(starts);
        expect(texts, `cuts ${i}, ${j}`).toEqual(['😀é\r', '', '{"a":"漢"}\r', '\r', '😀', 'x']);
      }
    }
  });

  it('a range restored at its end finds nothing; restored mid-range it resumes at the line start it recorded', () => {
    const bytes = Buffer.from('aa\nbbb\ncc\ndddd\n');
    const done = new RangeLines(3, 8, 10);
    expect(done.done).toBe(true);
    const mid = new RangeLines(3, 12, 7);
    expect(mid.readFrom).toBe(7);
    expect(mid.feed(bytes.subarray(7), false).map((l) => l.text)).toEqual(['cc', 'dddd']);
    expect(mid.done).toBe(true);
  });
});

describe('planning', () => {
  it('the split size is the option, or the input over the parallelism when smaller, never below the minimum', () => {
    expect(targetSplitBytes(100 * 2 ** 20, 2, 32 * 2 ** 20)).toBe(32 * 2 ** 20);
    expect(targetSplitBytes(20 * 2 ** 20, 2, 32 * 2 ** 20)).toBe(10 * 2 ** 20);
    expect(targetSplitBytes(5000, 4, 32 * 2 ** 20)).toBe(MIN_SPLIT_BYTES);
    expect(targetSplitBytes(5000, 4, Infinity)).toBe(Infinity);
  });

  it('a CSV file is one split unless a splitSize is given: records whose quoted fields hold line breaks are read whole at parallelism 2', async () => {
    const rows = Array.from({ length: 200 }, (_, i) => `${i},"line one of ${i}\n${i + 1000},second ${i}",${i}`);
    const csv = write('multiline.csv', `id,note,n\n${rows.join('\n')}\n`);
    expect((await new FileSource(csv).planSplits(2)).map((s) => s.id)).toEqual([csv]);
    expect((await new FileSource(csv, { splitSize: MIN_SPLIT_BYTES }).planSplits(2)).length).toBeGreaterThan(1);
    const r = await runInline((env) => {
      const s = env.fromFile<{ id: number; note: string; n: number }>(csv, { malformed: 'dead-letter' });
      s.collect('good');
      s.getSideOutput(DEAD_LETTERS).collect('dead');
    }, { parallelism: 2 });
    // Before: cut into 2 ranges, record 105 went to the dead letters in halves and "1105" came out as a record.
    expect(r.collected('dead')).toEqual([]);
    const good = r.collected<{ id: number; note: string; n: number }>('good').sort((a, b) => a.id - b.id);
    expect(good).toEqual(Array.from({ length: 200 }, (_, i) => ({ id: i, note: `line one of ${i}\n${i + 1000},second ${i}`, n: i })));
  });

  it('ranges are equal, contiguous and cover the file; the last runs to the end of the file', () => {
    expect(byteRanges(100, 100)).toEqual([{ start: 0, end: undefined }]);
    expect(byteRanges(0, 4096)).toEqual([{ start: 0, end: undefined }]);
    expect(byteRanges(100, 40)).toEqual([{ start: 0, end: 33 }, { start: 33, end: 66 }, { start: 66, end: undefined }]);
  });

  it('a large file at parallelism 3 is cut into 3 ranges; small files of a directory stay whole', async () => {
    const big = write('big.jsonl', Array.from({ length: 3000 }, (_, i) => JSON.stringify({ i })).join('\n'));
    const size = statSync(big).size;
    const a = Math.floor(size / 3);
    const b = Math.floor((2 * size) / 3);
    const splits = await new FileSource(big).planSplits(3);
    expect(splits.map((s) => [s.start, s.end, s.offset])).toEqual([[0, a, 0], [a, b, a], [b, undefined, b]]);
    expect(splits.map((s) => s.id)).toEqual([`${big}#0-${a}`, `${big}#${a}-${b}`, `${big}#${b}-`]);
    expect((await new FileSource(big, { splitSize: Infinity }).planSplits(3)).map((s) => s.id)).toEqual([big]);
    expect((await new FileSource(big).planSplits(1)).map((s) => s.id)).toEqual([big]);
    // A directory: the bytes of all files over the parallelism; files not larger stay one split.
    const dir = join(root, 'dir');
    mkdirSync(dir);
    writeFileSync(join(dir, 'a.jsonl'), '1\n'.repeat(6000));
    writeFileSync(join(dir, 'b.jsonl'), '2\n'.repeat(3000));
    writeFileSync(join(dir, 'c.jsonl'), '3\n'.repeat(2000));
    const inDir = await new FileSource(dir).planSplits(2);
    expect(inDir.map((s) => [s.path.slice(dir.length + 1), s.start, s.end])).toEqual([['a.jsonl', 0, 6000], ['a.jsonl', 6000, undefined], ['b.jsonl', undefined, undefined], ['c.jsonl', undefined, undefined]]);
  });

  it('splitSize is validated with a one-line message', () => {
    expect(() => new FileSource('x.jsonl', { splitSize: 100 })).toThrow('fromFile: splitSize must be an integer number of bytes >= 4096 (or Infinity for one split per file), got 100');
    expect(() => new FileSource('x.jsonl', { splitSize: 5000.5 })).toThrow('fromFile: splitSize must be an integer');
  });
});

/** Drives a real FileReader over `splits` until it ends; records and dead letters per split id. */
async function readSplits(path: string, options: FileSourceOptions, splits: FileSplit[], stopAfter?: number): Promise<{ bySplit: Map<string, unknown[]>; all: unknown[]; dead: MalformedRecord[]; snapshot: FileSplit[] }> {
  const src = new FileSource<unknown>(path, options);
  let woken = false;
  let wakeUp: (() => void) | undefined;
  const ctx: SourceReaderContext = {
    subtaskIndex: 0, parallelism: 1, now: () => Date.now(),
    wake: () => { woken = true; wakeUp?.(); },
    schedule: () => ({ cancel() {} }),
    metrics: { addBytesRead() {}, setPendingRecords() {}, setMillisBehindLatest() {} },
    log() {},
  };
  const reader = src.createReader(ctx);
  reader.addSplits(splits);
  const bySplit = new Map<string, unknown[]>();
  const all: unknown[] = [];
  const dead: MalformedRecord[] = [];
  let emitted = 0;
  const forSplit = (id: string) => ({
    collect: (v: unknown) => { emitted++; all.push(v); (bySplit.get(id) ?? bySplit.set(id, []).get(id)!).push(v); },
    malformed: (m: MalformedRecord) => dead.push(m),
  });
  const out: ReaderOutput<unknown> = { ...forSplit(''), forSplit, splitFinished() {} };
  for (;;) {
    if (stopAfter !== undefined && emitted >= stopAfter) break;
    const status = reader.poll(out, 1 + (emitted % 7));
    if (status === 'end') break;
    if (status === 'wait') {
      if (!woken) await new Promise<void>((res) => { wakeUp = res; setTimeout(res, 5000); });
      woken = false;
    }
  }
  const snapshot = reader.snapshotSplits();
  await reader.close?.();
  return { bySplit, all, dead, snapshot };
}

describe('the reader over real files cut at random places', () => {
  it(`JSON lines: concatenating the ranges' records in range order gives the file's records, each once (seed ${SEED})`, async () => {
    const rng = new Rng(SEED, 2);
    for (let iter = 0; iter < 40; iter++) {
      const { bytes, records } = randomFile(rng, 1 + rng.int(300));
      const onDisk = rng.bool(0.2) ? Buffer.concat([Buffer.from([0xef, 0xbb, 0xbf]), bytes]) : bytes;
      const p = write('random.jsonl', onDisk);
      const ranges = rng.bool() ? rangesFromCuts(randomCuts(rng, onDisk)) : byteRanges(onDisk.length, 1 + rng.int(onDisk.length));
      const splits = ranges.map((r) => (r.start === 0 && r.end === undefined ? { id: p, path: p, offset: 0, line: 1 } : rangeSplit(p, r.start, r.end)));
      const chunkSize = 64 + rng.int(200);
      const { bySplit, dead } = await readSplits(p, { chunkSize, malformed: 'dead-letter' } as FileSourceOptions, splits);
      const where = `seed ${SEED}, iteration ${iter}, chunkSize ${chunkSize}, ranges ${JSON.stringify(ranges)}`;
      expect(dead, where).toEqual([]);
      expect(splits.flatMap((s) => bySplit.get(s.id) ?? []), where).toEqual(records);
    }
  });

  it(`a reader snapshotted mid-range and restored (other readers, other order) reads the rest exactly once (seed ${SEED})`, async () => {
    const rng = new Rng(SEED, 3);
    for (let iter = 0; iter < 15; iter++) {
      const { bytes, records } = randomFile(rng, 200 + rng.int(300));
      const p = write('restore.jsonl', bytes);
      const splits = byteRanges(bytes.length, 1 + rng.int(bytes.length / 2)).map((r) => rangeSplit(p, r.start, r.end));
      const stopAfter = rng.int(records.length);
      const first = await readSplits(p, { chunkSize: 64 + rng.int(100) }, splits, stopAfter);
      // The restored splits, dealt to two new readers (a rescale), read after the first run's records.
      const half = first.snapshot.filter((_, k) => k % 2 === 0);
      const other = first.snapshot.filter((_, k) => k % 2 === 1);
      const a = await readSplits(p, { chunkSize: 64 + rng.int(100) }, half);
      const b = await readSplits(p, { chunkSize: 64 + rng.int(100) }, other);
      const per = (id: string) => [...(first.bySplit.get(id) ?? []), ...(a.bySplit.get(id) ?? []), ...(b.bySplit.get(id) ?? [])];
      expect(splits.flatMap((s) => per(s.id)), `seed ${SEED}, iteration ${iter}, stopped after ${stopAfter}`).toEqual(records);
    }
  });
});

describe('CSV records whose quoted fields hold line breaks', () => {
  it(`a reader snapshotted anywhere (inside such a record too) and restored reads every record once, whole (seed ${SEED})`, async () => {
    const rng = new Rng(SEED, 7);
    const pieces = ['plain', 'a\nb', 'x\r\ny', '', 'say "hi"\n\nbye', 'c,d'];
    const quote = (f: string) => (/[",\r\n]/.test(f) ? `"${f.replace(/"/g, '""')}"` : f);
    for (let iter = 0; iter < 20; iter++) {
      const records = Array.from({ length: 20 + rng.int(60) }, (_, i) => ({ id: `r${i}`, text: rng.pick(pieces) + (rng.bool() ? '' : `\n${i}`) }));
      const crlf = rng.bool();
      const eol = crlf ? '\r\n' : '\n';
      const p = write('multiline.csv', 'id,text' + eol + records.map((r) => `${r.id},${quote(r.text)}`).join(eol) + eol);
      const whole: FileSplit[] = [{ id: p, path: p, offset: 0, line: 1 }];
      const stopAfter = rng.int(records.length);
      const options = { chunkSize: 64 + rng.int(100), malformed: 'dead-letter', csv: { cast: false } } as FileSourceOptions;
      const first = await readSplits(p, options, whole, stopAfter);
      const rest = await readSplits(p, options, first.snapshot);
      const where = `seed ${SEED}, iteration ${iter}, stopped after ${stopAfter}, crlf ${crlf}`;
      expect([...first.dead, ...rest.dead], where).toEqual([]);
      expect([...first.all, ...rest.all], where).toEqual(records);
    }
  });
});

describe('reading order', () => {
  it('a reader reads its ranges in file order whatever order they were assigned in (a restore deals them out again)', async () => {
    const lines = Array.from({ length: 3000 }, (_, i) => JSON.stringify(i));
    const p = write('ordered.jsonl', lines.join('\n') + '\n');
    const splits = byteRanges(statSync(p).size, 2000).map((r) => rangeSplit(p, r.start, r.end));
    const shuffled = [...splits].reverse();
    shuffled.push(shuffled.splice(3, 1)[0]!);
    const { all } = await readSplits(p, {}, shuffled);
    expect(all).toEqual(lines.map((_, i) => i));
  });
});

describe('CSV', () => {
  const header = 'name,n,city';
  const rows = Array.from({ length: 400 }, (_, i) => ({ name: `n${i}`, n: i, city: ['Zürich', '東京', 'São Paulo', 'a,b'][i % 4]! }));
  const csvLine = (r: (typeof rows)[number]) => `${r.name},${r.n},${r.city.includes(',') ? `"${r.city}"` : r.city}`;
  const content = [header, ...rows.map(csvLine)].join('\r\n') + '\r\n';

  it(`the header is read once from offset 0 and names the fields of every range, including cuts inside the header (seed ${SEED})`, async () => {
    const rng = new Rng(SEED, 4);
    const p = write('people.csv', content);
    const size = Buffer.byteLength(content);
    for (let iter = 0; iter < 10; iter++) {
      const cuts = [...new Set([1 + rng.int(header.length + 1), header.length + 2, ...Array.from({ length: 5 }, () => 1 + rng.int(size - 1))])].sort((x, y) => x - y);
      const splits = rangesFromCuts(cuts).map((r) => rangeSplit(p, r.start, r.end));
      const { bySplit, dead } = await readSplits(p, { format: 'csv', chunkSize: 64 + rng.int(100), malformed: 'dead-letter' } as FileSourceOptions, splits);
      expect(dead).toEqual([]);
      expect(splits.flatMap((s) => bySplit.get(s.id) ?? []), `seed ${SEED}, cuts ${cuts}`).toEqual(rows);
    }
  });

  it('a job at parallelism 3 reads a CSV file in 3 ranges and every row once, with the header applied', async () => {
    const p = write('wide.csv', [header, ...Array.from({ length: 30 }, () => rows.map(csvLine)).flat()].join('\n') + '\n');
    const r = await runInline((env) => void env.fromFile(p, { splitSize: 4096 }).collect('main'), { parallelism: 3 });
    const got = r.collected<(typeof rows)[number]>('main');
    expect(got).toHaveLength(rows.length * 30);
    const count = new Map<number, number>();
    for (const g of got) count.set(g.n, (count.get(g.n) ?? 0) + 1);
    expect([...count.entries()].sort((x, y) => x[0] - y[0])).toEqual(rows.map((row) => [row.n, 30]));
    expect(got.every((g) => rows[g.n]!.name === g.name && rows[g.n]!.city === g.city)).toBe(true);
  });
});

describe('malformed records in a range name the file and byte offset', () => {
  it('dead-letter at parallelism 2: locations are "path:line" in the first range and "path at byte N" after it', async () => {
    const lines = Array.from({ length: 1000 }, (_, i) => JSON.stringify({ i }));
    lines[10] = '{broken';
    lines[900] = 'not json';
    const content = lines.join('\n') + '\n';
    const p = write('bad.jsonl', content);
    const r = await runInline((env) => {
      const s = env.fromFile(p, { malformed: 'dead-letter' });
      s.collect('main');
      s.getSideOutput(DEAD_LETTERS).collect('dead');
    }, { parallelism: 2 });
    const dead = r.collected<MalformedRecord>('dead').sort((a, b) => a.raw.localeCompare(b.raw));
    const byteOf900 = Buffer.byteLength(lines.slice(0, 900).join('\n') + '\n');
    expect(dead.map((d) => [d.location, d.raw])).toEqual([[`${p}:11`, '{broken'], [`${p} at byte ${byteOf900}`, 'not json']]);
    expect(r.collected('main')).toHaveLength(998);
  });
});

describe('event time over ranges', () => {
  it('a time-ordered file read in ranges at parallelism 3 (one range per reader, and many): windows equal the oracle, nothing late', async () => {
    interface Ev { k: string; ts: number }
    const T0 = 1_700_000_000_000;
    const n = 30_000;
    const events: Ev[] = Array.from({ length: n }, (_, i) => ({ k: `k${i % 5}`, ts: T0 + Math.floor((i * 100_000) / n) }));
    const p = write('timed.jsonl', events.map((e) => JSON.stringify(e)).join('\n') + '\n');
    const counts = new Map<string, number>();
    for (const e of events) {
      const key = `${e.k}|${Math.floor((e.ts - T0) / 10_000)}`;
      counts.set(key, (counts.get(key) ?? 0) + 1);
    }
    const oracle = sorted([...counts].map(([kw, c]) => [kw.split('|')[0]!, Number(kw.split('|')[1]), c]));
    for (const splitSize of [undefined, 65_536]) {
      const r = await runInline((env) => {
        env.setAutoWatermarkInterval(1);
        env
          .fromFile<Ev>(p, { watermarks: WatermarkStrategy.forBoundedOutOfOrderness<Ev>('1 s').withTimestampAssigner((e) => e.ts), ...(splitSize ? { splitSize } : {}) })
          .keyBy((e) => e.k)
          .window(TumblingEventTimeWindows.of('10 s'))
          .aggregate(
            { createAccumulator: () => 0, add: (_e: Ev, c: number) => c + 1, getResult: (c: number) => c, merge: (a: number, b: number) => a + b },
            { process: (key: string, ctx, cs: readonly number[], out) => { for (const c of cs) out.collect([key, Math.floor((ctx.window.start - T0) / 10_000), c]); } },
          )
          .collect('out');
      }, { parallelism: 3 });
      expect(r.progress.lateRecordsDropped ?? 0, `splitSize ${splitSize}`).toBe(0);
      expect(sorted(r.collected('out')), `splitSize ${splitSize}`).toEqual(oracle);
    }
  }, 60_000);
});

describe('a reader closed while its files open', () => {
  it('closes each handle that opens after close() and reads nothing through it (before: one file descriptor leaked per cancel)', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'weir-close-open-'));
    const path = join(dir, 'a.jsonl');
    writeFileSync(path, '{"i":1}\n{"i":2}\n');
    const src = new FileSource<unknown>(path);
    const splits = await src.planSplits(1);
    const openFds = () => readdirSync('/proc/self/fd').length;
    const before = openFds();
    let bytesRead = 0;
    for (let k = 0; k < 20; k++) {
      const reader = src.createReader({
        subtaskIndex: 0, parallelism: 1, now: () => Date.now(), wake() {}, schedule: () => ({ cancel() {} }), log() {},
        metrics: { addBytesRead: (n: number) => void (bytesRead += n), setPendingRecords() {}, setMillisBehindLatest() {} },
      });
      reader.addSplits(splits.map((s) => ({ ...s })));
      const out: ReaderOutput<unknown> = { collect() {}, malformed() {}, forSplit: () => out, splitFinished() {} };
      reader.poll(out, 10); // starts opening the file
      await reader.close?.(); // cancelled meanwhile
    }
    await new Promise((res) => setTimeout(res, 200));
    expect(bytesRead).toBe(0);
    expect(openFds()).toBeLessThanOrEqual(before);
    rmSync(dir, { recursive: true, force: true });
  });
});
