/**
 * The bounded file source: JSON lines and CSV, one file or a directory, chunk boundaries,
 * malformed records (fail or dead-letter) and missing paths.
 */
import { afterAll, describe, expect, it } from 'vitest';
import { mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DEAD_LETTERS, defineJob, runJob, type MalformedRecord, type StreamExecutionEnvironment } from '../../src/index.ts';
import { runInline } from '../helpers/run.ts';
import { csv } from '../../src/connectors/file/formats.ts';
import { failureOf } from '../api/util.ts';

const root = mkdtempSync(join(tmpdir(), 'weir-files-'));
afterAll(() => rmSync(root, { recursive: true, force: true }));

let fileNo = 0;
/** Writes a file (string or bytes) into a fresh directory and returns its path. */
function file(name: string, content: string | Buffer): string {
  const dir = join(root, `f${fileNo++}`);
  mkdirSync(dir, { recursive: true });
  const p = join(dir, name);
  writeFileSync(p, content);
  return p;
}

async function read<T = unknown>(build: (env: StreamExecutionEnvironment) => void, parallelism = 1): Promise<{ main: T[]; dead: MalformedRecord[] }> {
  const r = await runInline(build, { parallelism });
  return { main: r.collected<T>('main'), dead: r.collected<MalformedRecord>('dead') };
}

describe('JSON lines', () => {
  it('reads one JSON value per line, in order; blank lines are skipped', async () => {
    const p = file('events.jsonl', '{"a":1}\n{"a":2,"b":"x"}\n\n[1,2]\n"str"\n42\nnull\n');
    const { main } = await read((env) => void env.fromFile(p).collect('main'));
    expect(main).toEqual([{ a: 1 }, { a: 2, b: 'x' }, [1, 2], 'str', 42, null]);
  });

  it('CRLF line endings, and a final line without a newline', async () => {
    const p = file('crlf.jsonl', '{"n":1}\r\n{"n":2}\r\n\r\n{"n":3}');
    const { main } = await read((env) => void env.fromFile(p).collect('main'));
    expect(main).toEqual([{ n: 1 }, { n: 2 }, { n: 3 }]);
  });

  it('a UTF-8 byte order mark at the start of the file is not part of the first record', async () => {
    const p = file('bom.jsonl', Buffer.concat([Buffer.from([0xef, 0xbb, 0xbf]), Buffer.from('{"first":true}\n{"first":false}\n')]));
    const { main } = await read((env) => void env.fromFile(p).collect('main'));
    expect(main).toEqual([{ first: true }, { first: false }]);
  });

  it('an empty file gives no records', async () => {
    const p = file('empty.jsonl', '');
    const { main } = await read((env) => void env.fromFile(p).collect('main'));
    expect(main).toEqual([]);
  });

  it('a file much larger than the chunk size, with multi-byte characters across chunk boundaries', async () => {
    // Lines of varying length (some longer than a chunk) full of 2-, 3- and 4-byte characters,
    // so that with 64-byte chunks many characters and line ends straddle a boundary.
    const glyphs = ['é', 'ß', '漢', '字', '😀', '🚀', 'a', '"', '\\'];
    const records = Array.from({ length: 400 }, (_, i) => ({
      i,
      text: Array.from({ length: (i * 37) % 90 }, (_, k) => glyphs[(i + k) % glyphs.length]).join(''),
    }));
    const content = records.map((r) => JSON.stringify(r)).join('\n') + '\n';
    expect(Buffer.byteLength(content)).toBeGreaterThan(400 * 64);
    const p = file('big.jsonl', content);
    for (const chunkSize of [64, 65, 100, 4096]) {
      const { main, dead } = await read((env) => {
        const s = env.fromFile(p, { chunkSize, malformed: 'dead-letter' });
        s.collect('main');
        s.getSideOutput(DEAD_LETTERS).collect('dead');
      });
      expect(dead, `chunkSize ${chunkSize}`).toEqual([]);
      expect(main, `chunkSize ${chunkSize}`).toEqual(records);
    }
  });
});

