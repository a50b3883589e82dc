/**
 * Edge-case values through the exactly-once file sink's formats (written to a local directory,
 * committed at one checkpoint) and back through weir's file source (malformed records as dead
 * letters), and DuckDB where a second reader settles what the file holds. Each case is a value
 * a format once changed or dropped without a word.
 */
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import type { SinkContext } from '../../src/core/sink.ts';
import type { MalformedRecord } from '../../src/core/source.ts';
import type { FileSourceOptions } from '../../src/connectors/file/file-source.ts';
import { csv, DEAD_LETTERS, ExactlyOnceFileSink, jsonLines, ManualClock, parquet, type ExactlyOnceFileSinkOptions } from '../../src/index.ts';
import { castField } from '../../src/connectors/file/csv.ts';
import { readCsv, readParquet } from '../helpers/duckdb.ts';
import { runInline } from '../helpers/run.ts';

const work = mkdtempSync(join(tmpdir(), 'weir-format-round-trip-'));
let dirs = 0;
afterAll(() => rmSync(work, { recursive: true, force: true }));

interface Written {
  readonly files: string[];
  readonly letters: MalformedRecord[];
}

/** One batch through the sink's writer, committed at checkpoint 1; the committed files. */
async function write(values: unknown[], options: ExactlyOnceFileSinkOptions): Promise<Written> {
  const dir = join(work, `out-${dirs++}`);
  const letters: MalformedRecord[] = [];
  const clock = new ManualClock(0);
  const ctx: SinkContext = { subtaskIndex: 0, parallelism: 1, attemptNumber: 0, now: () => clock.now(), restoredCheckpointId: undefined, log: () => {}, deadLetters: (r) => letters.push(...r) };
  const sink = new ExactlyOnceFileSink<unknown>(dir, { malformed: 'dead-letter', ...options });
  const w = sink.createWriter(ctx);
  w.write(values, values.map(() => 0));
  const committables = w.prepareCommit(1);
  await w.whenPrepared?.(1);
  await sink.createCommitter(ctx).commit(committables, 1);
  return { files: readdirSync(dir).filter((f) => !f.startsWith('.')).sort().map((f) => join(dir, f)), letters };
}

async function read(file: string, options: FileSourceOptions): Promise<{ main: unknown[]; dead: MalformedRecord[] }> {
  const r = await runInline((env) => {
    const s = env.fromFile(file, { ...options, malformed: 'dead-letter' });
    s.collect('main');
    s.getSideOutput(DEAD_LETTERS).collect('dead');
  });
  return { main: r.collected('main'), dead: r.collected<MalformedRecord>('dead') };
}

