/**
 * The disk backend's write thread (src/state/disk/write-thread.ts) at process exit: a process
 * that exits while batches are still on their way must end (a thread stopped inside an LMDB
 * write transaction left the write lock held, and one stopped with an lmdb-js batch open left
 * lmdb-js's native writer waiting: both hung the exit for ever).
 */
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { ROOT } from '../chaos/harness.ts';

const stateDir = mkdtempSync(join(tmpdir(), 'weir-disk-exit-'));
afterAll(() => rmSync(stateDir, { recursive: true, force: true }));

describe('disk backend write thread', () => {
  // Three times: the hangs seen were races (one exit in three hung before the exit waited).
  it('a process exiting with batches still being written ends, and removes its store', () => {
    for (let i = 0; i < 3; i++) {
      const r = spawnSync(process.execPath, ['--import', 'tsx', 'test/fixtures/disk-exit-mid-write.ts', stateDir], { cwd: ROOT, encoding: 'utf8', timeout: 60_000 });
      expect(r.signal, 'the process hung at exit and was killed').toBeNull();
      expect(r.status, r.stderr).toBe(0);
      expect(r.stdout).toContain('exiting');
      expect(readdirSync(stateDir)).toEqual([]);
    }
  }, 200_000);
});