describe('CSV', () => {
  it('a header line names the fields; numbers and booleans are cast by default (leading zeros stay text)', async () => {
    const p = file('people.csv', 'name,age,member,score\nada,36,true,1.5\nbob,7,false,-2e3\ncy,,x,007\n');
    const { main } = await read((env) => void env.fromFile(p).collect('main'));
    expect(main).toEqual([
      { name: 'ada', age: 36, member: true, score: 1.5 },
      { name: 'bob', age: 7, member: false, score: -2000 },
      { name: 'cy', age: '', member: 'x', score: '007' },
    ]);
  });

  it('cast keeps an integer beyond 2^53 as text (before: its last digits changed); smaller ones and decimals are numbers', async () => {
    const p = file('ids.csv', 'id,n\n9007199254740993,9007199254740991\n12345678901234567890,1.5e300\n');
    const { main } = await read((env) => void env.fromFile(p).collect('main'));
    expect(main).toEqual([{ id: '9007199254740993', n: 9007199254740991 }, { id: '12345678901234567890', n: 1.5e300 }]);
  });

  it('cast: false keeps every field as text', async () => {
    const p = file('raw.csv', 'id,flag\n01,true\n');
    const { main } = await read((env) => void env.fromFile(p, { csv: { cast: false } }).collect('main'));
    expect(main).toEqual([{ id: '01', flag: 'true' }]);
  });

  it('no header: with columns records are objects, without them arrays', async () => {
    const p = file('nohead.csv', '1,a\n2,b\n');
    const { main: objs } = await read((env) => void env.fromFile(p, { csv: { columns: ['n', 's'] } }).collect('main'));
    expect(objs).toEqual([{ n: 1, s: 'a' }, { n: 2, s: 'b' }]);
    const { main: arrays } = await read((env) => void env.fromFile(p, { csv: { header: false } }).collect('main'));
    expect(arrays).toEqual([[1, 'a'], [2, 'b']]);
  });

  it('quoted fields may hold the delimiter and doubled quotes; empty quoted fields stay empty; a quoted number is text', async () => {
    const p = file('quoted.csv', 'a,b,c\n"x, y","say ""hi""",plain\n"",3,"4"\n"""",",",""""""\n');
    const { main } = await read((env) => void env.fromFile(p).collect('main'));
    expect(main).toEqual([
      { a: 'x, y', b: 'say "hi"', c: 'plain' },
      { a: '', b: 3, c: '4' },
      { a: '"', b: ',', c: '""' },
    ]);
  });

  it('a custom delimiter: one character or several', async () => {
    const semi = file('semi.csv', 'k;v\na;1,5\n"b;c";2\n');
    const { main: m1 } = await read((env) => void env.fromFile(semi, { csv: { delimiter: ';' } }).collect('main'));
    expect(m1).toEqual([{ k: 'a', v: '1,5' }, { k: 'b;c', v: 2 }]);
    const tabs = file('tabs.tsv', 'k\tv\nx\t1\n');
    const { main: m2 } = await read((env) => void env.fromFile(tabs, { format: 'csv', csv: { delimiter: '\t' } }).collect('main'));
    expect(m2).toEqual([{ k: 'x', v: 1 }]);
    const multi = file('multi.csv', 'k||v\nx||1|2\n');
    const { main: m3 } = await read((env) => void env.fromFile(multi, { csv: { delimiter: '||' } }).collect('main'));
    expect(m3).toEqual([{ k: 'x', v: '1|2' }]);
  });

  it('CRLF line endings (header included), blank lines and a final line without newline', async () => {
    const p = file('crlf.csv', 'a,b\r\n1,2\r\n\r\n3,4');
    const { main } = await read((env) => void env.fromFile(p).collect('main'));
    expect(main).toEqual([{ a: 1, b: 2 }, { a: 3, b: 4 }]);
  });

  it('a UTF-8 BOM before the header is not part of the first column name', async () => {
    const p = file('bom.csv', Buffer.concat([Buffer.from([0xef, 0xbb, 0xbf]), Buffer.from('id,name\n1,x\n')]));
    const { main } = await read((env) => void env.fromFile(p).collect('main'));
    expect(main).toEqual([{ id: 1, name: 'x' }]);
  });

  it('a UTF-8 BOM before the first data line (no header) is not part of the first field', async () => {
    const p = file('bom-nohead.csv', Buffer.concat([Buffer.from([0xef, 0xbb, 0xbf]), Buffer.from('1,x\n2,y\n')]));
    const { main } = await read((env) => void env.fromFile(p, { csv: { columns: ['id', 'name'] } }).collect('main'));
    expect(main).toEqual([{ id: 1, name: 'x' }, { id: 2, name: 'y' }]);
  });

  it('a header and rows larger than the chunk size, with multi-byte text', async () => {
    const cols = Array.from({ length: 12 }, (_, i) => `column_${i}_名前`);
    const rows = Array.from({ length: 120 }, (_, r) => cols.map((_, c) => `v${r}.${c}-ü😀${'x'.repeat((r * c) % 9)}`));
    const content = cols.join(',') + '\n' + rows.map((r) => r.join(',')).join('\n') + '\n';
    const p = file('wide.csv', content);
    const { main } = await read((env) => void env.fromFile(p, { chunkSize: 64 }).collect('main'));
    expect(main).toEqual(rows.map((r) => Object.fromEntries(cols.map((c, i) => [c, r[i]]))));
  });

  it('a header-only file gives no records', async () => {
    const p = file('header-only.csv', 'a,b\n');
    const { main } = await read((env) => void env.fromFile(p).collect('main'));
    expect(main).toEqual([]);
  });
});

