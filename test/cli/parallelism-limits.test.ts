/**
 * Parallelism a job cannot have is refused when it starts, never after a long deployment:
 * above the max parallelism (the number of key groups) in Flink's words, and a plan with more
 * channels between subtasks than --max-channels (at -p 1000 a keyBy edge has a million,
 * which used to keep the workers busy past the two-minute deploy timeout).
 * The real CLI, spawned; the exact checks are unit-tested in test/graph/execution-plan.test.ts.
 */
import { spawn } from 'node:child_process';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

const repo = join(dirname(fileURLToPath(import.meta.url)), '..', '..');

function weir(...args: string[]): Promise<{ code: number | null; stderr: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ['bin/weir.js', ...args], { cwd: repo, stdio: ['ignore', 'ignore', 'pipe'] });
    let stderr = '';
    child.stderr.setEncoding('utf8').on('data', (d: string) => (stderr += d));
    child.on('error', reject);
    child.on('close', (code) => resolve({ code, stderr }));
  });
}

describe.concurrent('weir run: parallelism limits, refused at start', () => {
  it('-p 200 with 128 key groups: Flink\'s message, exit 1, nothing deployed', async () => {
    const r = await weir('run', 'test/fixtures/jobs/key-groups-128.ts', '-p', '200');
    expect(r.code).toBe(1);
    expect(r.stderr).toBe(
      'weir: error: Vertex "generator"\'s parallelism (200) is higher than the max parallelism (128). Please lower the parallelism or increase the max parallelism (setMaxParallelism). (at test/fixtures/jobs/key-groups-128.ts:7:6)\n',
    );
  }, 120_000);

  it('-p 1000 with a keyBy edge: refused for its million channels instead of hanging in deployment', async () => {
    const r = await weir('run', 'examples/word-count.ts', '-p', '1000');
    expect(r.code).toBe(1);
    expect(r.stderr).toBe(
      'weir: error: the job needs 1000000 channels between subtasks, more than the 65536 allowed (--max-channels); the hash edge from "sentences -> FlatMap" (parallelism 1000) to "Reduce -> Filter -> Print" (parallelism 1000) alone has 1000000: lower the parallelism, or raise --max-channels\n',
    );
  }, 120_000);

  it('--max-channels is a positive integer', async () => {
    const r = await weir('run', 'examples/word-count.ts', '--max-channels', '0');
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(/^weir: error: --max-channels expects a positive integer, got "0"\n$/);
  }, 120_000);
});
