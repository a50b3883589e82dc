/**
 * The control commands as real processes (issue points 1 and 2 from the command line):
 * `weir run --rest-port 0` announces its control API; `weir list` shows it; `weir savepoint`
 * takes a savepoint of the running job (it keeps running); `weir stop --savepoint` ends it
 * FINISHED (exit 0) with a savepoint, `--drain` first fires every window; `weir cancel` (here
 * with --rest-port and an id prefix) ends it CANCELED; `weir run --from` a savepoint with and
 * without --allow-non-restored-state. Exit codes and one-line errors for a job that is not
 * there, a stop without --savepoint, a savepoint without a directory. Each test has its own
 * WEIR_HOME (job registry).
 *
 * Fixtures: savepoint-app.ts (v1, per-key counts) and savepoint-windows.ts (1 s windows).
 */
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { summarize } from '../../src/checkpoint/inspect.ts';
import { verifyCheckpoint } from '../../src/checkpoint/storage.ts';
import { fixture, oneLineError, producedIn, sleep, tempDir, waitRunningAt, weir, weirRun, type RunningCli } from './helpers.ts';

const tmp = tempDir('sp-cli');
const started: RunningCli[] = [];
afterAll(async () => {
  // Only the processes these tests started, by their own handle.
  for (const r of started) if (r.child.exitCode === null && r.child.signalCode === null) r.child.kill('SIGKILL');
  tmp.cleanup();
});

async function run(home: string, ...args: string[]): Promise<RunningCli> {
  const r = await weirRun(home, ...args);
  started.push(r);
  return r;
}

