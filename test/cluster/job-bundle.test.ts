/**
 * The job module bundled for worker threads (job-bundle.ts): plain JavaScript that Node imports
 * without tsx, with the job's own files inlined, packages imported from where they are installed,
 * `import 'weir'` turned into the runtime's entry, and the job's own import.meta.url and filename.
 */
import { existsSync, readFileSync } from 'node:fs';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { describe, expect, it } from 'vitest';
import { bundleJobAs } from '../../src/cluster/job-bundle.ts';

const JOB = fileURLToPath(new URL('../fixtures/jobs/bundled/job.ts', import.meta.url));
const STUB = new URL('../fixtures/jobs/bundled/weir-stub.mjs', import.meta.url).href;

describe('the job bundled for worker threads', () => {
  it('imports as plain JavaScript, with its own files inlined, packages by URL, weir as given and its own import.meta', async () => {
    const bundle = await bundleJobAs(JOB, STUB);
    try {
      const text = readFileSync(fileURLToPath(bundle.url), 'utf8');
      expect(text).toContain(JSON.stringify(STUB));
      expect(text).toMatch(/from "file:\/\/\/[^"]*\/node_modules\/yaml\/[^"]+"/);
      expect(text).not.toMatch(/import\.meta\.(url|filename)/);
      const mod = (await import(bundle.url)) as { default: { stub: boolean }; facts: Record<string, unknown> };
      expect(mod.default.stub).toBe(true);
      expect(mod.facts).toEqual({ helper: 'from helper.ts', yaml: { a: 1 }, url: pathToFileURL(JOB).href, file: 'job.ts' });
    } finally {
      bundle.dispose();
    }
    expect(existsSync(fileURLToPath(bundle.url))).toBe(false);
  });
});