describe('directories', () => {
  it('reads every file of a directory in sorted order, skipping hidden (.x) and _x files and subdirectories', async () => {
    const dir = join(root, 'dir-sorted');
    mkdirSync(join(dir, 'sub'), { recursive: true });
    writeFileSync(join(dir, 'b.jsonl'), '"b1"\n"b2"\n');
    writeFileSync(join(dir, 'a.jsonl'), '"a1"\n');
    writeFileSync(join(dir, 'c.jsonl'), '"c1"\n');
    writeFileSync(join(dir, '.hidden.jsonl'), '"hidden"\n');
    writeFileSync(join(dir, '_SUCCESS'), 'not json at all\n');
    writeFileSync(join(dir, 'sub', 'nested.jsonl'), '"nested"\n');
    const { main } = await read((env) => void env.fromFile(dir).collect('main'));
    expect(main).toEqual(['a1', 'b1', 'b2', 'c1']);
  });

  it('a directory of .csv files without a format is refused naming the file and the option (before: read as JSON lines, every line a malformed record)', async () => {
    const dir = join(root, 'dir-of-csv');
    mkdirSync(dir, { recursive: true });
    writeFileSync(join(dir, 'a.csv'), 'id,name\n1,x\n');
    await expect(runInline((env) => void env.fromFile(dir).collect('main'))).rejects.toThrow(`fromFile("${dir}"): the format was taken as JSON lines from the path, but it holds a.csv; give format: 'csv' (or 'jsonl') in fromFile's options`);
    const { main } = await read((env) => void env.fromFile(dir, { format: 'csv' }).collect('main'));
    expect(main).toEqual([{ id: 1, name: 'x' }]);
  });

  it('a symbolic link to a file is read like the file; one to a directory is not (before: links were skipped, their records lost)', async () => {
    const dir = join(root, 'dir-links');
    mkdirSync(join(dir, 'sub'), { recursive: true });
    const target = join(root, 'link-target.jsonl');
    writeFileSync(target, '"linked"\n');
    writeFileSync(join(dir, 'a.jsonl'), '"a1"\n');
    writeFileSync(join(dir, 'sub', 'n.jsonl'), '"nested"\n');
    symlinkSync(target, join(dir, 'b.jsonl'));
    symlinkSync(join(dir, 'sub'), join(dir, 'c-dir'));
    symlinkSync(join(root, 'no-such-file'), join(dir, 'd-dangling'));
    const { main } = await read((env) => void env.fromFile(dir).collect('main'));
    expect(main).toEqual(['a1', 'linked']);
  });

  it('one-column CSV written by the CSV sink format reads back every record, empty ones included (before: written as empty lines, skipped)', async () => {
    const enc = csv({ columns: ['name'] }).open('test');
    const bytes = enc.encode([{ name: 'a' }, { name: '' }, { name: null }, { name: 'b' }], () => {});
    const p = file('one-column.csv', Buffer.from(bytes!));
    const { main } = await read((env) => void env.fromFile(p, { format: 'csv' }).collect('main'));
    expect(main).toEqual([{ name: 'a' }, { name: '' }, { name: '' }, { name: 'b' }]);
  });

  it('CSV files of a directory each use their own header', async () => {
    const dir = join(root, 'dir-csv');
    mkdirSync(dir, { recursive: true });
    writeFileSync(join(dir, '1.csv'), 'x,y\n1,2\n');
    writeFileSync(join(dir, '2.csv'), 'y,z\n3,4\n');
    const { main } = await read((env) => void env.fromFile(dir, { format: 'csv' }).collect('main'));
    expect(main).toEqual([{ x: 1, y: 2 }, { y: 3, z: 4 }]);
  });

  it('files are spread over parallel readers; every record is read once', async () => {
    const dir = join(root, 'dir-parallel');
    mkdirSync(dir, { recursive: true });
    const want: number[] = [];
    for (let f = 0; f < 7; f++) {
      const lines: string[] = [];
      for (let i = 0; i < 300; i++) {
        lines.push(JSON.stringify(f * 1000 + i));
        want.push(f * 1000 + i);
      }
      writeFileSync(join(dir, `part-${f}.jsonl`), lines.join('\n') + '\n');
    }
    const r = await runInline((env) => {
      env
        .fromFile<number>(dir, { chunkSize: 256 })
        .process<[number, number]>({
          open(ctx) {
            (this as unknown as { sub: number }).sub = ctx.taskInfo.subtaskIndex;
          },
          processElement(v, _ctx, out) {
            out.collect([(this as unknown as { sub: number }).sub, v]);
          },
        })
        .collect('main');
    }, { parallelism: 3 });
    const out = r.collected<[number, number]>('main');
    expect(out.map((x) => x[1]).sort((a, b) => a - b)).toEqual(want);
    // File k is read by subtask k mod 3.
    expect(out.every(([sub, v]) => Math.floor(v / 1000) % 3 === sub)).toBe(true);
  });

  it('one file with more readers than files: the idle readers end, every record is read once', async () => {
    // splitSize Infinity: one split per file (by default this ~10 KB file would be cut into ranges).
    const p = file('single.jsonl', Array.from({ length: 2000 }, (_, i) => JSON.stringify(i)).join('\n'));
    const { main } = await read<number>((env) => void env.fromFile(p, { chunkSize: 128, splitSize: Infinity }).collect('main'), 4);
    expect(main).toEqual(Array.from({ length: 2000 }, (_, i) => i));
  });

  it('one file at parallelism 4 is cut into byte ranges read by several readers; every record is read once', async () => {
    const p = file('ranges.jsonl', Array.from({ length: 2000 }, (_, i) => JSON.stringify(i)).join('\n'));
    const r = await runInline((env) => {
      env.fromFile<number>(p, { chunkSize: 128 }).process<[number, number]>({
        open(ctx) {
          (this as unknown as { sub: number }).sub = ctx.taskInfo.subtaskIndex;
        },
        processElement(v, _ctx, out) {
          out.collect([(this as unknown as { sub: number }).sub, v]);
        },
      }).collect('main');
    }, { parallelism: 4 });
    const out = r.collected<[number, number]>('main');
    expect(out.map((x) => x[1]).sort((a, b) => a - b)).toEqual(Array.from({ length: 2000 }, (_, i) => i));
    // ~9.9 KB over 4 readers: ranges of at least 4 KiB, so 3 ranges on 3 readers.
    expect(new Set(out.map((x) => x[0])).size).toBe(3);
  });

  it('an empty directory gives no records', async () => {
    const dir = join(root, 'dir-empty');
    mkdirSync(dir, { recursive: true });
    const { main } = await read((env) => void env.fromFile(dir).collect('main'));
    expect(main).toEqual([]);
  });
});

