/**
 * The exactly-once file sink's formats: Parquet (typed schema from the job, a row group flushed
 * at every barrier, the footer that would close the file recorded with an open S3 part), CSV and
 * JSON lines, on a local directory and on S3 (s3rver in this process). Every committed Parquet
 * and CSV file is read back by DuckDB (test/helpers/duckdb.ts), not by the library that wrote it.
 */
import { createHash } from 'node:crypto';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { S3ObjectStore } from '../../src/checkpoint/s3/object-store.ts';
import { resolveS3Config, type S3Settings } from '../../src/checkpoint/s3/settings.ts';
import type { SinkContext } from '../../src/core/sink.ts';
import type { MalformedRecord } from '../../src/core/source.ts';
import { ExactlyOnceFileSink, ManualClock, csv, defineJob, jsonLines, parquet, runJob, type FileCommittable, type RunOptions, type StreamExecutionEnvironment } from '../../src/index.ts';
import { parquetLayout, parquetSchema, readCsv, readParquet } from '../helpers/duckdb.ts';
import { runUntilFailedAfterCheckpoint } from '../helpers/paced-failure.ts';
import { startS3Server, type S3TestServer } from '../helpers/s3rver.ts';

const MiB = 1024 * 1024;
const work = mkdtempSync(join(tmpdir(), 'weir-parquet-sink-'));
afterAll(() => rmSync(work, { recursive: true, force: true }));
let seq = 0;
const fresh = (what: string) => join(work, `${what}-${seq++}`);

function ctx(clock = new ManualClock(0), subtaskIndex = 0, parallelism = 1, restoredCheckpointId?: number, log: string[] = [], letters: MalformedRecord[] = []): SinkContext {
  return { subtaskIndex, parallelism, attemptNumber: restoredCheckpointId === undefined ? 0 : 1, now: () => clock.now(), restoredCheckpointId, log: (l) => log.push(l), deadLetters: (r) => letters.push(...r) };
}
const ts = (k: number) => new Array<number>(k).fill(0);

interface Row { readonly key: string; readonly ts: number; readonly value: number }
const COLUMNS = { key: 'string', ts: 'int64', value: 'double' } as const;
const row = (i: number): Row => ({ key: `k${i % 7}`, ts: i, value: i / 4 });
/** A row as DuckDB gives it back (BIGINT as text). */
const asRead = (r: Row) => ({ key: r.key, ts: String(r.ts), value: r.value });
const byTs = (a: Record<string, unknown>, b: Record<string, unknown>) => Number(a.ts) - Number(b.ts);

/** Committed files of a local output (not hidden), full paths, sorted. */
function committed(dir: string, ext: string): string[] {
  return readdirSync(dir).filter((f) => !f.startsWith('.') && f.endsWith(`.${ext}`)).sort().map((f) => join(dir, f));
}

async function checkpoint<T>(w: { prepareCommit(id: number): FileCommittable[]; whenPrepared?(id: number): Promise<void> | undefined; write(v: readonly T[], t: readonly number[]): void }, c: { commit(l: readonly FileCommittable[], id?: number): void | Promise<void> }, id: number): Promise<FileCommittable[]> {
  const list = w.prepareCommit(id);
  await w.whenPrepared?.(id);
  await c.commit(list, id);
  return list;
}

describe('Parquet encoding (read by DuckDB)', () => {
  it('every type of the schema, nullable columns, and the bytes at each barrier closed by the footer are a whole file', async () => {
    const f = parquet({ columns: { s: 'string', i: 'int32', l: 'int64', d: 'double', fl: 'float', b: 'boolean', t: 'timestamp', j: 'json?', o: 'string?' } });
    expect(f.extension).toBe('parquet');
    const e = f.open('test');
    const reject = (_v: unknown, err: string) => {
      throw new Error(err);
    };
    const bytes: Buffer[] = [];
    const take = (b: Uint8Array | undefined) => b !== undefined && bytes.push(Buffer.from(b));
    take(e.encode([{ s: 'a', i: -5, l: 2 ** 40, d: 0.5, fl: 1.5, b: true, t: 1_700_000_000_000, j: { x: [1, 'y'] }, o: 'here', extra: 'ignored' }], reject));
    expect(e.bufferedRows).toBe(1);
    take(e.flush());
    const first = join(work, 'enc-1.parquet');
    writeFileSync(first, Buffer.concat([...bytes, Buffer.from(e.closing()!)]));
    take(e.encode([{ s: 'b', i: 7, l: 9007199254740993n, d: -1, fl: 0, b: false, t: new Date(0), j: null }], reject));
    take(e.flush());
    const second = join(work, 'enc-2.parquet');
    writeFileSync(second, Buffer.concat([...bytes, Buffer.from(e.closing()!)]));
    expect(await parquetSchema(second)).toEqual({ s: 'VARCHAR', i: 'INTEGER', l: 'BIGINT', d: 'DOUBLE', fl: 'FLOAT', b: 'BOOLEAN', t: 'TIMESTAMP', j: 'JSON', o: 'VARCHAR' });
    const a = { s: 'a', i: -5, l: String(2 ** 40), d: 0.5, fl: 1.5, b: true, t: '2023-11-14 22:13:20', j: '{"x":[1,"y"]}', o: 'here' };
    expect(await readParquet([first])).toEqual([a]);
    expect(await readParquet([second])).toEqual([a, { s: 'b', i: 7, l: '9007199254740993', d: -1, fl: 0, b: false, t: '1970-01-01 00:00:00', j: null, o: null }]);
    expect(await parquetLayout(second)).toEqual({ rows: 2, rowGroups: 2 });
  });

  it('a schema the job gives wrongly is refused when the sink is built, naming the column', () => {
    expect(() => parquet({ columns: { a: 'text' as 'string' } })).toThrow('parquet: column "a" has type "text"; expected one of string, int32, int64, float, double, boolean, timestamp, json (with "?" for nullable)');
    expect(() => parquet({ columns: {} })).toThrow(/at least one column/);
    expect(() => parquet({ columns: COLUMNS, rowGroupRows: 0 })).toThrow(/rowGroupRows must be a positive integer/);
    expect(() => csv({ columns: [] })).toThrow(/csv: columns must be a non-empty array/);
    expect(() => new ExactlyOnceFileSink(fresh('x'), { format: { name: 'x' } as never })).toThrow(/format must be jsonLines\(\), csv/);
  });
});

