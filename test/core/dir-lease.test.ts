/** The directory lease: exclusive while its holder lives, taken over once the holder is gone. */
import { spawn, spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { hostname, tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { acquireDirLease, holderGone, LEASE_FILE, pidAlive } from '../../src/core/dir-lease.ts';

const work = mkdtempSync(join(tmpdir(), 'weir-lease-unit-'));
afterAll(() => rmSync(work, { recursive: true, force: true }));

/** The pid of a process that has exited (a real one, so the number was a real pid once). */
function deadPid(): number {
  const r = spawnSync(process.execPath, ['-e', 'process.stdout.write(String(process.pid))'], { encoding: 'utf8' });
  return Number(r.stdout);
}

function holder(fields: Record<string, unknown>): string {
  return JSON.stringify({ pid: process.pid, host: hostname(), processStart: undefined, nonce: 'n0', since: 0, owner: 'job x', ...fields });
}

describe('holderGone', () => {
  const h = { pid: 10, host: 'a', processStart: '500', nonce: 'n', since: 0, owner: 'job' };
  it('same host: gone when the pid is dead or belongs to a process started at another time', () => {
    expect(holderGone(h, 'a', () => false, () => undefined)).toBe(true);
    expect(holderGone(h, 'a', () => true, () => '500')).toBe(false);
    expect(holderGone(h, 'a', () => true, () => '777')).toBe(true);
    expect(holderGone(h, 'a', () => true, () => undefined)).toBe(false); // cannot tell: alive
    expect(holderGone({ ...h, processStart: undefined }, 'a', () => true, () => '777')).toBe(false);
  });
  it('another host can never be judged gone', () => {
    expect(holderGone(h, 'b', () => false, () => undefined)).toBe(false);
  });
  it('a holder in another pid namespace (a container beside this one, same host name) is never judged gone by its pid; after a reboot it is', () => {
    const own = { pidNs: 'pid:[4026531836]', bootId: 'boot-1' };
    const there = { ...h, pidNs: 'pid:[4026532999]', bootId: 'boot-1' };
    expect(holderGone(there, 'a', () => false, () => undefined, own)).toBe(false);
    expect(holderGone({ ...there, pidNs: own.pidNs }, 'a', () => false, () => undefined, own)).toBe(true);
    expect(holderGone({ ...there, bootId: 'boot-0' }, 'a', () => true, () => '500', own)).toBe(true);
    // A lease of older weir names no namespace: judged by its pid, as before.
    expect(holderGone(h, 'a', () => false, () => undefined, own)).toBe(true);
  });
});

describe('acquireDirLease', () => {
  it('exclusive while held (also within one process), free again once released', () => {
    const dir = join(work, 'a');
    const lease = acquireDirLease(dir, 'output directory', 'job one');
    expect(existsSync(join(dir, LEASE_FILE))).toBe(true);
    expect(() => acquireDirLease(dir, 'output directory', 'job two')).toThrow(
      new RegExp(`^output directory ${dir} is in use by weir process ${process.pid} \\(job one, since .*\\): stop it first \\(kill ${process.pid}\\) or use another directory$`));
    lease.release();
    lease.release(); // idempotent
    expect(existsSync(join(dir, LEASE_FILE))).toBe(false);
    acquireDirLease(dir, 'output directory', 'job two').release();
  });

  it('a lease of a dead process is taken over, said in the log', () => {
    const dir = join(work, 'b');
    acquireDirLease(dir, 'x', 'setup').release();
    const pid = deadPid();
    writeFileSync(join(dir, LEASE_FILE), holder({ pid, owner: 'job old' }));
    const logs: string[] = [];
    const lease = acquireDirLease(dir, 'checkpoint directory', 'job new', (l) => logs.push(l));
    expect(logs).toEqual([`weir: checkpoint directory ${dir}: took over the lease of weir process ${pid} (job old), which is gone`]);
    expect(JSON.parse(readFileSync(join(dir, LEASE_FILE), 'utf8')).owner).toBe('job new');
    lease.release();
  });

  it('a live pid that is another process than the holder (reused pid, other start time) is taken over', () => {
    const dir = join(work, 'c');
    acquireDirLease(dir, 'x', 'setup').release();
    writeFileSync(join(dir, LEASE_FILE), holder({ processStart: '1', owner: 'job old' }));
    acquireDirLease(dir, 'x', 'job new').release();
  });

  it('a holder on another host is never taken over; the message says which file to delete', () => {
    const dir = join(work, 'd');
    acquireDirLease(dir, 'x', 'setup').release();
    writeFileSync(join(dir, LEASE_FILE), holder({ host: 'elsewhere', pid: 1234 }));
    expect(() => acquireDirLease(dir, 'checkpoint directory', 'job new')).toThrow(`checkpoint directory ${dir} is in use by weir process 1234 on host elsewhere (job x, since 1970-01-01T00:00:00.000Z): if that process is gone, delete ${join(dir, LEASE_FILE)}; or use another directory`);
  });

  it('an unreadable lease file is not guessed about', () => {
    const dir = join(work, 'e');
    acquireDirLease(dir, 'x', 'setup').release();
    writeFileSync(join(dir, LEASE_FILE), '{"pid":');
    expect(() => acquireDirLease(dir, 'output directory', 'job')).toThrow(/has an unreadable lease file .*; if no weir process uses the directory, delete the file/);
  });
});

describe('a zombie holds nothing', () => {
  it('a process that exited but is not reaped yet (a SIGKILLed holder whose parent died too) counts as gone', async () => {
    // bash starts a short sleep in the background, then becomes a long sleep that never reaps it.
    const parent = spawn('bash', ['-c', 'sleep 0.05 & echo $!; exec sleep 30'], { stdio: ['ignore', 'pipe', 'ignore'] });
    try {
      const pid = await new Promise<number>((res) => parent.stdout!.once('data', (d: Buffer) => res(Number(String(d).trim()))));
      expect(pidAlive(pid)).toBe(true);
      let gone = false;
      for (let i = 0; i < 100 && !gone; i++) {
        await new Promise((r) => setTimeout(r, 50));
        gone = !pidAlive(pid);
      }
      expect(gone, `pid ${pid} still counts as alive although it exited`).toBe(true);
      // kill(pid, 0) alone would still succeed on the zombie.
      expect(() => process.kill(pid, 0)).not.toThrow();
    } finally {
      parent.kill('SIGKILL');
    }
  });
});
