/**
 * In a checkout, `weir run` runs the built dist/ while it is current (built by `npm ci` from the
 * sources as they are), else (a source edited since, or WEIR_FROM_SOURCE=1) weir's sources
 * through tsx, where a job's `import 'weir'` resolves to those same sources (the 'weir-source'
 * condition), not to dist/. Either way: one copy of every class, in the main thread and in
 * worker threads. Which one a checkout picks is src/cli/dist-current.js, tested below on a
 * folder of its own.
 */
import { mkdirSync, mkdtempSync, rmSync, utimesSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { fileURLToPath } from 'node:url';
import { runCommand } from '../helpers/commands.ts';
import { distIsCurrent, sourceStamp } from '../../src/cli/dist-current.js';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));

describe('weir run from a checkout', () => {
  for (const mode of ['sources', 'dist while current'] as const) {
    for (const workers of ['1', '2']) {
      it(`a job importing 'weir' gets the runtime's own modules (${mode}, ${workers} worker thread(s))`, async () => {
        const env = { ...process.env, WEIR_FROM_SOURCE: mode === 'sources' ? '1' : '0' };
        const r = await runCommand(process.execPath, ['bin/weir.js', 'run', 'test/fixtures/jobs/one-copy.ts', '-p', '2', '-w', workers, '--rest-port', '0'], { cwd: ROOT, env, timeoutMs: 300_000 });
        expect(r.stderr).not.toMatch(/error/);
        expect(r.code).toBe(0);
        // The job is built in the main thread and in every worker: each says which runtime it got.
        const current = distIsCurrent(join(ROOT, 'src'), join(ROOT, 'dist', 'source-stamp.json'));
        const runtimes = r.stderr.split('\n').filter((l) => l.startsWith('runtime: '));
        expect(runtimes.length).toBeGreaterThanOrEqual(1);
        expect(new Set(runtimes)).toEqual(new Set([`runtime: ${mode === 'sources' || !current ? 'sources' : 'dist'}`]));
        const odd = r.stdout.split('\n').filter((l) => / odd \d$/.test(l) || /^odd \d$/.test(l)).map((l) => l.replace(/^\d+> /, '')).sort();
        expect(odd).toEqual(['odd 1', 'odd 3', 'odd 5']);
      }, 600_000);
    }
  }
});

describe('whether dist/ is current (src/cli/dist-current.js)', () => {
  it('current right after the stamp; stale once a source is edited, added or removed, or without a stamp', () => {
    const dir = mkdtempSync(join(tmpdir(), 'weir-dist-current-'));
    try {
      const src = join(dir, 'src');
      mkdirSync(join(src, 'a'), { recursive: true });
      const old = new Date(Date.now() - 60_000);
      for (const f of ['index.ts', 'a/b.ts', 'a/c.js']) {
        writeFileSync(join(src, f), f);
        utimesSync(join(src, f), old, old);
      }
      const stamp = join(dir, 'source-stamp.json');
      expect(distIsCurrent(src, stamp)).toBe(false); // never built
      writeFileSync(stamp, JSON.stringify(sourceStamp(src)));
      expect(sourceStamp(src).files).toBe(3);
      expect(distIsCurrent(src, stamp)).toBe(true);
      writeFileSync(join(src, 'a/b.ts'), 'edited'); // modified now, after the build
      expect(distIsCurrent(src, stamp)).toBe(false);
      utimesSync(join(src, 'a/b.ts'), old, old);
      expect(distIsCurrent(src, stamp)).toBe(true);
      writeFileSync(join(src, 'a/new.ts'), 'added');
      utimesSync(join(src, 'a/new.ts'), old, old);
      expect(distIsCurrent(src, stamp)).toBe(false); // one more file, however old
      rmSync(join(src, 'a/new.ts'));
      rmSync(join(src, 'a/c.js'));
      expect(distIsCurrent(src, stamp)).toBe(false); // one fewer
      writeFileSync(stamp, '{"files": "3"}');
      expect(distIsCurrent(src, stamp)).toBe(false); // a stamp that is not one
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