describe('on a local directory', () => {
  it('Parquet: one file per checkpoint (parts roll at every barrier), each read by DuckDB', async () => {
    const dir = fresh('local-pq');
    const sink = new ExactlyOnceFileSink<Row>(dir, { format: parquet({ columns: COLUMNS }), compactBelow: 0 });
    const w = sink.createWriter(ctx());
    const c = sink.createCommitter(ctx());
    const all: Row[] = [];
    for (let chk = 1; chk <= 4; chk++) {
      const xs = Array.from({ length: 50 }, (_, i) => row(chk * 100 + i));
      w.write(xs, ts(xs.length));
      all.push(...xs);
      await checkpoint(w, c, chk);
    }
    await c.close?.();
    const files = committed(dir, 'parquet');
    expect(files).toHaveLength(4);
    for (const f of files) expect(await parquetLayout(f)).toEqual({ rows: 50, rowGroups: 1 });
    expect((await readParquet(files)).sort(byTs)).toEqual(all.map(asRead));
    expect(readdirSync(dir).filter((f) => f.startsWith('.') && !f.startsWith('.weir-'))).toEqual([]);
    expect(sink.lastCommittedCheckpoint()).toBe(4);
  });

  it('Parquet compaction: small files\' row groups copied under one footer (every type, stats included), read by DuckDB; a file of another schema left alone', async () => {
    const dir = fresh('local-pq-compact');
    const columns = { s: 'string', i: 'int32', l: 'int64', d: 'double', fl: 'float', b: 'boolean', t: 'timestamp', j: 'json?', o: 'string?' } as const;
    // A committed file of an earlier run with another schema, same subtask: not merged.
    const other = new ExactlyOnceFileSink<Row>(dir, { format: parquet({ columns: COLUMNS }), compactBelow: 0 });
    const ow = other.createWriter(ctx());
    ow.write([row(1)], ts(1));
    await checkpoint(ow, other.createCommitter(ctx()), 1);
    const foreign = committed(dir, 'parquet');
    expect(foreign).toHaveLength(1);
    const sink = new ExactlyOnceFileSink<Record<string, unknown>>(dir, { format: parquet({ columns, rowGroupRows: 3 }), compactMinFiles: 3 });
    const w = sink.createWriter(ctx());
    const c = sink.createCommitter(ctx());
    const rec = (k: number) => ({ s: `s${k}`, i: k, l: BigInt(k) * 2n ** 40n, d: k / 3, fl: k / 2, b: k % 2 === 0, t: 1_700_000_000_000 + k, j: k % 3 === 0 ? null : { k }, o: k % 4 === 0 ? undefined : `o${k}` });
    const expected: Record<string, unknown>[] = [];
    for (let chk = 2; chk <= 4; chk++) {
      const xs = Array.from({ length: 5 }, (_, i) => rec(chk * 10 + i));
      w.write(xs, ts(xs.length));
      expected.push(...xs.map((x) => ({ ...x, l: String(x.l), t: new Date(x.t).toISOString().replace('T', ' ').replace('Z', '').replace(/\.?0+$/, ''), j: x.j === null ? null : JSON.stringify(x.j), o: x.o ?? null })));
      await checkpoint(w, c, chk);
    }
    await c.close?.();
    const files = committed(dir, 'parquet').filter((f) => !foreign.includes(f));
    expect(files).toHaveLength(1);
    expect(files[0]).toMatch(/-c0\.parquet$/);
    expect(await parquetLayout(files[0]!)).toEqual({ rows: 15, rowGroups: 6 }); // 3 files of a full group of 3 and the barrier's 2
    const byI = (a: Record<string, unknown>, b: Record<string, unknown>) => Number(a.i) - Number(b.i);
    expect((await readParquet(files)).sort(byI)).toEqual(expected.sort(byI));
    // Statistics survived the move: DuckDB's row-group pruning by them still finds the rows.
    expect((await readParquet(files)).filter((r) => Number(r.i) >= 40)).toHaveLength(5);
    expect(await readParquet(foreign)).toEqual([asRead(row(1))]);
    expect(readdirSync(dir).filter((f) => f.startsWith('.') && !f.startsWith('.weir-'))).toEqual([]);
  });

  it('CSV: a header and RFC 4180 quoting; compaction merges small files keeping the header once', async () => {
    const dir = fresh('local-csv');
    const sink = new ExactlyOnceFileSink<Record<string, unknown>>(dir, { format: csv({ columns: ['key', 'note', 'n'] }), compactMinFiles: 3 });
    const w = sink.createWriter(ctx());
    const c = sink.createCommitter(ctx());
    const recs = [{ key: 'a', note: 'plain', n: 1 }, { key: 'b', note: 'with, comma', n: 2 }, { key: 'c', note: 'say "hi"\nnext line', n: null }];
    for (let chk = 1; chk <= 3; chk++) {
      w.write([recs[chk - 1]!], ts(1));
      await checkpoint(w, c, chk);
    }
    await c.close?.();
    const files = committed(dir, 'csv');
    expect(files).toHaveLength(1); // three files merged into one
    const text = readFileSync(files[0]!, 'utf8');
    expect(text.split('\n')[0]).toBe('key,note,n');
    expect(text.match(/key,note,n/g)).toHaveLength(1);
    expect(await readCsv(files)).toEqual([{ key: 'a', note: 'plain', n: '1' }, { key: 'b', note: 'with, comma', n: '2' }, { key: 'c', note: 'say "hi"\nnext line', n: null }]);
  });

  it('JSON lines stay the default (.jsonl), and jsonLines(fn) formats each line', async () => {
    const dir = fresh('local-jsonl');
    const sink = new ExactlyOnceFileSink<number>(dir, { format: jsonLines((v) => `n=${String(v)}`) });
    const w = sink.createWriter(ctx());
    w.write([1, 2], ts(2));
    await checkpoint(w, sink.createCommitter(ctx()), 1);
    const files = committed(dir, 'jsonl');
    expect(files.map((f) => readFileSync(f, 'utf8'))).toEqual(['n=1\nn=2\n']);
    expect(new ExactlyOnceFileSink(fresh('d')).format.extension).toBe('jsonl');
  });

  it('JSON lines by default keep Maps, Sets and bigints, and reject an undefined record (MALFORMED_RECORD) instead of writing "undefined"', async () => {
    const dir = fresh('local-jsonl-types');
    const sink = new ExactlyOnceFileSink<unknown>(dir);
    const w = sink.createWriter(ctx());
    w.write([{ m: new Map([['a', 1]]), s: new Set(['x']), n: 7n }], ts(1));
    expect(() => w.write([undefined], ts(1))).toThrow(/a record does not fit the format: a record of undefined has no JSON form/);
    await checkpoint(w, sink.createCommitter(ctx()), 1);
    expect(committed(dir, 'jsonl').map((f) => readFileSync(f, 'utf8'))).toEqual(['{"m":{"a":1},"s":["x"],"n":"7"}\n']);
  });

  it('a record that does not fit the schema fails the writer with one line naming the column', () => {
    const sink = new ExactlyOnceFileSink<unknown>(fresh('bad'), { format: parquet({ columns: COLUMNS }) });
    const w = sink.createWriter(ctx());
    const err = (v: unknown) => {
      try {
        w.write([v], ts(1));
      } catch (e) {
        return e as Error & { code?: string };
      }
      throw new Error('no error');
    };
    const missing = err({ key: 'a', value: 1 });
    expect(missing.code).toBe('MALFORMED_RECORD');
    expect(missing.message).toMatch(/^exactly-once file sink .*bad-\d+ \(Parquet\): a record does not fit the format: column "ts" \(int64\) is missing and not nullable; set malformed: 'dead-letter' on the sink to leave such records out$/);
    expect(err({ key: 'a', ts: '12', value: 1 }).message).toMatch(/column "ts" must be an int64 \(a safe integer number or a bigint\), got string "12"/);
    expect(err({ key: 'a', ts: 1, value: 'x' }).message).toMatch(/column "value" must be a number \(double\), got string "x"/);
    expect(err({ key: 7, ts: 1, value: 1 }).message).toMatch(/column "key" must be a string, got number 7/);
    expect(err('text').message).toMatch(/a Parquet record must be an object with the columns as fields, got string "text"/);
    for (const e of [missing]) expect(e.message).not.toMatch(/\n/);
    w.close?.();
  });

  it('through a job: the bad record fails the job naming the column', async () => {
    const dir = fresh('bad-job');
    const result = await runJob(defineJob((env) => {
      env.fromGenerator((i) => (i === 5 ? { key: 'x', ts: i } : row(i)), { count: 10 }).sinkTo(new ExactlyOnceFileSink(dir, { format: parquet({ columns: COLUMNS }) }));
    }), { workers: 1, parallelism: 1, stdout: () => {}, log: () => {} });
    expect(result.status).toBe('FAILED');
    expect(result.error?.message).toMatch(/column "value" \(double\) is missing and not nullable/);
  });

  it('malformed: \'dead-letter\' leaves such records out of the file and hands them to the job\'s dead letters', async () => {
    const dir = fresh('dead');
    const sink = new ExactlyOnceFileSink<unknown>(dir, { format: parquet({ columns: COLUMNS }), malformed: 'dead-letter' });
    const letters: MalformedRecord[] = [];
    const w = sink.createWriter(ctx(undefined, 0, 1, undefined, [], letters));
    w.write([row(1), { key: 'x', ts: 2 }, row(3), { key: 'y', ts: 4, value: 'NaN' }], ts(4));
    await checkpoint(w, sink.createCommitter(ctx()), 1);
    expect(await readParquet(committed(dir, 'parquet'))).toEqual([asRead(row(1)), asRead(row(3))]);
    expect(letters.map((l) => [l.error, JSON.parse(l.raw)])).toEqual([
      ['column "value" (double) is missing and not nullable', { key: 'x', ts: 2 }],
      ['column "value" must be a number (double), got string "NaN"', { key: 'y', ts: 4, value: 'NaN' }],
    ]);
  });
  it('a record its format cannot write (an Invalid Date in CSV, a cycle in JSON) is a dead letter under malformed: \'dead-letter\', not a broken writer failing every restart', async () => {
    const cyclic: Record<string, unknown> = { id: 2 };
    cyclic.self = cyclic;
    for (const [name, format, bad, good] of [
      ['csv', csv({ columns: ['a', 'b'] }), { a: 0, b: new Date(Number.NaN) }, { a: 1, b: new Date(0) }],
      ['jsonl', undefined, cyclic, { id: 1 }],
    ] as const) {
      const dir = fresh(`unwritable-${name}`);
      const sink = new ExactlyOnceFileSink<unknown>(dir, { ...(format !== undefined ? { format } : {}), malformed: 'dead-letter' });
      const letters: MalformedRecord[] = [];
      const w = sink.createWriter(ctx(undefined, 0, 1, undefined, [], letters));
      w.write([good, bad], ts(2)); // before: threw "Invalid time value" / "Converting circular structure to JSON"
      await checkpoint(w, sink.createCommitter(ctx()), 1);
      expect(committed(dir, name).length, name).toBe(1);
      expect(letters.map((l) => l.error), name).toEqual([expect.stringMatching(name === 'csv' ? /^cannot be written as a CSV row: Invalid time value/ : /^cannot be written as a JSON line: .*circular/i)]);
    }
  });
});

