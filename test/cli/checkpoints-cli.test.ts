/** weir checkpoints: history and retained checkpoints of a real run, as a table and as JSON. */
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync, appendFileSync, readdirSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const weir = (...args: string[]) => spawnSync(process.execPath, [join(ROOT, 'bin/weir.js'), ...args], { cwd: ROOT, encoding: 'utf8' });

let dir: string;
beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), 'weir-cpcli-'));
  const r = weir('run', 'examples/word-count.ts', '-w', '1', '--checkpoint-dir', join(dir, 'chk'), '--checkpoint-interval', '50ms',
    '--checkpoint-retention', 'retain-on-cancel', '--', '400000');
  expect(r.status, r.stderr).toBe(0);
}, 60_000);
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe('weir checkpoints', () => {
  it('prints the history with statuses, durations, sizes and per-subtask maxima', () => {
    const r = weir('checkpoints', join(dir, 'chk'));
    expect(r.status).toBe(0);
    const lines = r.stdout.split('\n');
    const header = /^job [0-9a-f]{32}: (\d+) completed, 0 failed$/.exec(lines[0]!);
    expect(header, lines[0]).not.toBeNull();
    expect(lines.some((l) => /^ {2}ID +STATUS +TYPE +TRIGGERED +DURATION +SIZE +ACKS +SYNC +ASYNC +ALIGN +DELAY +REASON$/.test(l))).toBe(true);
    const rows = lines.filter((l) => /^ {2}\d+ +COMPLETED +checkpoint /.test(l));
    // One row per completed checkpoint, as many as the header counts: periodic ones and the final one.
    expect(rows).toHaveLength(Number(header![1]));
    expect(rows.length).toBeGreaterThanOrEqual(2);
    expect(rows[0]).toMatch(/ \d+ ms +\d+(\.\d)? (B|KiB) +2\/2 /);
    // A trend over the whole history: one block per completed checkpoint (fewer than 60 here).
    const trend = lines.indexOf(`  trend over ${rows.length} completed (oldest → newest):`);
    expect(trend).toBeGreaterThan(0);
    expect(lines[trend + 1]).toMatch(new RegExp(`^ {4}duration [▁▂▃▄▅▆▇█]{${rows.length}}  \\(min \\d+ ms, max \\d+ ms\\)$`));
    expect(lines[trend + 2]).toMatch(new RegExp(`^ {4}size {5}[▁▂▃▄▅▆▇█]{${rows.length}}  \\(min .+, max .+\\)$`));
  });

  it('gives the same data as JSON, and flags an unreadable history line without failing', () => {
    const chk = join(dir, 'chk');
    const job = readdirSync(chk)[0]!;
    appendFileSync(join(chk, job, 'checkpoint-history.jsonl'), '{"id": 99, "status": "COMPL');
    const r = weir('checkpoints', chk, '--json');
    expect(r.status).toBe(0);
    const out = JSON.parse(r.stdout) as { jobs: { jobId: string; history: { id: number; status: string; subtasks: object }[] }[]; warnings: string[] };
    expect(out.jobs).toHaveLength(1);
    expect(out.jobs[0]!.jobId).toBe(job);
    const ids = out.jobs[0]!.history.map((h) => h.id);
    // The same checkpoints as the text output (the unreadable line is not one of them).
    const text = weir('checkpoints', chk).stdout.split('\n').flatMap((l) => /^ {2}(\d+) +COMPLETED /.exec(l)?.[1] ?? []).map(Number);
    expect(ids).toEqual(text.slice().reverse()); // the text lists the newest first
    expect(ids.length).toBeGreaterThanOrEqual(2);
    expect(ids).toEqual([...ids].sort((a, b) => a - b));
    expect(out.jobs[0]!.history.every((h) => h.status === 'COMPLETED' && Object.keys(h.subtasks).length === 2)).toBe(true);
    expect(out.warnings.some((w) => /unreadable history line/.test(w))).toBe(true);
  });

  it('skips history lines that are JSON but not entries, with a warning, and lists the rest', () => {
    const chk = join(dir, 'chk');
    const job = readdirSync(chk)[0]!;
    const before = weir('checkpoints', chk);
    expect(before.status).toBe(0);
    appendFileSync(join(chk, job, 'checkpoint-history.jsonl'), '\nnull\n{"id": 7, "status": "COMPLETED"}\n[1, 2]\n');
    const r = weir('checkpoints', chk);
    expect(r.status, r.stderr).toBe(0);
    expect(r.stderr).toMatch(/checkpoint-history\.jsonl: 3 line\(s\) that are not checkpoint history entries/);
    // The same listing as before the lines were added.
    expect(r.stdout).toBe(before.stdout);
  });

  it('reads a line\'s fields as its entry (numbers as strings are none; a time no Date holds is not an entry; subtasks with anything in them), never failing the listing (before: averages above the maxima, then "Cannot read properties of undefined", "Invalid time value")', () => {
    const chk = join(dir, 'chk');
    const job = readdirSync(chk)[0]!;
    const before = weir('checkpoints', chk);
    const lines = [
      { id: 9001, status: 'COMPLETED', triggerTimestamp: 1764929717000, endToEndDurationMs: '9000', stateSize: '5000000' },
      { id: 9002, status: 'COMPLETED', triggerTimestamp: 1e20 },
      { id: 9003, status: 'FAILED', triggerTimestamp: 1764929717000, subtasks: { 'a:0': { syncMs: 'x' }, 'a:1': null } },
    ];
    appendFileSync(join(chk, job, 'checkpoint-history.jsonl'), '\n' + lines.map((l) => JSON.stringify(l)).join('\n') + '\n');
    const r = weir('checkpoints', chk);
    expect(r.status, r.stderr).toBe(0);
    const notEntries = (t: string) => Number(/(\d+) line\(s\) that are not checkpoint history entries/.exec(t)?.[1] ?? 0);
    expect(notEntries(r.stderr)).toBe(notEntries(before.stderr) + 1); // the one with a time no Date holds
    const header = /^job [0-9a-f]{32}: (\d+) completed, (\d+) failed$/.exec(r.stdout.split('\n')[0]!)!;
    const was = /^job [0-9a-f]{32}: (\d+) completed, (\d+) failed$/.exec(before.stdout.split('\n')[0]!)!;
    expect([Number(header[1]), Number(header[2])]).toEqual([Number(was[1]) + 1, Number(was[2]) + 1]);
    expect(r.stdout).toMatch(/^ {2}9001 +COMPLETED +checkpoint +2025-12-05 10:15:17\.000 +- +0 B /m);
    expect(r.stdout).toMatch(/^ {2}9003 +FAILED .* - +- +- +-/m);
    // Sizes and durations are numbers: the average is within min and max.
    const sum = /summary: duration min (\d+) \/ avg (\d+) \/ max (\d+) ms/.exec(r.stdout)!;
    expect(Number(sum[2])).toBeLessThanOrEqual(Number(sum[3]));
    expect(Number(sum[2])).toBeGreaterThanOrEqual(Number(sum[1]));
  });

  it('rejects a path that is not a directory, and an empty directory has no checkpoints', () => {
    const f = join(dir, 'file');
    writeFileSync(f, 'x');
    const bad = weir('checkpoints', f);
    expect(bad.status).toBe(2);
    expect(bad.stderr).toBe(`weir: error: checkpoints: ${f} is not a directory\n`);
    const empty = mkdtempSync(join(tmpdir(), 'weir-cpcli-empty-'));
    const r = weir('checkpoints', empty);
    expect(r.stdout).toBe(`no checkpoints in ${empty}\n`);
    rmSync(empty, { recursive: true });
  });
});