describe.concurrent('weir list / savepoint / stop / cancel', () => {
  it('list shows the job; savepoint keeps it running; stop --savepoint ends it FINISHED; then list is empty', async () => {
    const home = tmp.fresh('home');
    const sp = tmp.fresh('savepoints');
    const job = await run(home, fixture('savepoint-app.ts'), '-w', '1', '-p', '2', '--rest-port', '0', '--', 'v1', '1000000', '500');

    const [list, listJson] = await Promise.all([weir(home, 'list'), weir(home, 'list', '--json')]);
    await waitRunningAt(job.port, job.jobId);
    expect(list.code).toBe(0);
    expect(list.stdout).toMatch(new RegExp(`^${job.jobId}  (INITIALIZING|RUNNING) +\\d+s  127\\.0\\.0\\.1:${job.port}  "savepoint app v1"\\n$`));
    const json = JSON.parse(listJson.stdout) as { jobs: Record<string, unknown>[] };
    expect(json.jobs.map((j) => [j['jid'], j['name'], j['address']])).toEqual([[job.jobId, 'savepoint app v1', `127.0.0.1:${job.port}`]]);

    // A unique prefix of the id is enough.
    const taken = await weir(home, 'savepoint', job.jobId.slice(0, 8), '--dir', sp);
    expect([taken.code, taken.stderr]).toEqual([0, '']);
    const path = taken.stdout.trimEnd();
    expect(taken.stdout).toBe(`${path}\n`);
    expect(path.startsWith(sp + '/')).toBe(true);
    const v = await verifyCheckpoint(path);
    expect(v.ok && v.metadata.type).toBe('savepoint');
    expect(job.child.exitCode, 'the job keeps running after a savepoint').toBe(null);

    const stop = await weir(home, 'stop', job.jobId, '--savepoint', '--dir', sp);
    expect([stop.code, stop.stderr]).toEqual([0, '']);
    const last = stop.stdout.trimEnd();
    expect((await verifyCheckpoint(last)).ok).toBe(true);
    expect(last).not.toBe(path);
    const done = await job.done;
    expect(done.code).toBe(0);
    // A status line every 5 s may come between them (a loaded machine: the clean clone's run).
    expect(done.stderr).toMatch(new RegExp(`weir: savepoint \\d+ completed at ${last}\\n(weir: \\d+ s: [^\\n]*\\n)*weir: job "savepoint app v1" finished in [0-9.]+ s \\(\\d+ records in, \\d+ out\\); job id ${job.jobId}\\n$`));
    // Both savepoints stay; the later one holds more.
    expect((await producedIn(last)).size).toBeGreaterThan((await producedIn(path)).size - 1);
    expect(readdirSync(sp).sort()).toEqual([path, last].map((p) => p.slice(sp.length + 1)).sort());

    const after = await weir(home, 'list');
    expect([after.code, after.stdout]).toEqual([0, 'no running jobs\n']);

    // Upgrading to v2 from the command line: refused while v1's "audit" state would be dropped.
    const [refused, allowed] = await Promise.all([
      weir(home, 'run', fixture('savepoint-app.ts'), '-w', '1', '--rest-port', '0', '--from', last, '--', 'v2', '4', '0'),
      weir(home, 'run', fixture('savepoint-app.ts'), '-w', '1', '--rest-port', '0', '--from', last, '--allow-non-restored-state', '--', 'v2', '4', '0'),
    ]);
    expect(refused.code).toBe(1);
    // (The run announces its control API before the restore is planned; the error is the last line.)
    expect(oneLineError({ ...refused, stderr: refused.stderr.replace(/^weir: job [0-9a-f]{32} running; control API on \S+\n/, '') })).toBe('the snapshot has state for operators this job does not have: "audit" (uid audit); give operators stable uid()s, or pass --allow-non-restored-state to drop that state');
    expect(allowed.code, allowed.stderr).toBe(0);
    expect(allowed.stderr).toMatch(/weir: job "savepoint app v2" finished in /);
  });

  it('stop --savepoint --drain: every window with records fires and is committed before the job ends FINISHED', async () => {
    const home = tmp.fresh('home');
    const out = tmp.fresh('out');
    const job = await run(home, fixture('savepoint-windows.ts'), '-w', '1', '-p', '1', '--rest-port', '0', '--savepoint-dir', tmp.fresh('sp'), '--', out, '1000000', '1000');
    await waitRunningAt(job.port, job.jobId);
    await sleep(300);
    const stop = await weir(home, 'stop', job.jobId, '--savepoint', '--drain');
    expect([stop.code, stop.stderr]).toEqual([0, '']);
    const sp = stop.stdout.trimEnd();
    const done = await job.done;
    expect(done.code).toBe(0);
    const produced = await producedIn(sp);
    const committed = readdirSync(out).filter((f) => !f.startsWith('.')).flatMap((f) => readFileSync(join(out, f), 'utf8').split('\n').filter((l) => l !== ''))
      .map((l) => JSON.parse(l) as { count: number });
    expect(committed.reduce((a, w) => a + w.count, 0), 'every record read is in a committed window').toBe(produced.size);
    const windows = (await summarize(sp)).operators.find((o) => o.uid === 'windows')!;
    expect(windows.ranges.map((r) => [r.keys, r.timers]), 'no window state left').toEqual([[0, 0]]);
  });

  it('one-line errors (no such job, stop without --savepoint, a savepoint or a stop with no directory) leave the job running; cancel ends it CANCELED (exit 130)', async () => {
    const home = tmp.fresh('home');
    const job = await run(home, fixture('savepoint-app.ts'), '-w', '1', '--rest-port', '0', '--', 'v1', '1000000', '500');
    await waitRunningAt(job.port, job.jobId);
    const [missing, noFlag, noDir, stopNoDir, direct] = await Promise.all([
      weir(home, 'savepoint', 'ffff0000', '--dir', tmp.fresh('sp')),
      weir(home, 'stop', job.jobId),
      weir(home, 'savepoint', job.jobId),
      weir(home, 'stop', job.jobId, '--savepoint'),
      weir(home, 'stop', 'deadbeef', '--savepoint', '--rest-port', String(job.port)),
    ]);
    expect(missing.code).toBe(2);
    expect(oneLineError(missing)).toBe('savepoint: no running job ffff0000 on this machine (see weir list, or give --rest-port)');
    expect(noFlag.code).toBe(2);
    expect(oneLineError(noFlag)).toBe('stop: stopping takes a savepoint: pass --savepoint (use weir cancel to end a job without one)');
    expect(noDir.code).toBe(2);
    expect(oneLineError(noDir)).toBe('savepoint failed: no savepoint directory: give one (--dir) or configure --savepoint-dir');
    // A failed stop says why, and the job runs on.
    expect(stopNoDir.code).toBe(2);
    expect(oneLineError(stopNoDir)).toBe('stop with savepoint failed: no savepoint directory: give one (--dir) or configure --savepoint-dir');
    expect(direct.code).toBe(2);
    expect(oneLineError(direct)).toBe(`stop: no job deadbeef at http://127.0.0.1:${job.port}`);
    expect(job.child.exitCode, 'still running').toBe(null);
    const c = await weir(home, 'cancel', job.jobId.slice(0, 6), '--rest-port', String(job.port));
    expect([c.code, c.stdout, c.stderr]).toEqual([0, `cancelled ${job.jobId}\n`, '']);
    // cancel returned once the job had ended: its API is gone, or says CANCELED while the process exits.
    const after = await fetch(`http://127.0.0.1:${job.port}/jobs/${job.jobId}`).then((r) => r.json() as Promise<{ state?: string }>, () => ({ state: 'GONE' }));
    expect(['GONE', 'CANCELED']).toContain(after.state);
    const done = await job.done;
    expect(done.code).toBe(130);
    expect(done.stderr).toMatch(new RegExp(`weir: job "savepoint app v1" cancelled; job id ${job.jobId}\\n$`));
    expect(done.stderr).not.toMatch(/savepoint \d+ completed/);
  }, 180_000); // seven CLI processes, and cancel now waits for the job to end: generous on a loaded machine
});
