/**
 * State several times larger than the JS heap: test/fixtures/jobs/large-state.ts writes a
 * 600-byte value for each of 300,000 keys (about 180 MB of values) and reads every one back,
 * in a `weir run` child process limited to a 64 MB heap (node --max-old-space-size=64), on the
 * disk backend. It must finish and find every value. The heap backend runs out of memory on
 * the same job and heap (checked by hand: "JavaScript heap out of memory" after about 5 s),
 * which is what makes this test able to fail: a disk backend that kept its state in the heap
 * would die the same way.
 */
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { ROOT } from '../chaos/harness.ts';

const KEYS = 300_000;
const VALUE_BYTES = 600;
const HEAP_MB = 64;

const stateDir = mkdtempSync(join(tmpdir(), 'weir-large-state-'));
afterAll(() => rmSync(stateDir, { recursive: true, force: true }));

describe('disk backend: state larger than the JS heap', () => {
  it(`${KEYS} keys x ${VALUE_BYTES} B with a ${HEAP_MB} MB heap: the job finishes and reads every value back`, () => {
    const r = spawnSync(process.execPath, [
      `--max-old-space-size=${HEAP_MB}`, 'bin/weir.js', 'run', 'test/fixtures/jobs/large-state.ts', '-p', '1', '-w', '1', '--rest-port', '0',
      '--state-backend', 'disk', '--state-dir', stateDir, '--', String(KEYS), String(VALUE_BYTES),
    ], { cwd: ROOT, encoding: 'utf8', timeout: 110_000 });
    expect(r.status, r.stderr).toBe(0);
    expect(r.stdout).toContain(`checked ${KEYS} ok, 0 bad, 0 missing`);
    expect(KEYS * VALUE_BYTES).toBeGreaterThan(2.5 * HEAP_MB * 2 ** 20);
    expect(readdirSync(stateDir)).toEqual([]); // the store was removed when the job ended
  }, 120_000);
});
