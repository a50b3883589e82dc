/**
 * Where the disk backend's stores live: under a directory of this thread's, leased to this
 * process (core/dir-lease.ts), removed with its last store. A process that died without
 * removing its stores (a SIGKILL runs no exit hook) left a whole copy of its state behind for
 * good, one per crash (the audit: 275 MB after one kill, 158 MB after two); the next process to
 * open a store under the same base directory removes them, and never a directory whose process
 * may be alive or that has no lease yet.
 */
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { hostname, tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { LEASE_FILE } from '../../src/core/dir-lease.ts';
import { DiskStore } from '../../src/state/disk/store.ts';

const base = mkdtempSync(join(tmpdir(), 'weir-store-dirs-'));
afterAll(() => rmSync(base, { recursive: true, force: true }));

/** A pid that is certainly gone: a child that ran and was reaped. */
function deadPid(): number {
  const r = spawnSync(process.execPath, ['-e', 'process.stdout.write(String(process.pid))']);
  return Number(r.stdout.toString());
}

/** A stores directory as another process left it: a lease naming `pid`, and a store with data. */
function leftBehind(name: string, pid: number | undefined, extra: Record<string, unknown> = {}): string {
  const dir = join(base, name);
  mkdirSync(join(dir, 'weir-state-abc123'), { recursive: true });
  writeFileSync(join(dir, 'weir-state-abc123', 'data.mdb'), Buffer.alloc(4096));
  if (pid !== undefined) {
    writeFileSync(join(dir, LEASE_FILE), JSON.stringify({ pid, host: hostname(), processStart: undefined, nonce: 'n' + pid, since: Date.now(), owner: 'test', ...extra }) + '\n');
  }
  return dir;
}

describe('disk store directories', () => {
  it('go under a leased directory of this process, removed with the last store', () => {
    const a = new DiskStore(base, 'test a', false);
    const b = new DiskStore(base, 'test b', false);
    const own = join(a.dir, '..');
    expect(join(b.dir, '..')).toBe(own);
    expect(own.startsWith(join(base, 'weir-stores-'))).toBe(true);
    expect(JSON.parse(readFileSync(join(own, LEASE_FILE), 'utf8')).pid).toBe(process.pid);
    a.dispose();
    expect(existsSync(a.dir)).toBe(false);
    expect(existsSync(own)).toBe(true);
    b.dispose();
    expect(existsSync(own)).toBe(false);
  });

  it('a directory left by a process that is gone is removed when the next store opens; one whose process lives, or without a lease, is kept', () => {
    const dead = leftBehind('weir-stores-dead01', deadPid());
    const alive = leftBehind('weir-stores-live01', process.ppid);
    const unleased = leftBehind('weir-stores-new001', undefined);
    const other = leftBehind('something-else', deadPid());
    // A process in another pid namespace (a container beside this one, same host name): its pid
    // means nothing here, so it may be alive (before, its live stores were deleted under it).
    const elsewhere = leftBehind('weir-stores-ns0001', deadPid(), { pidNs: 'pid:[1]' });
    const s = new DiskStore(base, 'test', false);
    try {
      expect(existsSync(dead)).toBe(false);
      expect(existsSync(alive)).toBe(true);
      expect(existsSync(unleased)).toBe(true);
      expect(existsSync(other)).toBe(true);
      expect(existsSync(elsewhere)).toBe(true);
    } finally {
      s.dispose();
    }
    expect(readdirSync(base).sort()).toEqual(['something-else', 'weir-stores-live01', 'weir-stores-new001', 'weir-stores-ns0001']);
  });
});
