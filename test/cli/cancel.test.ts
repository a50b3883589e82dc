/** Ctrl-C (SIGINT) cancels a running job; retention decides whether its checkpoints stay. */
import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const work = mkdtempSync(join(tmpdir(), 'weir-cancel-'));
afterAll(() => rmSync(work, { recursive: true, force: true }));

function completed(dir: string): string[] {
  if (!existsSync(dir)) return [];
  const out: string[] = [];
  for (const job of readdirSync(dir)) {
    for (const c of readdirSync(join(dir, job))) if (c.startsWith('chk-') && existsSync(join(dir, job, c, '_metadata'))) out.push(c);
  }
  return out;
}

async function runAndInterrupt(retention: string): Promise<{ code: number | null; stderr: string; dir: string }> {
  const dir = join(work, retention);
  const child = spawn(process.execPath, [join(ROOT, 'bin/weir.js'), 'run', 'examples/word-count.ts', '-w', '1', '--checkpoint-dir', dir,
    '--checkpoint-interval', '100ms', '--checkpoint-retention', retention, '--', '1000000000'], { cwd: ROOT, stdio: ['ignore', 'ignore', 'pipe'] });
  let stderr = '';
  child.stderr.on('data', (d) => (stderr += d));
  const exited = new Promise<number | null>((res) => child.on('exit', (c) => res(c)));
  for (let i = 0; i < 300 && completed(dir).length === 0; i++) await new Promise((r) => setTimeout(r, 50));
  expect(completed(dir).length).toBeGreaterThan(0);
  child.kill('SIGINT');
  return { code: await exited, stderr, dir };
}

describe('cancel with Ctrl-C', () => {
  it('retain-on-cancel keeps the latest checkpoint', async () => {
    const r = await runAndInterrupt('retain-on-cancel');
    expect(r.code).toBe(130);
    // When 8081 is taken (another job on this machine), the fallback is said before the job announces its port.
    expect(r.stderr).toMatch(/^(weir: REST port 8081 is in use; serving on [\d.]+:\d+ instead\n)?weir: job [0-9a-f]{32} running; control API on http:\/\/127\.0\.0\.1:\d+\nweir: SIGINT: cancelling the job\nweir: job "weir job" cancelled; job id [0-9a-f]{32}\n$/);
    expect(completed(r.dir)).toHaveLength(1);
  }, 60_000);

  it('delete-on-cancel (and the default, none) removes them', async () => {
    for (const retention of ['delete-on-cancel', 'none']) {
      const r = await runAndInterrupt(retention);
      expect(r.code).toBe(130);
      expect(completed(r.dir)).toEqual([]);
    }
  }, 60_000);
});
