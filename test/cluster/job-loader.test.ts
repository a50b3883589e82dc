/**
 * Getting a job from its file: the bundle cache keyed by the file's real path (a symlinked
 * release switched to another one is not served the old bundle), a bundled job loaded after
 * its file was moved away (a restart during a redeploy), and error locations in paths with
 * spaces. Each failed before (found by a read-only audit).
 */
import { mkdirSync, mkdtempSync, rmSync, symlinkSync, unlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';
import { bundleCacheEntry } from '../../src/cluster/job-bundle-cache.ts';
import { jobFrame, loadJobModule } from '../../src/cluster/job-loader.ts';

const root = mkdtempSync(join(tmpdir(), 'weir-job-loader-'));
afterAll(() => rmSync(root, { recursive: true, force: true }));

describe('job loading', () => {
  it('a job reached through a symlink has the cache entry of the file it points to', () => {
    for (const v of ['v1', 'v2']) {
      mkdirSync(join(root, 'releases', v), { recursive: true });
      writeFileSync(join(root, 'releases', v, 'job.ts'), `export const VERSION = '${v}';\n`);
    }
    const current = join(root, 'current');
    symlinkSync(join(root, 'releases', 'v1'), current);
    const viaLink1 = bundleCacheEntry(join(current, 'job.ts'), 'weir-entry', join(root, 'cache'));
    unlinkSync(current);
    symlinkSync(join(root, 'releases', 'v2'), current);
    const viaLink2 = bundleCacheEntry(join(current, 'job.ts'), 'weir-entry', join(root, 'cache'));
    expect(viaLink2).not.toBe(viaLink1); // before: the same entry, v1's bundle served for v2
    expect(viaLink1).toBe(bundleCacheEntry(join(root, 'releases', 'v1', 'job.ts'), 'weir-entry', join(root, 'cache')));
  });

  it('a job given with the code to import (its bundle) loads after its file is gone', async () => {
    const dir = join(root, 'moved');
    mkdirSync(dir);
    const bundled = join(dir, 'bundle.mjs');
    writeFileSync(bundled, "export default { __weirJob: true, build() {} };\n");
    const gone = join(dir, 'job.ts'); // never existed here: moved away by a redeploy
    await expect(loadJobModule(gone)).rejects.toThrow(`job file not found: ${gone}`);
    const def = await loadJobModule(gone, pathToFileURL(bundled).href).catch((e: Error) => e);
    expect(def instanceof Error ? def.message : 'loaded').not.toContain('job file not found');
  });

  it('an error location in a path with spaces is found, in parentheses or after "at"', () => {
    const file = join(root, 'my jobs', 'é', 'job.ts');
    const stack = ['Error: boom', '    at helper (node:internal/x:1:1)', `    at build (${file}:5:9)`, `    at ${file}:7:3`].join('\n');
    expect(jobFrame(stack, file)).toMatch(/my jobs\/é\/job\.ts:5:9$/);
    expect(jobFrame(['Error: boom', `    at ${file}:7:3`].join('\n'), file)).toMatch(/my jobs\/é\/job\.ts:7:3$/);
    expect(jobFrame(['Error: boom', `    at async Promise.all (index 0)`, `    at new Foo (${pathToFileURL(file).href}:2:1)`].join('\n'), file)).toMatch(/job\.ts:2:1$/);
  });
});