describe('values a format would change', () => {
  it('Parquet json column: bigints, Maps and Sets as JSON lines writes them (were an imprecise number and {}); a function, a cycle or a throwing getter is a dead letter at its record, not a failure at every barrier', async () => {
    const dir = fresh('pq-json-values');
    const sink = new ExactlyOnceFileSink<unknown>(dir, { format: parquet({ columns: { id: 'int32', j: 'json?' } }), malformed: 'dead-letter' });
    const letters: MalformedRecord[] = [];
    const w = sink.createWriter(ctx(undefined, 0, 1, undefined, [], letters));
    const cyclic: Record<string, unknown> = {};
    cyclic.self = cyclic;
    const throwing = { get x(): number { throw new Error('getter boom'); } };
    w.write([
      { id: 1, j: { n: 2n ** 63n - 1n } }, { id: 2, j: new Map([['a', 1]]) }, { id: 3, j: { tags: new Set(['x', 'y']) } }, { id: 4, j: 'text' },
      { id: 5, j: () => 1 }, { id: 6, j: cyclic }, { id: 7, j: throwing },
    ], ts(7));
    await checkpoint(w, sink.createCommitter(ctx()), 1);
    expect(await readParquet(committed(dir, 'parquet'))).toEqual([
      { id: 1, j: '{"n":"9223372036854775807"}' }, { id: 2, j: '{"a":1}' }, { id: 3, j: '{"tags":["x","y"]}' }, { id: 4, j: '"text"' },
    ]);
    expect(letters.map((l) => l.error)).toEqual([
      'column "j" cannot be written as JSON, got function',
      expect.stringMatching(/^column "j" cannot be written as JSON: .*circular/i),
      'column "j" cannot be written as JSON: getter boom',
    ]);
  });

  it('a field missing from a record is missing also when its column is named as Object.prototype\'s (constructor, toString): before, the inherited function was written or refused', async () => {
    const dir = fresh('pq-proto-names');
    const sink = new ExactlyOnceFileSink<unknown>(dir, { format: parquet({ columns: { id: 'int32', constructor: 'json?', toString: 'string?' } as const }) });
    const w = sink.createWriter(ctx());
    w.write([{ id: 1 }, { id: 2, constructor: { a: 1 }, toString: 'own' }], ts(2));
    await checkpoint(w, sink.createCommitter(ctx()), 1);
    expect(await readParquet(committed(dir, 'parquet'))).toEqual([{ id: 1, constructor: null, toString: null }, { id: 2, constructor: '{"a":1}', toString: 'own' }]);
    const csvDir = fresh('csv-proto-names');
    const csvSink = new ExactlyOnceFileSink<unknown>(csvDir, { format: csv({ columns: ['id', 'constructor'] }) });
    const cw = csvSink.createWriter(ctx());
    cw.write([{ id: 1 }], ts(1));
    await checkpoint(cw, csvSink.createCommitter(ctx()), 1);
    expect(readFileSync(committed(csvDir, 'csv')[0]!, 'utf8')).toBe('id,constructor\n1,\n');
  });

  it('a row group is written once its rows hold rowGroupBytes (about), and a part\'s size bound counts buffered rows: before, 20,000 rows of 10 KB waited in memory for the barrier and made one 180 MiB file under maxPartSize 1 MiB', async () => {
    const e = parquet({ columns: { id: 'int32', s: 'string' }, rowGroupBytes: 1000 }).open('test');
    const reject = (_v: unknown, why: string) => {
      throw new Error(why);
    };
    const wide = (id: number) => ({ id, s: 'x'.repeat(300) });
    expect(e.encode([wide(1), wide(2), wide(3)], reject)).toBeUndefined();
    expect([e.bufferedRows, e.bufferedBytes]).toEqual([3, 3 * 308]);
    expect(e.encode([wide(4)], reject)?.byteLength).toBeGreaterThan(0); // the fourth passes 1000 bytes: a row group
    expect([e.bufferedRows, e.bufferedBytes]).toEqual([0, 0]);
    expect(() => parquet({ columns: { id: 'int32' }, rowGroupBytes: 0 })).toThrow(/rowGroupBytes must be a positive integer/);
    expect(() => parquet({ columns: { id: 'int32' }, compression: 'GZIP' } as never)).toThrow('parquet: unknown option "compression"; the options are columns, rowGroupRows, rowGroupBytes, maxRowGroups, codec');

    const dir = fresh('pq-part-size');
    const sink = new ExactlyOnceFileSink<unknown>(dir, { format: parquet({ columns: { id: 'int32', s: 'string' } }), maxPartSize: 10_000, compactBelow: 0 });
    const w = sink.createWriter(ctx());
    for (let i = 0; i < 100; i++) w.write([{ id: i, s: 'y'.repeat(1000) }], ts(1));
    await checkpoint(w, sink.createCommitter(ctx()), 1);
    const files = committed(dir, 'parquet');
    expect(files.length).toBeGreaterThanOrEqual(9); // 100 rows of ~1 KB in parts of ~10 KB
    expect((await readParquet(files)).map((r) => r.id).sort((a, b) => Number(a) - Number(b))).toEqual(Array.from({ length: 100 }, (_, i) => i));
  });

  it('a float column refuses a finite number beyond its range (it was stored as Infinity); infinities and NaN stay', async () => {
    const dir = fresh('pq-float');
    const sink = new ExactlyOnceFileSink<unknown>(dir, { format: parquet({ columns: { id: 'int32', f: 'float' } }), malformed: 'dead-letter' });
    const letters: MalformedRecord[] = [];
    const w = sink.createWriter(ctx(undefined, 0, 1, undefined, [], letters));
    w.write([{ id: 1, f: 1e40 }, { id: 2, f: 3e38 }, { id: 3, f: Number.POSITIVE_INFINITY }], ts(3));
    await checkpoint(w, sink.createCommitter(ctx()), 1);
    expect((await readParquet(committed(dir, 'parquet'))).map((r) => r.id)).toEqual([2, 3]);
    expect(letters.map((l) => l.error)).toEqual(['column "f" must be a number within a float\'s range (about ±3.4e38), got number 1e+40']);
  });

  it('CSV: an object field is written as JSON lines writes it (Maps and Sets were {}, a nested bigint refused); a function field is refused, not written as its source', async () => {
    const dir = fresh('csv-values');
    const sink = new ExactlyOnceFileSink<unknown>(dir, { format: csv({ columns: ['id', 'v'] }), malformed: 'dead-letter' });
    const letters: MalformedRecord[] = [];
    const w = sink.createWriter(ctx(undefined, 0, 1, undefined, [], letters));
    w.write([{ id: 1, v: new Map([['k', 'v']]) }, { id: 2, v: new Set(['a']) }, { id: 3, v: { n: 2n ** 64n } }, { id: 4, v: function secret() { return 1; } }], ts(4));
    await checkpoint(w, sink.createCommitter(ctx()), 1);
    expect(readFileSync(committed(dir, 'csv')[0]!, 'utf8')).toBe('id,v\n1,"{""k"":""v""}"\n2,"[""a""]"\n3,"{""n"":""18446744073709551616""}"\n');
    expect(letters.map((l) => l.error)).toEqual(['cannot be written as a CSV row: a field holds a function, which a CSV file cannot hold']);
  });
});

