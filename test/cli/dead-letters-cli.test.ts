/**
 * weir run with malformed: 'dead-letter': the final summary counts the dead letters and says
 * where they were written (beside the output by default), and the file holds them.
 * The real CLI, spawned; the details are in test/connectors/dead-letters.test.ts.
 */
import { spawn } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';

const repo = join(dirname(fileURLToPath(import.meta.url)), '..', '..');
const tmp = mkdtempSync(join(tmpdir(), 'weir-cli-dead-letters-'));
afterAll(() => rmSync(tmp, { recursive: true, force: true }));

function weir(...args: string[]): Promise<{ code: number | null; stderr: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ['bin/weir.js', ...args], { cwd: repo, stdio: ['ignore', 'ignore', 'pipe'] });
    let stderr = '';
    child.stderr.setEncoding('utf8').on('data', (d: string) => (stderr += d));
    child.on('error', reject);
    child.on('close', (code) => resolve({ code, stderr }));
  });
}

describe('weir run: dead letters', () => {
  it('the summary counts them and names the file beside the output that holds them', async () => {
    const input = join(tmp, 'in.jsonl');
    writeFileSync(input, '{"a":1}\nnot json\n{"a":2}\n{broken\n{"a":3}\n]\n');
    const out = join(tmp, 'out');
    const r = await weir('run', 'test/fixtures/jobs/dead-letters.ts', '-p', '1', '-w', '1', '--', input, out);
    expect(r.code, r.stderr).toBe(0);
    expect(r.stderr).toContain(`weir: 3 malformed records went to the dead letters (written to ${out}.dead-letters)\n`);
    expect(r.stderr).toMatch(/weir: job "weir job" finished in [\d.]+ s \(3 records in, 3 out, 3 dead letters\); job id [0-9a-f]{32}\n/);
    const files = readdirSync(`${out}.dead-letters`);
    expect(files).toHaveLength(1);
    const letters = readFileSync(join(`${out}.dead-letters`, files[0]!), 'utf8').trimEnd().split('\n').map((l) => JSON.parse(l) as { location: string; raw: string });
    expect(letters.map((l) => [l.location, l.raw])).toEqual([[`${input}:2`, 'not json'], [`${input}:4`, '{broken'], [`${input}:6`, ']']]);
  }, 120_000);
});
