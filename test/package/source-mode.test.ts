/**
 * In a checkout, `weir run` runs weir from its sources, and a job's `import 'weir'` resolves
 * to those same sources (the 'weir-source' condition), not to the compiled dist/ that
 * `npm ci` also builds: one copy of every class, in the main thread and in worker threads.
 */
import { describe, expect, it } from 'vitest';
import { fileURLToPath } from 'node:url';
import { runCommand } from '../helpers/commands.ts';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));

describe('weir run from a checkout', () => {
  for (const workers of ['1', '2']) {
    it(`a job importing 'weir' gets the runtime's own modules (${workers} worker thread(s))`, async () => {
      const r = await runCommand(process.execPath, ['bin/weir.js', 'run', 'test/fixtures/jobs/one-copy.ts', '-p', '2', '-w', workers, '--rest-port', '0'], { cwd: ROOT, timeoutMs: 300_000 });
      expect(r.stderr).not.toMatch(/error/);
      expect(r.code).toBe(0);
      const odd = r.stdout.split('\n').filter((l) => / odd \d$/.test(l) || /^odd \d$/.test(l)).map((l) => l.replace(/^\d+> /, '')).sort();
      expect(odd).toEqual(['odd 1', 'odd 3', 'odd 5']);
    }, 600_000);
  }
});
