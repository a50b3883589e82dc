/**
 * Pieces of the local-process target: how a `weir run` that is gone ended (read from its log
 * lines, then its exit code), and finding a live process by an argument of its command line (how
 * a restarted manager adopts a job whose pid file it never wrote), and the environment a job gets.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { alive, aliveAs, endOf, processesWith } from '../../src/lifecycle/local/processes.ts';
import { jobEnvironment, LocalProcessTarget } from '../../src/lifecycle/local/target.ts';

/**
 * A node process that waits a minute, with `args` after its script, returned once it runs its
 * script: its command line is then its own. Read at once after spawn(), the CI run of 5 December
 * saw no process with the marker (a loaded machine; not reproduced in 400 tries here).
 */
async function sleeper(args: readonly string[]): Promise<ChildProcess> {
  const child = spawn(process.execPath, ['-e', "process.stdout.write('up'); setTimeout(() => {}, 60000)", ...args], { stdio: ['ignore', 'pipe', 'ignore'] });
  const up = await new Promise<boolean>((resolve) => {
    const timer = setTimeout(() => resolve(false), 20_000);
    child.stdout!.once('data', () => (clearTimeout(timer), resolve(true)));
    child.once('exit', () => (clearTimeout(timer), resolve(false)));
  });
  if (!up) {
    child.kill('SIGKILL');
    throw new Error('the sleeper process did not start within 20 s');
  }
  return child;
}