describe('malformed records', () => {
  it('by default a malformed line fails the job with a message naming the file and line', async () => {
    const p = file('bad.jsonl', '{"ok":1}\n\n{"ok":2}\n{oops}\n{"ok":3}\n');
    const msg = await failureOf((env) => void env.fromFile(p).collect('main'));
    expect(msg).toContain(`malformed record at ${p}:4: `);
    expect(msg).toContain('(raw: {oops})');
    expect(msg).toContain("set malformed: 'dead-letter'");
  });

  it('a malformed line ends the job at once, no restart spent, whatever the restart strategy (before: the source wrapped it as USER_CODE and checkpointing\'s default strategy restarted for ever)', async () => {
    const p = file('bad-restarts.jsonl', '{"ok":1}\n{oops}\n{"ok":2}\n');
    const job = defineJob((env: StreamExecutionEnvironment) => void env.fromFile(p).map((r) => r).collect('main'));
    for (const restartStrategy of [undefined, { type: 'fixed-delay', attempts: 3, delay: '10ms' }] as const) {
      const lines: string[] = [];
      const r = await runJob(job, {
        workers: 1, stdout: () => {}, log: (l) => lines.push(l), ...(restartStrategy !== undefined ? { restartStrategy } : {}),
        checkpoint: { interval: '50ms', dir: join(root, `chk-bad-${restartStrategy?.type ?? 'default'}`) },
      });
      expect(r.status).toBe('FAILED');
      expect(r.error?.code).toBe('MALFORMED_RECORD');
      expect(r.error?.message).toContain(`malformed record at ${p}:2: `);
      expect(r.attempts, lines.join('\n')).toBe(1);
    }
  });

  it('a line longer than maxLineBytes is a dead letter of its first KiB, read past without holding it; the lines around it are read, also across chunks and at the end of the file (before: held whole, joined again at every chunk)', async () => {
    const long = `{"pad":"${'x'.repeat(300_000)}"}`;
    for (const tail of ['\n{"ok":3}\n', '']) {
      const p = file('long.jsonl', `{"ok":1}\n${long}\n{"ok":2}\n${'y'.repeat(5000)}${tail}`);
      const { main, dead } = await read((env) => {
        const s = env.fromFile(p, { malformed: 'dead-letter', chunkSize: 4096, maxLineBytes: 100_000 });
        s.collect('main');
        s.getSideOutput(DEAD_LETTERS).collect('dead');
      });
      expect(main).toEqual(tail === '' ? [{ ok: 1 }, { ok: 2 }] : [{ ok: 1 }, { ok: 2 }, { ok: 3 }]);
      expect(dead[0]!.error).toBe(`the line is ${long.length} bytes, longer than maxLineBytes (100000); its first bytes are kept`);
      expect(dead[0]!.raw).toBe(long.slice(0, 1024));
      expect(dead[0]!.location).toBe(`${p}:2`);
      expect(dead.length).toBe(2); // the 5000 y's: not JSON, under the bound
    }
    await expect(runInline((env) => void env.fromFile('x.jsonl', { maxLineBytes: 10 }))).rejects.toThrow('fromFile: maxLineBytes must be an integer >= 1024, got 10');
  });

  it('a CSV row with the wrong number of fields names the file, line and the expected columns', async () => {
    const p = file('short.csv', 'a,b,c\n1,2,3\n4,5\n');
    const msg = await failureOf((env) => void env.fromFile(p).collect('main'));
    expect(msg).toContain(`malformed record at ${p}:3: expected 3 fields (a, b, c), found 2 (raw: 4,5)`);
  });

  it('dead-letter routes malformed records to DEAD_LETTERS with location, raw and error, and loses no good record', async () => {
    const good = Array.from({ length: 300 }, (_, i) => ({ i }));
    const lines = good.map((g) => JSON.stringify(g));
    // Malformed lines at known places: line numbers are 1-based in the file.
    lines.splice(10, 0, '{broken');
    lines.splice(100, 0, 'not json 😀');
    lines.push('[1,');
    const p = file('mixed.jsonl', lines.join('\n') + '\n');
    const { main, dead } = await read((env) => {
      const s = env.fromFile(p, { malformed: 'dead-letter', chunkSize: 64 });
      s.collect('main');
      s.getSideOutput(DEAD_LETTERS).collect('dead');
    });
    expect(main).toEqual(good);
    expect(dead.map((d) => [d.location, d.raw, d.source])).toEqual([
      [`${p}:11`, '{broken', `file:${p}`],
      [`${p}:101`, 'not json 😀', `file:${p}`],
      [`${p}:303`, '[1,', `file:${p}`],
    ]);
    expect(dead.every((d) => typeof d.error === 'string' && d.error.length > 0)).toBe(true);
  });

  it('a line that is not valid UTF-8 is malformed, in JSON lines and in CSV (before: its bad bytes became U+FFFD and the record was accepted)', async () => {
    const bad = (before: string, after: string) => Buffer.concat([Buffer.from(before), Buffer.from([0xc3, 0x28]), Buffer.from(after)]);
    const jsonl = file('bad-utf8.jsonl', Buffer.concat([Buffer.from('{"id":1,"name":"ok \uFFFD kept"}\n'), bad('{"id":2,"name":"caf', '"}\n'), Buffer.from('{"id":3}\n')]));
    const csv = file('bad-utf8.csv', Buffer.concat([Buffer.from('id,name\n1,"two\nlines"\n'), bad('2,"caf', '\nmore"\n'), Buffer.from('3,x\n')]));
    for (const [p, good] of [[jsonl, [{ id: 1, name: 'ok \uFFFD kept' }, { id: 3 }]], [csv, [{ id: 1, name: 'two\nlines' }, { id: 3, name: 'x' }]]] as const) {
      const { main, dead } = await read((env) => {
        const s = env.fromFile(p, { malformed: 'dead-letter' });
        s.collect('main');
        s.getSideOutput(DEAD_LETTERS).collect('dead');
      });
      expect(main, p).toEqual(good);
      expect(dead.map((d) => [d.location, d.error]), p).toEqual([[`${p}:${p.endsWith('.csv') ? 4 : 2}`, 'the line is not valid UTF-8']]);
    }
  });

  it('a JSON record with a field named "__proto__" (escaped too) is malformed: a dead letter, never a record that changes between threads', async () => {
    // Line 5 escapes a letter of "proto" itself, so the text holds no "proto" (before: accepted).
    const p = file('proto.jsonl', ['{"a":1}', '{"a":2,"__proto__":{"admin":true}}', '{"a":3,"n":{"\\u005f_proto__":1}}', '{"a":4,"protocol":"tcp"}', '{"a":5,"__pr\\u006fto__":{"admin":true}}'].join('\n') + '\n');
    const { main, dead } = await read((env) => {
      const s = env.fromFile(p, { malformed: 'dead-letter' });
      s.collect('main');
      s.getSideOutput(DEAD_LETTERS).collect('dead');
    });
    expect(main).toEqual([{ a: 1 }, { a: 4, protocol: 'tcp' }]);
    expect(dead.map((d) => d.location)).toEqual([`${p}:2`, `${p}:3`, `${p}:5`]);
    expect(dead[0]!.error).toMatch(/a field named "__proto__" is not supported in a record/);
  });

  it('dead-letter for CSV: text after a quoted field; a quoted field never closed, whole, up to the end of the file', async () => {
    const p = file('badquotes.csv', 'a,b\n"x"y,2\nok,3\n"open,1\nrest,4\n');
    const { main, dead } = await read((env) => {
      const s = env.fromFile(p, { malformed: 'dead-letter' });
      s.collect('main');
      s.getSideOutput(DEAD_LETTERS).collect('dead');
    });
    expect(main).toEqual([{ a: 'ok', b: 3 }]);
    expect(dead.map((d) => [d.location, d.raw, d.error])).toEqual([
      [`${p}:2`, '"x"y,2', 'unexpected character "y" after a quoted field at column 4'],
      [`${p}:4`, '"open,1\nrest,4', 'the quoted field is not closed before the end of the split'],
    ]);
  });

  it('a quoted field may hold line breaks (RFC 4180), CRLF and blank lines among them; the records after it are read as usual (before: each line parsed alone, the rest of the field read as a record of its own)', async () => {
    const p = file('multiline.csv', 'a,b\r\n"x\r\n\r\ny",z\r\nq,"r\nr ""quoted"""\r\nlast,1\r\n');
    // Small reads: the records cross the chunks the file is read in.
    const { main, dead } = await read((env) => {
      const s = env.fromFile(p, { malformed: 'dead-letter', chunkSize: 64 });
      s.collect('main');
      s.getSideOutput(DEAD_LETTERS).collect('dead');
    });
    expect(main).toEqual([{ a: 'x\r\n\r\ny', b: 'z' }, { a: 'q', b: 'r\nr "quoted"' }, { a: 'last', b: 1 }]);
    expect(dead).toEqual([]);
  });

  it('a quote inside an unquoted field before a quoted field with a line break: the record closes where it ends (before: it swallowed the rest of the file); later lines keep their numbers', async () => {
    const long = 'q'.repeat(100); // the record of lines 5-7 crosses a 64-byte read
    const p = file('stray.csv', `a,b\nx"y,"multi\nline"\nz,w\n"p\n${long}\nr",1\ns,t\nbad\n`);
    for (const chunkSize of [64, 1 << 20]) {
      const { main, dead } = await read((env) => {
        const s = env.fromFile(p, { malformed: 'dead-letter', chunkSize });
        s.collect('main');
        s.getSideOutput(DEAD_LETTERS).collect('dead');
      });
      expect(main, `chunk ${chunkSize}`).toEqual([{ a: 'x"y', b: 'multi\nline' }, { a: 'z', b: 'w' }, { a: `p\n${long}\nr`, b: 1 }, { a: 's', b: 't' }]);
      expect(dead.map((d) => [d.location, d.raw]), `chunk ${chunkSize}`).toEqual([[`${p}:9`, 'bad']]);
    }
  });

  it('what the CSV sink format writes (a field with a line break quoted) reads back as written', async () => {
    const enc = csv({ columns: ['a', 'b'] }).open('test');
    const rows = [{ a: 'x\ny', b: 'z' }, { a: 'q', b: 'r' }, { a: 'multi\n\nline, "quoted"', b: 'end' }];
    const p = file('roundtrip.csv', Buffer.from(enc.encode(rows, () => {})!));
    const { main, dead } = await read((env) => {
      const s = env.fromFile(p, { malformed: 'dead-letter' });
      s.collect('main');
      s.getSideOutput(DEAD_LETTERS).collect('dead');
    });
    expect(main).toEqual(rows);
    expect(dead).toEqual([]);
  });

  it('the malformed option is validated', async () => {
    await expect(runInline((env) => void env.fromFile(file('x.jsonl', '1\n'), { malformed: 'skip' as never })))
      .rejects.toThrow('source option "malformed" must be "fail" or "dead-letter", got "skip"');
  });
});