describe('CSV round trip', () => {
  it('a quoted field with line breaks over 1 MiB comes back whole, with the records around it', async () => {
    const big = 'line of text\n'.repeat(90_000); // 1.1 MiB across 90,000 lines
    const w = await write([{ id: 1, note: 'a' }, { id: 2, note: big }, { id: 3, note: 'b' }], { format: csv({ columns: ['id', 'note'] }) });
    const r = await read(w.files[0]!, { format: 'csv' });
    expect(r.dead).toEqual([]);
    expect(r.main).toEqual([{ id: 1, note: 'a' }, { id: 2, note: big }, { id: 3, note: 'b' }]);
    expect((await readCsv(w.files)).map((row) => row['note'])).toEqual(['a', big, 'b']);
  });

  it('a record across lines longer than maxLineBytes is one dead letter, and the reader goes on', async () => {
    const big = 'x'.repeat(100) + '\n' + 'y'.repeat(3000) + '\n' + 'z'.repeat(100);
    const w = await write([{ note: 'before' }, { note: big }], { format: csv({ columns: ['note'] }) });
    const r = await read(w.files[0]!, { format: 'csv', maxLineBytes: 2048 });
    expect(r.main[0]).toEqual({ note: 'before' });
    expect(r.dead[0]!.error).toMatch(/longer than maxLineBytes \(2048\)/);
  });

  it('a value holding part of a multi-character delimiter is quoted and read back unchanged', async () => {
    const records = [{ a: 'x|', b: 'q' }, { a: 'x|', b: '|y' }, { a: '|', b: 'a|b' }];
    const w = await write(records, { format: csv({ columns: ['a', 'b'], delimiter: '||' }) });
    const r = await read(w.files[0]!, { format: 'csv', csv: { delimiter: '||' } });
    expect(r.dead).toEqual([]);
    expect(r.main).toEqual(records);
  });

  it('strings that look like numbers or booleans stay strings; numbers and booleans stay numbers and booleans', async () => {
    const rec = { zip: '00501', price: '1.50', code: '1e3', flag: 'true', text42: '42', neg: '-0', n: 42, f: 1.5, b: false, big: '9007199254740993' };
    const w = await write([rec], { format: csv({ columns: Object.keys(rec) }) });
    const r = await read(w.files[0]!, { format: 'csv' });
    expect(r.main).toEqual([rec]);
  });

  it('unquoted fields in a foreign file are cast when JSON would read them as numbers; leading zeros and long integers stay text', () => {
    expect(['42', '-7', '1.5', '1.50', '1e3', '1e+21', '0.25', 'true', 'false'].map(castField)).toEqual([42, -7, 1.5, 1.5, 1000, 1e21, 0.25, true, false]);
    for (const kept of ['00501', '007', '-01', '+1', ' 1', '1.', '.5', '9007199254740993', '1e400', 'NaN', 'Infinity', '-Infinity', '', '-', 'True']) expect(castField(kept)).toBe(kept);
  });

  it('a record that is an array, a Map, a Set, a Date or binary data is a dead letter, not an empty row', async () => {
    const w = await write([['x', 'y'], new Map([['a', 1]]), new Set([1]), new Date(0), new Uint8Array(2), { a: 'kept', b: 1 }], { format: csv({ columns: ['a', 'b'] }) });
    expect(w.letters.map((l) => l.error.replace(/.*got /, ''))).toEqual(['an array', 'a Map', 'a Set', 'a Date', 'binary data']);
    expect(readFileSync(w.files[0]!, 'utf8')).toBe('a,b\nkept,1\n');
    expect((await read(w.files[0]!, { format: 'csv' })).main).toEqual([{ a: 'kept', b: 1 }]);
  });

  it('a string with a lone surrogate is a dead letter (UTF-8 would hold U+FFFD instead)', async () => {
    const w = await write([{ a: 'a\ud800b' }, { a: 'ok \u{1f600}' }], { format: csv({ columns: ['a'] }) });
    expect(w.letters.map((l) => l.error)).toEqual([expect.stringMatching(/lone surrogate/)]);
    expect((await read(w.files[0]!, { format: 'csv' })).main).toEqual([{ a: 'ok \u{1f600}' }]);
  });
});

describe('JSON lines', () => {
  it('a format function whose text holds a line break has the record refused, the file stays readable', async () => {
    const w = await write([{ a: 1 }, 'one line'], { format: jsonLines((v) => JSON.stringify(v, null, typeof v === 'object' ? 2 : undefined)) });
    expect(w.letters.map((l) => l.error)).toEqual([expect.stringMatching(/line break/)]);
    const r = await read(w.files[0]!, { format: 'jsonl' });
    expect(r).toEqual({ main: ['one line'], dead: [] });
  });

  it('the default JSON keeps a lone surrogate (escaped) and line breaks inside strings', async () => {
    const rec = { s: 'a\ud800b', t: 'two\nlines\r\n' };
    const w = await write([rec], {});
    expect((await read(w.files[0]!, { format: 'jsonl' })).main).toEqual([rec]);
  });
});

describe('Parquet', () => {
  it('a Map, a Set or a Date record is a dead letter, not a row of nulls', async () => {
    const w = await write([new Map([['a', 'x']]), new Set(['a']), new Date(0), ['x'], { a: 'kept' }], { format: parquet({ columns: { a: 'string?', b: 'string?' } }) });
    expect(w.letters.map((l) => l.error.replace(/.*got /, ''))).toEqual(['a Map', 'a Set', 'a Date', 'an array']);
    expect(await readParquet(w.files)).toEqual([{ a: 'kept', b: null }]);
  });

  it('a string with a lone surrogate is a dead letter naming the column', async () => {
    const w = await write([{ a: 'a\udc00' }, { a: 'ok' }], { format: parquet({ columns: { a: 'string' } }) });
    expect(w.letters.map((l) => l.error)).toEqual([expect.stringMatching(/^column "a" holds a lone surrogate/)]);
    expect(await readParquet(w.files)).toEqual([{ a: 'ok' }]);
  });
});
