/**
 * weir as a user's project gets it (issue 15, point 9): `npm pack` builds and packs compiled
 * JavaScript and .d.ts files; a new project outside the repository installs the tarball offline
 * (from the tarball and npm's cache), type-checks a job with its own `tsc` and the tsconfig the
 * README recommends (no skipLibCheck: weir's declarations must be clean), and runs it with
 * `npx weir run`, on worker threads, from the compiled package.
 */
import { describe, expect, it } from 'vitest';
import { cpSync, existsSync, mkdtempSync, rmSync, symlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { offlineNpmEnv, runCommand, type CommandRun } from '../helpers/commands.ts';
import { readmeBlocks } from '../helpers/readme.ts';
import { writeConsumerProject } from './consumer.ts';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));

function ok(r: CommandRun, what: string): CommandRun {
  if (r.code !== 0) throw new Error(`${what} exited with ${r.code}\nstdout: ${r.stdout.slice(-3000)}\nstderr: ${r.stderr.slice(-3000)}`);
  return r;
}

// A keyed event-time window over generated clicks, printed per subtask.
const JOB = `import { defineJob, TumblingEventTimeWindows, WatermarkStrategy } from 'weir';

interface Click { user: string; ts: number }

export default defineJob((env, [n]) => {
  // Worker threads import this file bundled by the main thread: its own URL must stay its own.
  if (!import.meta.url.endsWith('/job.ts')) throw new Error(\`import.meta.url is \${import.meta.url}\`);
  env
    .fromGenerator((i): Click => ({ user: \`u\${i % 3}\`, ts: i * 1000 }), { count: Number(n ?? 30) })
    .assignTimestampsAndWatermarks(WatermarkStrategy.forMonotonousTimestamps<Click>().withTimestampAssigner((c) => c.ts))
    .keyBy((c) => c.user)
    .window(TumblingEventTimeWindows.of('10 s'))
    .aggregate({ createAccumulator: () => 0, add: (_c: Click, a: number) => a + 1, getResult: (a) => a, merge: (a, b) => a + b })
    .setParallelism(2)
    .map((count) => ({ count }))
    .print();
});
`;

// The user's tsc sees weir's real types: each line below is an error unless weir's
// declarations type the stream (an 'any' anywhere on the way makes @ts-expect-error fail).
const TYPES = `import { defineJob } from 'weir';

export default defineJob((env) => {
  const s = env.fromElements(1, 2, 3).keyBy((n) => String(n));
  // @ts-expect-error the key is a string
  s.map((n) => n.toUpperCase());
  // @ts-expect-error the key selector gets numbers
  env.fromElements(1).keyBy((n: string) => n);
  // @ts-expect-error there is no such operator
  s.nonsense();
});
`;

/**
 * What `npm pack` reads or builds from: the package's files and what its build takes. Packed
 * from a copy, because `prepare` empties and rebuilds dist/: in the checkout itself that pulled
 * dist/ from under the tests running beside this file (a chaos test's `weir run` failed with
 * ERR_MODULE_NOT_FOUND for a chunk of the dist/ being rebuilt).
 */
const PACKED_FROM = ['package.json', 'package-lock.json', 'README.md', 'bin', 'docs', 'scripts', 'src', 'tsconfig.json', 'tsconfig.build.json'];

function stageCheckout(): string {
  const stage = mkdtempSync(join(tmpdir(), 'weir-pack-'));
  for (const name of PACKED_FROM) cpSync(join(ROOT, name), join(stage, name), { recursive: true });
  symlinkSync(join(ROOT, 'node_modules'), join(stage, 'node_modules'), 'dir');
  return stage;
}

describe('the packed package in a new project', () => {
  it("packs dist/, installs offline, type-checks with the user's tsc and runs with npx weir run", async () => {
    const dir = mkdtempSync(join(tmpdir(), 'weir-consumer-'));
    const stage = stageCheckout();
    try {
      // npm pack runs `prepare`, which builds dist/ from the sources now in the tree.
      const pack = ok(await runCommand('npm', ['pack', '--pack-destination', dir, '--json'], { cwd: stage, env: offlineNpmEnv(), timeoutMs: 300_000 }), 'npm pack');
      const [packed] = JSON.parse(pack.stdout.slice(pack.stdout.indexOf('['))) as { filename: string; files: { path: string }[] }[];
      const paths = packed!.files.map((f) => f.path);
      // dist/'s JavaScript is a bundle: the three entry points (API, CLI, worker thread) and their shared chunks.
      expect(paths).toEqual(expect.arrayContaining(['bin/weir.js', 'dist/index.js', 'dist/index.d.ts', 'dist/cli.js', 'dist/worker.js', 'dist/cluster/worker-entry.js', 'dist/cluster/early-workers.js']));
      // The dashboard ships built: its page, script and styles (uPlot comes from its own dependency).
      expect(paths).toEqual(expect.arrayContaining(['dist/observe/web/index.html', 'dist/observe/web/app.js', 'dist/observe/web/style.css']));
      expect(paths.filter((p) => p.startsWith('src/') || p.startsWith('test/'))).toEqual([]);
      expect(paths.filter((p) => p.endsWith('.ts') && !p.endsWith('.d.ts'))).toEqual([]);

      const tsconfig = readmeBlocks(join(ROOT, 'README.md')).find((b) => b.section === 'Use it in your own project' && b.lang === 'json' && b.code.includes('compilerOptions'));
      expect(tsconfig, 'the README shows a tsconfig.json').toBeDefined();
      // The README's own job, as a user saves it in their project: it must type-check there too.
      const clicks = readmeBlocks(join(ROOT, 'README.md')).find((b) => b.section === 'Writing a job' && b.lang === 'ts');
      expect(clicks, 'the README shows a job').toBeDefined();
      writeConsumerProject(ROOT, dir, join(dir, packed!.filename), { 'tsconfig.json': tsconfig!.code, 'job.ts': JOB, 'types.ts': TYPES, 'clicks.ts': clicks!.code });

      ok(await runCommand('npm', ['ci'], { cwd: dir, env: offlineNpmEnv(), timeoutMs: 300_000 }), 'npm ci --offline');
      expect(existsSync(join(dir, 'node_modules/weir/dist/index.js'))).toBe(true);
      expect(existsSync(join(dir, 'node_modules/weir/src'))).toBe(false);

      ok(await runCommand('npx', ['tsc', '-p', '.'], { cwd: dir, env: offlineNpmEnv(), timeoutMs: 300_000 }), 'tsc in the new project');

      // Its own WEIR_HOME: the first run bundles the job and keeps the bundle, the second reuses it.
      const env = { ...offlineNpmEnv(), WEIR_HOME: join(dir, 'weir-home') };
      for (const expected of [/job bundle cache: stored/, /job bundle cache: reused/]) {
        const run = ok(await runCommand('npx', ['weir', 'run', 'job.ts', '-w', '2', '--log-level', 'debug', '--', '30'], { cwd: dir, env, timeoutMs: 300_000 }), 'npx weir run');
        const counts = run.stdout.split('\n').filter((l) => /^\d+> /.test(l)).map((l) => (JSON.parse(l.replace(/^\d+> /, '')) as { count: number }).count);
        // 30 clicks of 3 users in three 10 s windows: per window one user has 4 clicks, two have 3.
        expect(counts.sort()).toEqual([3, 3, 3, 3, 3, 3, 4, 4, 4]);
        expect(run.stderr).toMatch(/finished/);
        expect(run.stderr).toMatch(expected);
      }
    } finally {
      rmSync(dir, { recursive: true, force: true });
      rmSync(stage, { recursive: true, force: true });
    }
  }, 900_000);
});