/** A job that fails once, right after a checkpoint completed, and restarts from it (restart strategy). */
function restoringJob(sinkOf: () => ExactlyOnceFileSink<Row>, count: number, ratePerSecond = 5000) {
  let failures = 0;
  let checkpointed = false;
  const build = (env: StreamExecutionEnvironment) => {
    env
      .fromGenerator(row, { count, ratePerSecond })
      .process({
        processElement(v: Row, _ctx, o) {
          if (checkpointed && failures === 0 && v.ts >= count / 2) {
            failures++;
            throw new Error('injected failure after a checkpoint');
          }
          o.collect(v);
        },
        notifyCheckpointComplete(id: number) {
          if (id >= 2) checkpointed = true;
        },
      })
      .uid('fail-once')
      .sinkTo(sinkOf())
      .uid('sink');
  };
  return { build, failures: () => failures };
}

async function runRestoring(build: (env: StreamExecutionEnvironment) => void, chk: string, extra: RunOptions = {}) {
  return runJob(defineJob(build), {
    workers: 1, parallelism: 1, stdout: () => {}, log: () => {},
    checkpoint: { interval: 25, dir: chk },
    restartStrategy: { type: 'fixed-delay', attempts: 1, delay: 0 },
    ...extra,
  });
}

it('local: a failure after a checkpoint restores it; the committed Parquet files hold exactly the failure-free rows', async () => {
  const count = 3000;
  let dir = '';
  let job!: ReturnType<typeof restoringJob>;
  // The failure waits for a completed checkpoint; on a loaded machine the run is repeated slower until one completes first.
  const result = await runUntilFailedAfterCheckpoint('parquet sink, local', (slowdown) => {
    dir = fresh('job-local');
    // Not compacted, so the files show the checkpoints (each closes its files here).
    job = restoringJob(() => new ExactlyOnceFileSink<Row>(dir, { format: parquet({ columns: COLUMNS }), compactBelow: 0 }), count, 5000 / slowdown);
    return runRestoring(job.build, fresh('chk'));
  }, () => job.failures() > 0);
  expect(result.status, result.error?.message).toBe('FINISHED');
  expect(job.failures()).toBe(1);
  const files = committed(dir, 'parquet');
  expect(files.length).toBeGreaterThanOrEqual(3);
  expect((await readParquet(files)).sort(byTs)).toEqual(Array.from({ length: count }, (_, i) => asRead(row(i))));
  expect(readdirSync(dir).filter((f) => f.startsWith('.part-'))).toEqual([]);
}, 60_000);