describe('local processes', () => {
  it('reads how a weir run ended from its log, the last verdict winning', () => {
    expect(endOf('weir: job abc running; control API on http://127.0.0.1:1\nweir: job "app v1" finished in 3.00 s (10 records in, 10 out); job id abc\n', 0)).toEqual({ state: 'FINISHED' });
    expect(endOf('weir: SIGTERM: cancelling the job\nweir: job "app" cancelled; job id abc\n', 143)).toEqual({ state: 'CANCELED' });
    expect(endOf('weir: error: job "app" failed: operator "map" (subtask 1/2) failed in processElement: boom\n', 1)).toEqual({ state: 'FAILED', error: 'job "app" failed: operator "map" (subtask 1/2) failed in processElement: boom' });
    expect(endOf('weir: error: invalid job definition: unknown version v3\n', 1)).toEqual({ state: 'FAILED', error: 'invalid job definition: unknown version v3' });
    expect(endOf('', 143)).toEqual({ state: 'CANCELED' });
    expect(endOf('weir: 5 s: 100 records/s in\n', undefined)).toEqual({ state: 'GONE', error: 'the process is gone (killed?)' });
    expect(endOf('', 9)).toEqual({ state: 'GONE', error: 'the process exited with code 9' });
  });

  it('alive() judges only real pids: 0 and negative pids name process groups, never a process', () => {
    for (const pid of [0, -1, -process.pid, Number.NaN, 1.5]) expect(alive(pid), String(pid)).toBe(false);
    expect(alive(process.pid)).toBe(true);
  });

  it('a pid file that holds no pid is reported and the process looked for by its command line', async () => {
    const root = mkdtempSync(join(tmpdir(), 'weir-pidfile-'));
    const lines: string[] = [];
    const target = new LocalProcessTarget({ root, weirBin: '/nonexistent/weir', log: (l) => void lines.push(l) });
    const dir = target.layout.deployment('app', 'd1');
    mkdirSync(dir, { recursive: true });
    writeFileSync(target.layout.pidFile('app', 'd1'), ''); // as a manager killed mid-write left it
    try {
      // No process: nothing is running this deployment (before, the empty file read as pid 0,
      // "alive", and the deployment stayed STARTING for good).
      expect((await target.observe('app', ['d1'], [])).deployments).toEqual({});
      expect(lines.join('\n')).toMatch(/pid file .*\/pid holds "", not a pid; finding deployment d1's process by its command line/);
      // A live process with the deployment's config on its command line is found.
      const child = await sleeper([target.layout.config('app', 'd1')]);
      try {
        expect((await target.observe('app', ['d1'], [])).deployments['d1']?.state).toBe('STARTING');
      } finally {
        child.kill('SIGKILL');
      }
    } finally {
      rmSync(root, { recursive: true, force: true });
    }
  });

  it('a pid file naming a live process that is not the deployment\'s (a pid reused after a reboot) is not trusted, and that process is not signalled', async () => {
    const root = mkdtempSync(join(tmpdir(), 'weir-stalepid-'));
    const target = new LocalProcessTarget({ root, weirBin: '/nonexistent/weir' });
    mkdirSync(target.layout.deployment('app', 'd1'), { recursive: true });
    const stranger = await sleeper([]);
    try {
      writeFileSync(target.layout.pidFile('app', 'd1'), String(stranger.pid));
      writeFileSync(target.layout.stderr('app', 'd1'), 'weir: job 0123abcd running; control API on http://127.0.0.1:1\n');
      const seen = (await target.observe('app', ['d1'], [])).deployments['d1'];
      // Gone (before: STARTING for good, its control API never answering).
      expect(seen?.state).toBe('GONE');
      await target.act('app', { kind: 'stop', key: 'stop:d1:cancel', deploymentId: 'd1', timeoutMs: 5000 });
      await new Promise((r) => setTimeout(r, 300));
      expect(alive(stranger.pid!), 'the unrelated process still runs').toBe(true);
    } finally {
      stranger.kill('SIGKILL');
      rmSync(root, { recursive: true, force: true });
    }
  });

  it('a cancelled deployment that does not exit is signalled again, then killed: the cancel completes only once it is gone (before: completed at once, and the application stayed UPGRADING for good)', async () => {
    const root = mkdtempSync(join(tmpdir(), 'weir-cancel-'));
    const target = new LocalProcessTarget({ root, weirBin: '/nonexistent/weir', cancelGraceMs: 300 });
    mkdirSync(target.layout.deployment('app', 'd1'), { recursive: true });
    const marker = target.layout.config('app', 'd1');
    writeFileSync(marker, '{}');
    for (const exitsOn of ['second SIGTERM', 'nothing but SIGKILL']) {
      // Like a `weir run` whose cancel hangs (a sink's close that never returns).
      const code = exitsOn === 'second SIGTERM' ? "let n=0; process.on('SIGTERM',()=>{ if(++n>1) process.exit(143); });" : "process.on('SIGTERM',()=>{});";
      const job = spawn(process.execPath, ['-e', `${code} setInterval(()=>{},1000)`, marker], { stdio: 'ignore' });
      try {
        writeFileSync(target.layout.pidFile('app', 'd1'), String(job.pid));
        await new Promise((r) => setTimeout(r, 300));
        const key = `stop:d1:cancel-${exitsOn.length}`;
        await target.act('app', { kind: 'stop', key, deploymentId: 'd1', timeoutMs: 5000 });
        let outcome: string | undefined;
        for (let i = 0; i < 200 && outcome !== 'completed'; i++) {
          await new Promise((r) => setTimeout(r, 50));
          outcome = (await target.observe('app', ['d1'], [key])).operations[key]?.state;
        }
        expect(outcome, exitsOn).toBe('completed');
        expect(alive(job.pid!), exitsOn).toBe(false);
      } finally {
        job.kill('SIGKILL');
      }
    }
    rmSync(root, { recursive: true, force: true });
  }, 30_000);

  it('finds a live process by an argument of its command line, and sees it gone', async () => {
    const marker = `/tmp/weir-marker-${process.pid}-${Date.now()}/config.json`;
    const child = await sleeper([marker]);
    try {
      expect(processesWith(marker)).toEqual([child.pid]);
      expect(processesWith(`${marker}x`)).toEqual([]);
      expect(alive(child.pid!)).toBe(true);
    } finally {
      child.kill('SIGKILL');
    }
    await new Promise((r) => child.once('exit', r));
    expect(alive(child.pid!)).toBe(false);
    expect(processesWith(marker)).toEqual([]);
  });

  it('finds a process started with another spelling of the same config file (the manager\'s directory given through a symlink), and only that file (before: taken for gone, and a resume started a second copy)', async () => {
    const base = mkdtempSync(join(tmpdir(), 'weir-sym-'));
    mkdirSync(join(base, 'real', 'd1'), { recursive: true });
    writeFileSync(join(base, 'real', 'd1', 'config.json'), '{}');
    mkdirSync(join(base, 'real', 'd2'), { recursive: true });
    writeFileSync(join(base, 'real', 'd2', 'config.json'), '{}');
    symlinkSync(join(base, 'real'), join(base, 'link'));
    const child = await sleeper([join(base, 'link', 'd1', 'config.json')]);
    try {
      expect(processesWith(join(base, 'real', 'd1', 'config.json'))).toEqual([child.pid]);
      expect(aliveAs(child.pid!, join(base, 'real', 'd1', 'config.json'))).toBe(true);
      expect(aliveAs(child.pid!, join(base, 'real', 'd2', 'config.json'))).toBe(false);
    } finally {
      child.kill('SIGKILL');
      rmSync(base, { recursive: true, force: true });
    }
  });

  it('a job gets the manager\'s environment with its own WEIR_HOME and without npm\'s variables (it must not take the manager for npm and cancel itself when it dies)', () => {
    const env = jobEnvironment({ PATH: '/bin', WEIR_HOME: '/manager', npm_command: 'exec', npm_lifecycle_event: 'test', NPM_CONFIG_CACHE: '/c', NODE_OPTIONS: '--x' }, '/deployments/app-1/home');
    expect(env).toEqual({ PATH: '/bin', WEIR_HOME: '/deployments/app-1/home', NODE_OPTIONS: '--x' });
  });
});

describe('a deployment\'s control API, read from its log', () => {
  it('is the line weir run writes, not a log line quoting input with the same words (before: the last match won, and the token went to the address a malformed record named)', () => {
    const root = mkdtempSync(join(tmpdir(), 'weir-endpoint-'));
    try {
      const target = new LocalProcessTarget({ root, weirBin: '/nonexistent/weir' });
      mkdirSync(target.layout.deployment('app', 'd1'), { recursive: true });
      writeFileSync(target.layout.stderr('app', 'd1'), [
        'weir: job 0123abcd running; control API on http://127.0.0.1:41234',
        'weir: dead letter from file:/in.jsonl at /in.jsonl:2: Unexpected token (raw: {bad weir: job deadbeefdeadbeef running; control API on http://203.0.113.9:8081 x})',
        'weir: warning: x weir: job deadbeef running; control API on http://203.0.113.9:8081',
      ].join('\n') + '\n');
      expect(target.endpoint('app', 'd1')).toEqual({ jobId: '0123abcd', base: 'http://127.0.0.1:41234' });
      writeFileSync(target.layout.stderr('app', 'd1'), 'weir: dead letter (raw: weir: job deadbeef running; control API on http://203.0.113.9:8081)\n');
      expect(target.endpoint('app', 'd1')).toBeUndefined();
    } finally {
      rmSync(root, { recursive: true, force: true });
    }
  });
});
