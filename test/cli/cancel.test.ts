/**
 * Ctrl-C (SIGINT) and SIGTERM cancel a running job; retention decides whether its checkpoints
 * stay. The default keeps them (issue 15.3): the README's walkthrough, Ctrl-C then --from
 * latest, must resume where the job stopped (before, the default deleted them on cancel).
 */
import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';
import { committedLines } from '../helpers/output.ts';

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

  it('delete-on-cancel and none remove them', async () => {
    for (const retention of ['delete-on-cancel', 'none']) {
      const r = await runAndInterrupt(retention);
      expect(r.code).toBe(130);
      expect(completed(r.dir)).toEqual([]);
    }
  }, 60_000);
});

describe('the README walkthrough: Ctrl-C, then --from latest (default retention)', () => {
  const run = (args: string[]) => {
    const child = spawn(process.execPath, [join(ROOT, 'bin/weir.js'), ...args], { cwd: ROOT, stdio: ['ignore', 'ignore', 'pipe'] });
    let stderr = '';
    child.stderr.on('data', (d) => (stderr += d));
    const exited = new Promise<{ code: number | null; stderr: string }>((res) => child.on('exit', (c) => res({ code: c, stderr })));
    return { child, exited };
  };

  for (const signal of ['SIGINT', 'SIGTERM'] as const) {
    it(`${signal} keeps the latest checkpoint, and --from latest resumes it to the failure-free output`, async () => {
      const input = join(work, `events-${signal}.jsonl`);
      const gen = spawn(process.execPath, ['--import', 'tsx', 'examples/generate-events.ts', '60000', input, '200', '3'], { cwd: ROOT, stdio: 'ignore' });
      expect(await new Promise((res) => gen.on('exit', res))).toBe(0);
      const reference = run(['run', 'examples/exactly-once.ts', '-w', '1', '--', input, join(work, `ref-${signal}`)]);
      expect((await reference.exited).code).toBe(0);
      const chk = join(work, `walk-chk-${signal}`);
      const out = join(work, `walk-out-${signal}`);
      const job = (extra: string[]) => ['run', 'examples/exactly-once.ts', '-w', '1', '--checkpoint-dir', chk, '--checkpoint-interval', '200ms', ...extra, '--', input, out];
      // 10,000 records/s: six seconds of input, stopped after its first checkpoint.
      const first = run([...job([]), '10000']);
      for (let i = 0; i < 600 && completed(chk).length === 0; i++) await new Promise((r) => setTimeout(r, 50));
      expect(completed(chk).length).toBeGreaterThan(0);
      first.child.kill(signal);
      const r = await first.exited;
      expect(r.code, r.stderr).toBe(signal === 'SIGINT' ? 130 : 143);
      expect(completed(chk), 'the cancel kept the checkpoint').toHaveLength(1);
      const resumed = run(job(['--from', 'latest']));
      const r2 = await resumed.exited;
      expect(r2.code, r2.stderr).toBe(0);
      expect(committedLines(out)).toEqual(committedLines(join(work, `ref-${signal}`)));
    }, 180_000);
  }
});
