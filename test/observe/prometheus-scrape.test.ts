/**
 * GET /metrics against real Prometheus tools (Debian's prometheus package, installed by
 * .ci/run): promtool checks the exposition text, and a Prometheus server scrapes a running
 * job; a metric is read back through Prometheus' query API with its Flink-style labels.
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { existsSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { fixture, sleep, start, tempDir } from '../savepoint/helpers.ts';

const PROMETHEUS = '/usr/bin/prometheus';
const PROMTOOL = '/usr/bin/promtool';
const tmp = tempDir('prometheus');
const children: ChildProcess[] = [];

afterAll(() => {
  for (const c of children) if (c.exitCode === null) c.kill('SIGKILL');
  tmp.cleanup();
});

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = createServer();
    s.once('error', reject);
    s.listen(0, '127.0.0.1', () => {
      const port = (s.address() as { port: number }).port;
      s.close(() => resolve(port));
    });
  });
}

describe('Prometheus scrapes GET /metrics', () => {
  it('promtool accepts the text, and Prometheus reads a job metric back with its labels', async () => {
    // Installed by .ci/run; without them this test cannot say anything, so it fails loudly.
    expect(existsSync(PROMETHEUS), `${PROMETHEUS} missing: apt-get install prometheus (see .ci/run)`).toBe(true);
    const h = await start(fixture('observed-pipeline.ts'), { workers: 2, parallelism: 2, args: ['2000'] });
    const port = Number(new URL(h.base).port);
    try {
      // Wait until the tasks report records (the first samples come after about a second).
      let text = '';
      for (let i = 0; i < 600 && !/weir_taskmanager_job_task_operator_numRecordsIn\{[^}]*operator_name="window sums"[^}]*\} [1-9]/.test(text); i++) {
        await sleep(100);
        text = await (await fetch(`http://127.0.0.1:${port}/metrics`)).text();
      }
      const check = spawnSync(PROMTOOL, ['check', 'metrics'], { input: text, encoding: 'utf8', timeout: 30_000 });
      // promtool's exit 3 is lint only; Flink's names are camelCase by design, which is the one lint allowed.
      const problems = `${check.stdout}${check.stderr}`.split('\n').filter((l) => l.trim() !== '' && !/metric names should be written in 'snake_case' not 'camelCase'/.test(l));
      expect(problems).toEqual([]);
      expect([0, 3]).toContain(check.status);

      const promPort = await freePort();
      const config = join(tmp.dir, 'prometheus.yml');
      writeFileSync(config, `global:\n  scrape_interval: 1s\nscrape_configs:\n  - job_name: weir\n    metrics_path: /metrics\n    static_configs:\n      - targets: ['127.0.0.1:${port}']\n`);
      const prom = spawn(PROMETHEUS, [`--config.file=${config}`, `--storage.tsdb.path=${join(tmp.dir, 'tsdb')}`, `--web.listen-address=127.0.0.1:${promPort}`], { stdio: ['ignore', 'ignore', 'pipe'] });
      children.push(prom);
      let promLog = '';
      prom.stderr!.on('data', (d) => (promLog = (promLog + d).slice(-4000)));
      const query = encodeURIComponent('weir_taskmanager_job_task_operator_numRecordsIn{operator_name="window sums"}');
      let result: { metric: Record<string, string>; value: [number, string] }[] = [];
      for (let i = 0; i < 600 && result.length < 2; i++) {
        await sleep(200);
        if (prom.exitCode !== null) throw new Error(`prometheus exited (${prom.exitCode}): ${promLog}`);
        try {
          const r = await fetch(`http://127.0.0.1:${promPort}/api/v1/query?query=${query}`, { signal: AbortSignal.timeout(5000) });
          const body = (await r.json()) as { status: string; data: { result: typeof result } };
          if (body.status === 'success') result = body.data.result;
        } catch {
          // Not listening yet.
        }
      }
      expect(result.map((r) => r.metric['subtask_index']).sort()).toEqual(['0', '1']);
      for (const r of result) {
        expect(r.metric).toMatchObject({ job_id: h.jobId, job_name: 'weir job', task_name: 'window sums -> sums sink', operator_name: 'window sums', job: 'weir' });
        expect(Number(r.value[1])).toBeGreaterThan(0);
      }
    } finally {
      await fetch(`${h.base}?mode=cancel`, { method: 'PATCH' });
      await h.result;
    }
  }, 180_000);
});