describe('bad paths and options', () => {
  it('a missing path gives a clear error', async () => {
    const missing = join(root, 'no', 'such', 'file.jsonl');
    await expect(runInline((env) => void env.fromFile(missing).collect('main'))).rejects.toThrow(`fromFile: ${missing} does not exist`);
  });

  it('options are validated with messages naming them', async () => {
    await expect(runInline((env) => void env.fromFile(''))).rejects.toThrow('fromFile needs a file or directory path');
    await expect(runInline((env) => void env.fromFile('x.jsonl', { chunkSize: 10 }))).rejects.toThrow('fromFile: chunkSize must be an integer >= 64, got 10');
    await expect(runInline((env) => void env.fromFile('x.jsonl', { splitSize: 1024 }))).rejects.toThrow('fromFile: splitSize must be an integer number of bytes >= 4096 (or Infinity for one split per file), got 1024');
    await expect(runInline((env) => void env.fromFile('x.txt', { format: 'xml' as never }))).rejects.toThrow('fromFile: format must be "jsonl" or "csv", got "xml"');
    await expect(runInline((env) => void env.fromFile('x.csv', { csv: { delimiter: '"' } }))).rejects.toThrow('fromFile: invalid CSV delimiter "\\""');
    await expect(runInline((env) => void env.fromFile('x.csv', { csv: { delimiter: '' } }))).rejects.toThrow('fromFile: invalid CSV delimiter ""');
  });
});
