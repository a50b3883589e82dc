import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import type { JobControl } from '../../src/cluster/job-control.ts';
import { defineJob, runJob } from '../../src/index.ts';
import { prometheusText } from '../../src/observe/prometheus.ts';

describe('the shipped Grafana dashboard', () => {
  it('queries only metric names that GET /metrics serves for a real job', async () => {
    const dash = JSON.parse(readFileSync(new URL('../../docs/grafana/weir-dashboard.json', import.meta.url), 'utf8'));
    const exprs: string[] = dash.panels.flatMap((p: { targets: { expr: string }[] }) => p.targets.map((t) => t.expr));
    exprs.push(dash.templating.list[0].query);
    const used = new Set(exprs.flatMap((e) => e.match(/weir_[A-Za-z_]+/g) ?? []));
    expect(used.size).toBeGreaterThan(10);
    let control: JobControl | undefined;
    const job = defineJob((env) => void env.fromGenerator((i) => i, { count: 1000 }).map((x: number) => x).keyBy((x) => x % 3).map((x) => x).print());
    const r = await runJob(job, { workers: 1, parallelism: 1, stdout: () => {}, services: [{ start: async (c) => void (control = c), stop: async () => {} }] });
    expect(r.status).toBe('FINISHED');
    const served = new Set([...prometheusText([{ jobId: control!.jobId, jobName: control!.jobName, metrics: control!.metrics() }]).matchAll(/^# TYPE (\S+) /gm)].map((m) => m[1]!));
    for (const name of used) expect(served, name).toContain(name);
  });
});
