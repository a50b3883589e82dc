/**
 * Job bundles kept between runs (job-bundle-cache.ts): reused only while every file that went
 * into them, and every file steering how their imports resolve, is byte for byte the same;
 * anything malformed in the cache is a miss, and a run's bundle is its own file.
 */
import { chmodSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, utimesSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { bundleJobAs, type JobBundle } from '../../src/cluster/job-bundle.ts';
import { evict, parseManifest, privateCacheRoot, staleReason } from '../../src/cluster/job-bundle-cache.ts';

const STUB = new URL('../fixtures/jobs/bundled/weir-stub.mjs', import.meta.url).href;
const FIXTURE_JOB = fileURLToPath(new URL('../fixtures/jobs/bundled/job.ts', import.meta.url));

let root: string;
let jobDir: string;
let job: string;
let entry: string;
const bundles: JobBundle[] = [];

beforeEach(() => {
  root = mkdtempSync(join(tmpdir(), 'weir-bundle-cache-test-'));
  jobDir = join(root, 'project');
  mkdirSync(jobDir);
  job = join(jobDir, 'job.ts');
  writeFileSync(job, [
    "import { basename } from 'node:path';",
    "import { defineJob } from 'weir';",
    "import { HELPER } from './helper.ts';",
    'export const facts = { helper: HELPER, file: basename(import.meta.filename) };',
    'export default defineJob((env) => void env);',
    '',
  ].join('\n'));
  writeHelper('one');
  entry = join(root, 'cache', 'entry');
});

afterEach(() => {
  for (const b of bundles.splice(0)) b.dispose();
  rmSync(root, { recursive: true, force: true });
});

function writeHelper(value: string): void {
  writeFileSync(join(jobDir, 'helper.ts'), `export const HELPER: string = ${JSON.stringify(value)};\n`);
}

async function bundle(path = job): Promise<JobBundle> {
  const b = await bundleJobAs(path, STUB, entry);
  bundles.push(b);
  return b;
}

async function helperOf(b: JobBundle): Promise<string> {
  const mod = (await import(b.url)) as { facts: { helper: string; file: string } };
  expect(mod.facts.file).toBe('job.ts');
  return mod.facts.helper;
}

describe('the job bundle cache', () => {
  it('reuses a bundle while its files are unchanged, each run with a file of its own', async () => {
    const first = await bundle();
    const second = await bundle();
    expect([first.cached, second.cached]).toEqual([false, true]);
    expect(second.url).not.toBe(first.url);
    expect(readFileSync(fileURLToPath(second.url), 'utf8')).toBe(readFileSync(fileURLToPath(first.url), 'utf8'));
    expect(await helperOf(second)).toBe('one');
    second.dispose();
    expect(existsSync(fileURLToPath(second.url))).toBe(false);
    expect((await bundle()).cached).toBe(true); // the cache kept its own copy
  });

  it('bundles again when a source changes, and then reuses the new bundle', async () => {
    await bundle();
    writeHelper('two');
    const changed = await bundle();
    expect(changed.cached).toBe(false);
    expect(await helperOf(changed)).toBe('two');
    const again = await bundle();
    expect(again.cached).toBe(true);
    expect(await helperOf(again)).toBe('two');
  });

  it('bundles again when a file that steers resolution appears beside the sources or above them', async () => {
    await bundle();
    writeFileSync(join(jobDir, 'tsconfig.json'), '{"compilerOptions":{}}');
    expect((await bundle()).cached).toBe(false);
    expect((await bundle()).cached).toBe(true);
    writeFileSync(join(root, 'package.json'), '{"type":"module"}');
    expect((await bundle()).cached).toBe(false);
  });

  it('bundles again when a config the tsconfig extends changes (a path alias moved), through a chain, comments and all (before: the stale bundle was reused)', async () => {
    mkdirSync(join(jobDir, 'one'));
    mkdirSync(join(jobDir, 'two'));
    writeFileSync(join(jobDir, 'one', 'h.ts'), 'export const HELPER: string = "alias one";\n');
    writeFileSync(join(jobDir, 'two', 'h.ts'), 'export const HELPER: string = "alias two";\n');
    writeFileSync(job, readFileSync(job, 'utf8').replace("'./helper.ts'", "'#h'"));
    writeFileSync(join(jobDir, 'tsconfig.json'), '{\n  // the shared settings\n  "extends": "./configs/base",\n}\n');
    mkdirSync(join(jobDir, 'configs'));
    writeFileSync(join(jobDir, 'configs', 'base.json'), '{ "extends": "./paths.json" }');
    const paths = (to: string) => writeFileSync(join(jobDir, 'configs', 'paths.json'), JSON.stringify({ compilerOptions: { baseUrl: '..', paths: { '#h': [`./${to}/h.ts`] } } }));
    paths('one');
    const first = await bundle();
    expect(await helperOf(first)).toBe('alias one');
    expect((await bundle()).cached).toBe(true);
    paths('two');
    const moved = await bundle();
    expect(moved.cached).toBe(false);
    expect(await helperOf(moved)).toBe('alias two');
  });

  it('bundles again when a file appears that an import would now resolve to (./helper found helper.js; a new helper.ts wins)', async () => {
    writeFileSync(job, readFileSync(job, 'utf8').replace("'./helper.ts'", "'./helper'"));
    rmSync(join(jobDir, 'helper.ts'));
    writeFileSync(join(jobDir, 'helper.js'), 'export const HELPER = "from js";\n');
    expect(await helperOf(await bundle())).toBe('from js');
    expect((await bundle()).cached).toBe(true);
    writeHelper('from ts');
    const now = await bundle();
    expect(now.cached).toBe(false);
    expect(await helperOf(now)).toBe('from ts');
  });

  it('treats a malformed manifest or a missing bundle file as a miss and repairs the entry', async () => {
    await bundle();
    writeFileSync(join(entry, 'manifest.json'), '{"format": 1, "bundle": "../../etc/passwd", "files": {}}');
    expect((await bundle()).cached).toBe(false);
    expect((await bundle()).cached).toBe(true);
    for (const f of readdirSync(entry)) if (f.endsWith('.mjs')) rmSync(join(entry, f));
    const rebuilt = await bundle();
    expect(rebuilt.cached).toBe(false);
    expect(await helperOf(rebuilt)).toBe('one');
    expect((await bundle()).cached).toBe(true);
  });

  it('records the packages a job imports, and a package file gone makes the entry stale', async () => {
    const b = await bundleJobAs(FIXTURE_JOB, STUB, entry);
    bundles.push(b);
    const m = parseManifest(readFileSync(join(entry, 'manifest.json'), 'utf8'))!;
    expect(m).toBeDefined();
    const yamlFile = m.externals.find((e) => e.includes(`${'node_modules'}/yaml/`));
    expect(yamlFile).toBeDefined();
    expect(Object.keys(m.files).some((f) => /node_modules\/yaml\/package\.json$/.test(f))).toBe(true);
    expect(Object.keys(m.files)).toContain(FIXTURE_JOB);
    expect(staleReason(m)).toBeUndefined();
    expect(staleReason(m, undefined, (p) => p !== yamlFile)).toBe(`${yamlFile} is gone`);
    expect((await bundleJobAs(FIXTURE_JOB, STUB, entry).then((x) => (bundles.push(x), x))).cached).toBe(true);
  });

  it('rejects manifests that are not its own format', () => {
    const good = { format: 1, bundle: 'job-0123456789abcdef.mjs', files: { '/a/job.ts': 'a'.repeat(64), '/a/tsconfig.json': null }, externals: [] };
    expect(parseManifest(JSON.stringify(good))).toEqual(good);
    expect(parseManifest('not json')).toBeUndefined();
    expect(parseManifest(JSON.stringify({ ...good, format: 2 }))).toBeUndefined();
    expect(parseManifest(JSON.stringify({ ...good, bundle: '../job-0123456789abcdef.mjs' }))).toBeUndefined();
    expect(parseManifest(JSON.stringify({ ...good, files: { 'relative/job.ts': 'a'.repeat(64) } }))).toBeUndefined();
    expect(parseManifest(JSON.stringify({ ...good, files: { '/a/job.ts': 'xyz' } }))).toBeUndefined();
    expect(parseManifest(JSON.stringify({ ...good, files: {} }))).toBeUndefined();
    expect(parseManifest(JSON.stringify({ ...good, externals: [3] }))).toBeUndefined();
  });

  it('keeps the most recently written entries', () => {
    const cache = join(root, 'evict');
    for (let i = 0; i < 5; i++) {
      mkdirSync(join(cache, `e${i}`), { recursive: true });
      writeFileSync(join(cache, `e${i}`, 'manifest.json'), '{}');
      const at = new Date(Date.now() - (5 - i) * 60_000);
      utimesSync(join(cache, `e${i}`, 'manifest.json'), at, at);
    }
    evict(cache, 3);
    expect(readdirSync(cache).sort()).toEqual(['e2', 'e3', 'e4']);
  });

  it('is used only in a directory no one else can write to', () => {
    const home = join(root, 'home');
    const cache = join(home, 'job-bundles');
    expect(privateCacheRoot(cache)).toBe(cache);
    chmodSync(cache, 0o777);
    expect(privateCacheRoot(cache)).toBeUndefined();
    chmodSync(cache, 0o700);
    chmodSync(home, 0o777);
    expect(privateCacheRoot(cache)).toBeUndefined();
    chmodSync(home, 0o755);
    expect(privateCacheRoot(cache)).toBe(cache);
  });
});
