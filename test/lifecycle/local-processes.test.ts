/**
 * Pieces of the local-process target: how a `weir run` that is gone ended (read from its log
 * lines, then its exit code), and finding a live process by an argument of its command line (how
 * a restarted manager adopts a job whose pid file it never wrote), and the environment a job gets.
 */
import { spawn } from 'node:child_process';
import { describe, expect, it } from 'vitest';
import { alive, endOf, processesWith } from '../../src/lifecycle/local/processes.ts';
import { jobEnvironment } from '../../src/lifecycle/local/target.ts';

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

  it('finds a live process by an argument of its command line, and sees it gone', async () => {
    const marker = `/tmp/weir-marker-${process.pid}-${Date.now()}/config.json`;
    const child = spawn(process.execPath, ['-e', 'setTimeout(() => {}, 60000)', marker], { stdio: 'ignore' });
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

  it('a job gets the manager\'s environment with its own WEIR_HOME and without npm\'s variables (it must not take the manager for npm and cancel itself when it dies)', () => {
    const env = jobEnvironment({ PATH: '/bin', WEIR_HOME: '/manager', npm_command: 'exec', npm_lifecycle_event: 'test', NPM_CONFIG_CACHE: '/c', NODE_OPTIONS: '--x' }, '/deployments/app-1/home');
    expect(env).toEqual({ PATH: '/bin', WEIR_HOME: '/deployments/app-1/home', NODE_OPTIONS: '--x' });
  });
});