describe('on s3rver', () => {
  let server: S3TestServer;
  let store: S3ObjectStore;
  let settings: S3Settings;
  let n = 0;
  beforeAll(async () => {
    server = await startS3Server();
    settings = { ...server.settings, uploadPartSize: 5 * MiB };
    store = new S3ObjectStore(resolveS3Config(settings));
  });
  afterAll(async () => {
    await store?.close();
    await server?.close();
  });
  const out = () => `s3://${server.bucket}/pq-${n++}`;
  const prefixOf = (ref: string) => ref.slice(`s3://${server.bucket}/`.length);

  /** Downloads the committed part files under the prefix, for DuckDB; returns their local paths. */
  async function download(ref: string, ext: string): Promise<string[]> {
    const listed = await store.list(server.bucket, `${prefixOf(ref)}/part-`);
    const dir = fresh('dl');
    rmSync(dir, { recursive: true, force: true });
    const paths: string[] = [];
    for (const o of [...listed.objects].sort((a, b) => (a.key < b.key ? -1 : 1))) {
      if (!o.key.endsWith(`.${ext}`)) continue;
      const p = join(work, `dl-${seq++}-${o.key.split('/').pop()}`);
      writeFileSync(p, (await store.getObject(server.bucket, o.key))!);
      paths.push(p);
    }
    return paths;
  }
  const uploads = async (ref: string) => (await store.listMultipartUploads(server.bucket, `${prefixOf(ref)}/`)).length;

  /** Wide rows that do not compress (hex of hashes): about 1 KiB each, so full 5 MiB parts go up. */
  interface Wide { readonly ts: number; readonly blob: string }
  const wide = (i: number): Wide => ({ ts: i, blob: Array.from({ length: 16 }, (_, j) => createHash('sha256').update(`${i}/${j}`).digest('hex')).join('').slice(0, 1000) });

  it('a part stays open across checkpoints (a row group per barrier, parts uploaded); a restore completes it from parts, tail and footer: exactly the rows up to the checkpoint', async () => {
    const ref = out();
    const format = parquet({ columns: { ts: 'int64', blob: 'string' }, rowGroupRows: 1000, codec: 'UNCOMPRESSED' });
    const sink = new ExactlyOnceFileSink<Wide>(ref, { s3: settings, format });
    const w = sink.createWriter(ctx());
    const c = sink.createCommitter(ctx());
    const before = Array.from({ length: 6500 }, (_, i) => wide(i));
    for (let i = 0; i < before.length; i += 250) w.write(before.slice(i, i + 250), ts(250));
    const c1 = await checkpoint(w, c, 1);
    expect(c1).toHaveLength(1);
    expect(c1[0]!.final).toMatch(/\.parquet$/);
    expect(c1[0]!.s3).toMatchObject({ kind: 'open', checkpointId: 1 });
    expect(c1[0]!.s3!.parts).toBeGreaterThanOrEqual(1); // full parts went up before the barrier
    const tail = Buffer.from(c1[0]!.s3!.tail!, 'base64');
    expect(tail.subarray(tail.byteLength - 4).toString()).toBe('PAR1'); // the footer that closes the file now
    expect(await download(ref, 'parquet')).toEqual([]); // nothing visible: the part is open
    // The attempt goes on past checkpoint 1 (more row groups, more parts), then dies before checkpoint 2 completes.
    const after = Array.from({ length: 6000 }, (_, i) => wide(before.length + i));
    for (let i = 0; i < after.length; i += 250) w.write(after.slice(i, i + 250), ts(250));
    w.prepareCommit(2);
    await w.whenPrepared?.(2);
    w.close?.();
    // A new process restores checkpoint 1.
    const log: string[] = [];
    const restored = new ExactlyOnceFileSink<Wide>(ref, { s3: settings, format });
    await restored.recover(ctx(new ManualClock(0), 0, 1, 1, log), 1, c1, c1);
    const files = await download(ref, 'parquet');
    expect(files).toHaveLength(1);
    const rows = await readParquet(files);
    expect(rows.length).toBe(before.length);
    expect(rows.sort(byTs)).toEqual(before.map((r) => ({ ts: String(r.ts), blob: r.blob })));
    expect(await parquetLayout(files[0]!)).toEqual({ rows: before.length, rowGroups: 7 }); // 6 full groups and the one flushed at the barrier
    expect(await uploads(ref)).toBe(0);
  }, 60_000);

  it('a part open across checkpoints closes at maxRowGroups row groups: before, every barrier rewrote a footer listing every group of the file, growing with its age', async () => {
    const ref = out();
    const sink = new ExactlyOnceFileSink<Wide>(ref, { s3: settings, format: parquet({ columns: { ts: 'int64', blob: 'string' }, maxRowGroups: 3 }) });
    const w = sink.createWriter(ctx());
    const c = sink.createCommitter(ctx());
    const all: Wide[] = [];
    for (let chk = 1; chk <= 8; chk++) {
      const xs = Array.from({ length: 10 }, (_, i) => wide(chk * 100 + i));
      w.write(xs, ts(xs.length));
      all.push(...xs);
      await checkpoint(w, c, chk);
    }
    w.finish?.();
    await checkpoint(w, c, 9);
    const files = await download(ref, 'parquet');
    expect(files).toHaveLength(3); // 8 row groups, 3 to a file
    for (const f of files) expect((await parquetLayout(f)).rowGroups).toBeLessThanOrEqual(3);
    expect((await readParquet(files)).sort(byTs)).toEqual(all.map((r) => ({ ts: String(r.ts), blob: r.blob })));
    expect(() => parquet({ columns: { ts: 'int64' }, maxRowGroups: 0 })).toThrow(/maxRowGroups must be a positive integer/);
  }, 60_000);

  it('a job with a failure after a checkpoint: the open file is completed as at the checkpoint, the committed Parquet objects hold exactly the failure-free rows', async () => {
    const count = 3000;
    let ref = '';
    let job!: ReturnType<typeof restoringJob>;
    const result = await runUntilFailedAfterCheckpoint('parquet sink, s3', (slowdown) => {
      ref = out();
      job = restoringJob(() => new ExactlyOnceFileSink<Row>(ref, { format: parquet({ columns: COLUMNS }) }), count, 5000 / slowdown);
      return runRestoring(job.build, fresh('chk'), { s3: settings });
    }, () => job.failures() > 0);
    expect(result.status, result.error?.message).toBe('FINISHED');
    expect(job.failures()).toBe(1);
    const files = await download(ref, 'parquet');
    expect(files).toHaveLength(2); // the file open at the restored checkpoint, then the new attempt's (rolling by age is longer than the job)
    const layouts = await Promise.all(files.map(parquetLayout));
    expect(layouts.some((l) => l.rowGroups > 1)).toBe(true); // a row group per barrier, one file across checkpoints
    expect((await readParquet(files)).sort(byTs)).toEqual(Array.from({ length: count }, (_, i) => asRead(row(i))));
    expect(await uploads(ref)).toBe(0);
  }, 60_000);

  it('a job whose S3 sink leaves malformed records out counts them all and shows the first ten (before: uncounted, lost after ten)', async () => {
    const lines: string[] = [];
    const r = await runJob(defineJob((env) => {
      env.fromGenerator((i) => (i % 4 === 1 ? { key: 'x', ts: i } : row(i)), { count: 60 })
        .sinkTo(new ExactlyOnceFileSink(out(), { s3: settings, format: parquet({ columns: COLUMNS }), malformed: 'dead-letter' }));
    }), { workers: 1, parallelism: 1, stdout: () => {}, log: (l) => lines.push(l) });
    expect(r.status).toBe('FINISHED');
    expect(r.progress.deadLetters).toBe(15);
    expect(r.deadLetterDir).toBeUndefined();
    expect(lines.filter((l) => l.startsWith('weir: dead letter from '))).toHaveLength(10);
    expect(lines.filter((l) => l.includes('counted but not shown'))).toHaveLength(1);
  });

  it('CSV on S3: committed objects read by DuckDB', async () => {
    const ref = out();
    const sink = new ExactlyOnceFileSink<Row>(ref, { s3: settings, format: csv({ columns: ['key', 'ts', 'value'] }) });
    const w = sink.createWriter(ctx());
    const c = sink.createCommitter(ctx());
    w.write([row(1), row(2)], ts(2));
    await checkpoint(w, c, 1);
    w.write([row(3)], ts(1));
    w.finish?.();
    await checkpoint(w, c, 2);
    w.close?.();
    const files = await download(ref, 'csv');
    expect(files).toHaveLength(1);
    expect(await readCsv(files)).toEqual([1, 2, 3].map((i) => ({ key: row(i).key, ts: String(i), value: String(row(i).value) })));
  });
});

