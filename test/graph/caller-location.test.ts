/**
 * Where an operator was declared (callerLocation) is taken from raw call sites, not from a
 * formatted stack, and mapped through the module's source map only when a message shows it
 * (sourcePosition). In a child process with Node's own stack formatting (vitest installs its
 * own, under which callerLocation reads the formatted stack instead): the mapped position of
 * a call from a source-mapped module must be the one Node's formatting gives, and the raw one
 * the compiled file's.
 */
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { callerLocation, sourcePosition } from '../../src/graph/transformation.ts';

const ROOT = resolve(fileURLToPath(new URL('../..', import.meta.url)));

describe('callerLocation and sourcePosition', () => {
  it('a call from a source-mapped module: raw position in the compiled file, mapped to the source as Node maps it', () => {
    const dir = mkdtempSync(join(tmpdir(), 'weir-caller-location-'));
    try {
      const r = spawnSync(process.execPath, ['--import', 'tsx', 'test/fixtures/caller-location-probe.ts', ROOT, dir], { cwd: ROOT, encoding: 'utf8', timeout: 60_000 });
      expect(r.status, r.stderr).toBe(0);
      const got = JSON.parse(r.stdout.trim()) as { formatter?: string; raw?: string; mapped?: string; nodeFrame?: string };
      expect(got.formatter).toBe('ErrorPrepareStackTrace'); // Node's own: the raw call-site path ran
      expect(got.raw).toMatch(new RegExp(`^file://${dir}/job\\.mjs:2:\\d+$`));
      expect(got.nodeFrame).toMatch(new RegExp(`^${dir}/job\\.ts:3:\\d+$`));
      expect(got.mapped).toBe(got.nodeFrame);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('a location without a source map, or not a location, comes back as a path unchanged', () => {
    expect(sourcePosition('/no/such/file.js:3:7')).toBe('/no/such/file.js:3:7');
    expect(sourcePosition('file:///no/such/file.js:3:7')).toBe('/no/such/file.js:3:7');
    expect(sourcePosition('somewhere')).toBe('somewhere');
  });

  it('under a stack formatter of its own (this test runner), the formatted stack names this file', () => {
    expect(callerLocation()).toMatch(/test\/graph\/caller-location\.test\.ts:\d+:\d+$/);
  });
});
