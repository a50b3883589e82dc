/**
 * Every code block in the README runs as shown (issue 15, point 12). The blocks are read from
 * README.md itself and each is matched by exactly one entry below: a new block fails the
 * first test until it is run here (or, for commands a test must not run, a reason is given).
 * Shell lines run as a user types them, through bash and npx, offline; '/tmp/' becomes a
 * fresh directory per test so runs do not meet each other or a user's files.
 */
import { describe, expect, it } from 'vitest';
import { spawn } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { offlineNpmEnv, runCommand, type CommandRun } from '../helpers/commands.ts';
import { committedLines } from '../helpers/output.ts';
import { readmeBlocks, type CodeBlock } from '../helpers/readme.ts';
import { weirRun, type RunningCli } from '../savepoint/helpers.ts';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const BLOCKS = readmeBlocks(join(ROOT, 'README.md'));
const COMMAND_MS = 600_000;

/** The commands of a shell block: one per line, comments dropped. */
function commands(b: CodeBlock): string[] {
  return b.code.split('\n').map((l) => l.replace(/\s+#\s.*$/, '').trim()).filter((l) => l !== '' && !l.startsWith('#'));
}

function blockWhere(section: string, lang: string, includes: string): CodeBlock {
  const found = BLOCKS.filter((b) => b.section === section && b.lang === lang && b.code.includes(includes));
  if (found.length !== 1) throw new Error(`README: expected one ${lang} block in "${section}" containing ${JSON.stringify(includes)}, found ${found.length}`);
  return found[0]!;
}

/** Which test exercises each kind of block; every block must match exactly one. */
const COVERAGE: readonly { readonly section: string; readonly lang: string; readonly includes: string; readonly by: string }[] = [
  { section: 'Quick start', lang: 'sh', includes: 'examples/word-count.ts', by: 'quick start: word count' },
  { section: 'Quick start', lang: 'sh', includes: 'examples/exactly-once.ts', by: 'quick start: exactly-once, killed and resumed' },
  { section: 'Tests', lang: 'sh', includes: 'npm test', by: 'tests: the command is the one CI runs' },
  { section: 'Writing a job', lang: 'ts', includes: 'defineJob', by: 'writing a job' },
  { section: 'Writing a job', lang: 'sh', includes: 'clicks.ts', by: 'writing a job' },
  { section: 'Use it in your own project', lang: 'sh', includes: 'npm install', by: 'test/package/install.test.ts' },
  { section: 'Use it in your own project', lang: 'json', includes: 'compilerOptions', by: 'test/package/install.test.ts' },
  { section: 'Running jobs: `weir run`', lang: '', includes: 'weir run <job.ts|job.js>', by: 'weir run synopsis' },
  { section: 'Savepoints, upgrades and rescaling', lang: 'sh', includes: 'npx weir savepoint', by: 'savepoints' },
];

/** A README line with its '/tmp/' paths moved into this test's directory. */
function local(line: string, tmp: string): string {
  return line.replace(/(^|\s)\/tmp\//g, `$1${tmp}/`);
}

function shell(line: string, cwd: string, tmp: string, timeoutMs = COMMAND_MS): Promise<CommandRun> {
  return runCommand('bash', ['-c', line], { cwd, env: offlineNpmEnv({ WEIR_HOME: join(tmp, 'weir-home') }), timeoutMs });
}

function ok(r: CommandRun, what: string): CommandRun {
  if (r.code !== 0) throw new Error(`README command failed (exit ${r.code}): ${what}\nstdout: ${r.stdout.slice(-3000)}\nstderr: ${r.stderr.slice(-3000)}`);
  return r;
}

/** A scratch directory; inside the repository when a job file there must resolve 'weir' as this package. */
function scratch(inRepo = false): string {
  const base = inRepo ? join(ROOT, 'tmp') : tmpdir();
  mkdirSync(base, { recursive: true });
  return mkdtempSync(join(base, 'readme-'));
}

describe('README code blocks', () => {
  it('every block is exercised by exactly one test here or by the package test', () => {
    expect(BLOCKS.length).toBeGreaterThan(0);
    for (const b of BLOCKS) {
      const by = COVERAGE.filter((c) => c.section === b.section && c.lang === b.lang && b.code.includes(c.includes));
      expect(by.map((c) => c.by), `README.md:${b.line} (${b.lang || 'plain'} block in "${b.section}")`).toHaveLength(1);
    }
    for (const c of COVERAGE) blockWhere(c.section, c.lang, c.includes);
    // The package test reads its tsconfig from the README and runs the install steps offline.
    expect(readFileSync(join(ROOT, 'test/package/install.test.ts'), 'utf8')).toContain("'Use it in your own project'");
  });

  it('tests: the command is the one CI runs after npm ci', () => {
    const block = blockWhere('Tests', 'sh', 'npm test');
    // Not run here: this test is itself part of `npm test`.
    expect(commands(block)).toEqual(['npm test']);
    const ci = readFileSync(join(ROOT, '.ci/run'), 'utf8').split('\n').map((l) => l.trim());
    expect(ci).toEqual(expect.arrayContaining(['npm ci', 'npm test']));
  });

  it('quick start: word count', async () => {
    const block = blockWhere('Quick start', 'sh', 'examples/word-count.ts');
    const [install, run, ...rest] = commands(block);
    expect(rest).toEqual([]);
    // `npm ci` is not run here: the suite runs after it (.ci/run), and it would replace the
    // node_modules this very test process is using.
    expect(install).toBe('npm ci');
    const tmp = scratch();
    try {
      const r = ok(await shell(run!, ROOT, tmp), run!);
      const counts = r.stdout.split('\n').filter((l) => /^(\d+> )?\{/.test(l)).map((l) => JSON.parse(l.replace(/^\d+> /, '')) as { word: string; count: number });
      expect(counts.length).toBeGreaterThan(0);
      for (const c of counts) expect(c.count % 10_000).toBe(0);
      expect(r.stderr).toMatch(/finished/);
    } finally {
      rmSync(tmp, { recursive: true, force: true });
    }
  }, 900_000);

  it('quick start: exactly-once, killed and resumed', async () => {
    const block = blockWhere('Quick start', 'sh', 'examples/exactly-once.ts');
    const [generate, run, resume, history, ...rest] = commands(block);
    expect(rest).toEqual([]);
    expect(run).toMatch(/^npx weir run examples\/exactly-once\.ts .*--checkpoint-dir \/tmp\/chk/);
    expect(resume).toBe(`${run!.split(' -- ')[0]} --from latest -- ${run!.split(' -- ')[1]}`);
    const tmp = scratch();
    try {
      ok(await shell(local(generate!, tmp), ROOT, tmp), generate!);
      // "kill -9 it at any moment": here, once a checkpoint is complete, so the resume has one.
      const chk = join(tmp, 'chk');
      const killed = await killAfterCheckpoint(local(run!, tmp), chk, tmp);
      expect(killed, 'the first run was killed before it finished').toBe(true);
      ok(await shell(local(resume!, tmp), ROOT, tmp), resume!);
      expect(ok(await shell(local(history!, tmp), ROOT, tmp), history!).stdout).toMatch(/COMPLETED/i);
      // What a run without the kill writes: one line per key and window, the window counts
      // adding up to the events generated (nothing lost, nothing duplicated).
      const lines = committedLines(join(tmp, 'out')).map((l) => JSON.parse(l) as { key: string; windowStart: number; count: number });
      const events = Number(/generate-events\.ts (\d+)/.exec(generate!)![1]);
      expect(lines.reduce((n, l) => n + l.count, 0)).toBe(events);
      expect(new Set(lines.map((l) => `${l.key}@${l.windowStart}`)).size).toBe(lines.length);
    } finally {
      rmSync(tmp, { recursive: true, force: true });
    }
  }, 1_800_000);

  it('writing a job: the job as printed, saved as clicks.ts, runs with the commands shown', async () => {
    const job = blockWhere('Writing a job', 'ts', 'defineJob');
    const block = blockWhere('Writing a job', 'sh', 'clicks.ts');
    const dir = scratch(true);
    try {
      writeFileSync(join(dir, 'clicks.ts'), job.code);
      let last: CommandRun | undefined;
      for (const line of commands(block)) last = ok(await shell(line, dir, dir), line);
      const out = last!.stdout.split('\n').filter((l) => /^(\d+> )?\{/.test(l)).map((l) => l.replace(/^\d+> /, '')).sort();
      expect(out).toEqual([
        '{"user":"ann","minute":"1970-01-01T00:00:00.000Z","clicks":1}',
        '{"user":"ann","minute":"1970-01-01T00:01:00.000Z","clicks":1}',
        '{"user":"bob","minute":"1970-01-01T00:00:00.000Z","clicks":1}',
      ]);
      // Checkpointing is on in the job, into the directory it names.
      expect(existsSync(join(dir, 'checkpoints'))).toBe(true);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  }, 900_000);

  it('savepoints: list, savepoint, stop with and without --drain, cancel, restore at parallelism 4, inspect', async () => {
    const block = blockWhere('Savepoints, upgrades and rescaling', 'sh', 'npx weir savepoint');
    const lines = commands(block);
    expect(lines).toHaveLength(8);
    const [list, savepoint, stop, drain, cancel, restore, inspect, inspectKey] = lines as [string, string, string, string, string, string, string, string];
    const tmp = scratch();
    const home = join(tmp, 'weir-home');
    const running: RunningCli[] = [];
    // The exactly-once example of the quick start, slowed to 100 records/s so that it is still
    // running while the commands reach it (a loaded machine takes seconds per command).
    const start = async (out: string): Promise<RunningCli> => {
      const r = await weirRun(home, 'examples/exactly-once.ts', '--rest-port', '0', '--', join(tmp, 'events.jsonl'), join(tmp, out), '100');
      running.push(r);
      return r;
    };
    const at = (line: string, job: RunningCli): string => local(line, tmp).replace(/\b3f2a\b/g, job.jobId.slice(0, 4));
    const lastLine = (r: CommandRun): string => r.stdout.trim().split('\n').at(-1)!;
    try {
      // 50 keys, so that key k42 has a total soon after the first window fires.
      ok(await shell(`npx tsx examples/generate-events.ts 20000 ${tmp}/events.jsonl 50`, ROOT, tmp), 'generate events');

      const a = await start('out');
      expect(ok(await shell(at(list, a), ROOT, tmp), list).stdout).toContain(a.jobId);
      const taken = lastLine(ok(await shell(at(savepoint, a), ROOT, tmp), savepoint));
      expect(existsSync(taken), taken).toBe(true);
      const stopped = lastLine(ok(await shell(at(stop, a), ROOT, tmp), stop));
      expect(existsSync(stopped), stopped).toBe(true);
      expect((await a.done).code).toBe(0);

      const b = await start('out-b');
      const drained = lastLine(ok(await shell(at(drain, b), ROOT, tmp), drain));
      expect(existsSync(drained), drained).toBe(true);
      expect((await b.done).code).toBe(0);

      const c = await start('out-c');
      ok(await shell(at(cancel, c), ROOT, tmp), cancel);
      expect((await c.done).code).not.toBe(0);

      // The upgrade path: run again from the savepoint `stop` took, into the same output.
      const fromStop = (line: string): string => local(line, tmp).replace(/\S*savepoint-3f2a1b-…/g, stopped);
      ok(await shell(fromStop(restore), ROOT, tmp), restore);
      const out = committedLines(join(tmp, 'out')).map((l) => JSON.parse(l) as { key: string; windowStart: number; count: number });
      expect(out.reduce((n, l) => n + l.count, 0)).toBe(20_000);
      expect(new Set(out.map((l) => `${l.key}@${l.windowStart}`)).size).toBe(out.length);

      expect(ok(await shell(fromStop(inspect), ROOT, tmp), inspect).stdout).toContain('running-totals');
      const keyed = ok(await shell(local(inspectKey, tmp).replace('<path>', drained), ROOT, tmp), inspectKey);
      // The drained job committed every window it fired: its last line for k42 has that total.
      const k42 = committedLines(join(tmp, 'out-b')).map((l) => JSON.parse(l) as { key: string; windowStart: number; total: number }).filter((l) => l.key === 'k42');
      expect(k42.length).toBeGreaterThan(0);
      const last = k42.reduce((x, y) => (y.windowStart > x.windowStart ? y : x));
      expect(keyed.stdout.trim()).toBe(String(last.total));
    } finally {
      for (const r of running) r.child.kill('SIGKILL');
      rmSync(tmp, { recursive: true, force: true });
    }
  }, 1_800_000);

  it('weir run synopsis: every command it names has help', async () => {
    const block = blockWhere('Running jobs: `weir run`', '', 'weir run <job.ts|job.js>');
    const names = new Set<string>();
    for (const line of block.code.split('\n').filter((l) => l.startsWith('weir '))) {
      // The command names: the text before the description, without <arguments> and [options].
      const head = line.replace(/\s{2,}.*$/, '').replace(/^weir /, '').replace(/<[^>]*>|\[[^\]]*\]/g, ' ');
      for (const part of head.split('|')) names.add(part.trim().split(/\s+/).filter((w) => !w.startsWith('-')).join(' '));
    }
    expect([...names].sort()).toEqual(['cancel', 'checkpoints', 'list', 'run', 'savepoint', 'state inspect', 'stop']);
    const tmp = scratch();
    try {
      for (const name of names) {
        const r = ok(await shell(`node bin/weir.js ${name} --help`, ROOT, tmp), `weir ${name} --help`);
        expect(r.stdout).toMatch(new RegExp(`weir ${name}`));
      }
    } finally {
      rmSync(tmp, { recursive: true, force: true });
    }
  }, 900_000);
});

/**
 * Starts a README command and SIGKILLs it (npx and weir, the whole process group) once a
 * checkpoint of it is complete (its _metadata file exists). False if it ended by itself first.
 */
function killAfterCheckpoint(line: string, chkDir: string, tmp: string): Promise<boolean> {
  return new Promise((resolve, reject) => {
    const child = spawn('bash', ['-c', line], { cwd: ROOT, env: offlineNpmEnv({ WEIR_HOME: join(tmp, 'weir-home') }), stdio: ['ignore', 'ignore', 'pipe'], detached: true });
    let stderr = '';
    child.stderr.setEncoding('utf8').on('data', (d: string) => (stderr = (stderr + d).slice(-4000)));
    let killed = false;
    const deadline = setTimeout(() => {
      clearInterval(poll);
      process.kill(-child.pid!, 'SIGKILL');
      reject(new Error(`no completed checkpoint within ${COMMAND_MS} ms: ${line}\n${stderr}`));
    }, COMMAND_MS);
    const poll = setInterval(() => {
      if (!completedCheckpoint(chkDir)) return;
      clearInterval(poll);
      killed = true;
      process.kill(-child.pid!, 'SIGKILL');
    }, 100);
    child.on('close', () => {
      clearInterval(poll);
      clearTimeout(deadline);
      resolve(killed);
    });
  });
}

function completedCheckpoint(chkDir: string): boolean {
  if (!existsSync(chkDir)) return false;
  for (const job of readdirSync(chkDir)) {
    const dir = join(chkDir, job);
    if (!existsSync(dir)) continue;
    try {
      if (readdirSync(dir).some((c) => c.startsWith('chk-') && existsSync(join(dir, c, '_metadata')))) return true;
    } catch {
      // a job directory that is not a directory, or vanished meanwhile: not a checkpoint
    }
  }
  return false;
}
