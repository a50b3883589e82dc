/**
 * Files that are not regular files where weir reads one: a FIFO in a state file's place
 * blocked the open for good (a restore, `weir state inspect`: only SIGKILL ended them), and one
 * in the job registry hung `weir list`; a symbolic link in a state file's place read a file
 * outside the snapshot as its state. Found by a read-only audit; each fails (or hangs) before.
 */
import { execFileSync, spawnSync } from 'node:child_process';
import { chmodSync, mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { pathToFileURL } from 'node:url';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { LocalStateInputHandle } from '../../src/checkpoint/local/local-streams.ts';

const root = mkdtempSync(join(tmpdir(), 'weir-not-regular-'));
afterAll(() => rmSync(root, { recursive: true, force: true }));

/** Bounded: a hang fails the test instead of holding the suite. */
function within<T>(p: Promise<T>, ms = 5000): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  return Promise.race([p, new Promise<never>((_, reject) => (timer = setTimeout(() => reject(new Error(`no answer within ${ms} ms`)), ms)))]).finally(() => clearTimeout(timer));
}

describe('state files that are not regular files', () => {
  it('a FIFO is refused at once, not waited on', async () => {
    const fifo = join(root, 'fifo.state');
    execFileSync('mkfifo', [fifo]);
    await expect(within(LocalStateInputHandle.open(fifo))).rejects.toThrow(`${fifo} is not a regular file`);
  });

  it('a symbolic link is refused, not followed out of the snapshot', async () => {
    const outside = join(root, 'outside.state');
    writeFileSync(outside, 'secret');
    const link = join(root, 'link.state');
    symlinkSync(outside, link);
    await expect(within(LocalStateInputHandle.open(link))).rejects.toThrow(`${link} is a symbolic link, not a state file weir wrote`);
    const plain = await LocalStateInputHandle.open(outside);
    expect(plain.size).toBe(6);
  });
});

describe('the job registry', () => {
  it('skips a FIFO named like an entry instead of hanging weir list', () => {
    const home = join(root, 'home');
    mkdirSync(join(home, 'jobs'), { recursive: true, mode: 0o700 });
    chmodSync(home, 0o700);
    execFileSync('mkfifo', [join(home, 'jobs', 'f.json')]);
    // In a process of its own, bounded: the read of a FIFO blocks its whole thread.
    const registry = pathToFileURL(join(import.meta.dirname, '../../src/observe/registry.ts')).href;
    const r = spawnSync(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', `const m = await import(${JSON.stringify(registry)}); console.log(JSON.stringify(m.listRegistered()));`], {
      env: { ...process.env, WEIR_HOME: home }, encoding: 'utf8', timeout: 20_000,
    });
    expect(r.error, r.stderr).toBeUndefined();
    expect(r.stdout.trim()).toBe('[]');
  });
});
