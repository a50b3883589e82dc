/**
 * Requests and bytes per checkpoint on S3 (issue 10, point 2): the keyed running count of
 * bench/jobs/s3-keyed-counts.ts checkpointing every second to s3rver (in this process, on
 * loopback), at p = 1, 2 and 4 (on up to 2 worker threads). Every request the server receives
 * is logged; a checkpoint's PUTs are those under its chk-<n>/ (directory marker, state objects,
 * metadata) plus the job-level ones (the triggered-id record and the history segment), its bytes
 * those PUTs' bodies. Medians over the checkpoints of the run.
 *
 *   node --import tsx bench/s3-checkpoints.ts [keys=100000] [records=600000] [rate=100000]
 */
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { runJob } from '../src/index.ts';
import { startS3Server, type S3Request } from '../test/helpers/s3rver.ts';

const ROOT = fileURLToPath(new URL('../', import.meta.url));
const [keys = '100000', records = '600000', rate = '100000'] = process.argv.slice(2);

function median(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  return s.length === 0 ? NaN : s[Math.floor((s.length - 1) / 2)]!;
}

const server = await startS3Server();
const rows: string[] = [];
try {
  for (const p of [1, 2, 4]) {
    const prefix = `bench-p${p}`;
    const from = server.requests.length;
    const result = await runJob(join(ROOT, 'bench/jobs/s3-keyed-counts.ts'), {
      workers: Math.min(p, 2), parallelism: p, args: [keys, records, rate], stdout: () => {}, log: () => {},
      checkpoint: { dir: `s3://${server.bucket}/${prefix}`, interval: 1000 },
      s3: server.settings,
    });
    if (result.status !== 'FINISHED') throw new Error(`p=${p}: ${result.status} ${result.error?.message}`);
    const reqs = server.requests.slice(from).filter((r) => r.path.startsWith(`/${server.bucket}/${prefix}/`));
    const byCheckpoint = new Map<number, S3Request[]>();
    for (const r of reqs) {
      const m = /\/chk-(\d+)\//.exec(r.path);
      if (m === null || r.method !== 'PUT') continue;
      const id = Number(m[1]);
      byCheckpoint.set(id, [...(byCheckpoint.get(id) ?? []), r]);
    }
    const jobLevelPuts = reqs.filter((r) => r.method === 'PUT' && !/\/chk-\d+\//.test(r.path) && !r.path.endsWith('/shared/') && !r.path.endsWith('/taskowned/'));
    const completed = [...byCheckpoint].filter(([, rs]) => rs.some((r) => r.path.endsWith('/_metadata')));
    const puts = completed.map(([, rs]) => rs.length);
    const bytes = completed.map(([, rs]) => rs.reduce((n, r) => n + r.bytes, 0));
    const stateObjects = completed.map(([, rs]) => rs.filter((r) => r.path.endsWith('.state')).length);
    // DeleteObjects is a POST to the bucket itself (its keys are in the body): counted from the whole run.
    const others = [...reqs.filter((r) => r.method !== 'PUT'), ...server.requests.slice(from).filter((r) => r.method === 'POST' && r.path === `/${server.bucket}/`)];
    const perCheckpointJob = jobLevelPuts.length / Math.max(1, byCheckpoint.size);
    rows.push(`| ${p} | ${Math.min(p, 2)} | ${completed.length} | ${median(stateObjects)} | ${median(puts)} + ${perCheckpointJob.toFixed(1)} | ${(median(bytes) / 1024).toFixed(0)} KiB | ${others.length} (${['GET', 'HEAD', 'DELETE', 'POST'].map((m) => `${m} ${others.filter((r) => r.method === m).length}`).join(', ')}) |`);
    console.log(rows.at(-1));
  }
} finally {
  await server.close();
}
console.log(`\n${keys} keys, ${records} records at ${rate}/s, checkpoints every 1 s, max parallelism 128 (key groups)\n`);
console.log('| p | workers | checkpoints | state objects / checkpoint | PUTs / checkpoint (chk-<n>/ + job level) | bytes / checkpoint | other requests, whole run |');
console.log('|---|---|---|---|---|---|---|');
for (const r of rows) console.log(r);