describe('a job\'s file sink with malformed: \'dead-letter\'', () => {
  const job = (dir: string) => defineJob((env) => {
    env.fromGenerator((i) => (i % 5 === 2 ? { key: 'x', ts: i } : row(i)), { count: 20 })
      .sinkTo(new ExactlyOnceFileSink(dir, { format: parquet({ columns: COLUMNS }), malformed: 'dead-letter' }));
  });
  const lettersIn = (dir: string) => readdirSync(dir).flatMap((f) => readFileSync(join(dir, f), 'utf8').split('\n').filter((l) => l !== '').map((l) => JSON.parse(l) as { source: string; raw: string }));

  it('counts them and writes them beside the output by default', async () => {
    const dir = fresh('job-beside');
    const r = await runJob(job(dir), { workers: 1, parallelism: 2, stdout: () => {}, log: () => {} });
    expect(r.status).toBe('FINISHED');
    expect(r.progress.deadLetters).toBe(4);
    expect(lettersIn(`${dir}.dead-letters`).map((l) => JSON.parse(l.raw).ts).sort((a, b) => a - b)).toEqual([2, 7, 12, 17]);
  });

  it('writes them to --dead-letter-dir when given, not beside the output (before: always beside)', async () => {
    const dir = fresh('job-given');
    const given = fresh('job-given-letters');
    const r = await runJob(job(dir), { workers: 1, parallelism: 1, stdout: () => {}, log: () => {}, deadLetterDir: given });
    expect(r.status).toBe('FINISHED');
    expect(r.progress.deadLetters).toBe(4);
    expect(existsSync(`${dir}.dead-letters`)).toBe(false);
    expect(lettersIn(given).map((l) => JSON.parse(l.raw).ts)).toEqual([2, 7, 12, 17]);
  });
});

it('the dead-letter directory is not made when every record fits', () => {
  const dir = fresh('clean');
  const sink = new ExactlyOnceFileSink<Row>(dir, { format: parquet({ columns: COLUMNS }), malformed: 'dead-letter' });
  const w = sink.createWriter(ctx());
  w.write([row(1)], ts(1));
  w.prepareCommit(1);
  expect(existsSync(`${dir}.dead-letters`)).toBe(false);
});
