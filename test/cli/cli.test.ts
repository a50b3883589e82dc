/**
 * The real CLI, spawned: exit codes, one-line messages on stderr, stack traces only with
 * --verbose. Spawns are slow (~0.7 s), so the tests run concurrently.
 */
import { describe, expect, it } from 'vitest';
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { commandHelp, globalHelp } from '../../src/cli/help.ts';

const repo = join(dirname(fileURLToPath(import.meta.url)), '..', '..');
const fixture = (name: string): string => `test/fixtures/jobs/${name}`;

interface Run {
  code: number | null;
  stdout: string;
  stderr: string;
}

function weir(...args: string[]): Promise<Run> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ['bin/weir.js', ...args], { cwd: repo, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.setEncoding('utf8').on('data', (d: string) => (stdout += d));
    child.stderr.setEncoding('utf8').on('data', (d: string) => (stderr += d));
    child.on('error', reject);
    child.on('close', (code) => resolve({ code, stdout, stderr: withoutStartupLines(stderr) }));
  });
}

/**
 * A running job announces its id and control API (and a REST port fallback) before it
 * starts, and prints a status line every few seconds while it runs (on a loaded machine a job
 * that fails soon may still run long enough for one); those informational lines are not part
 * of what these tests check.
 */
function withoutStartupLines(stderr: string): string {
  return stderr
    .split('\n')
    .filter((l) => !/^weir: job [0-9a-f]{32} running; control API on http:\/\/[\d.]+:\d+$/.test(l) && !/^weir: REST port \d+ is in use; serving on [\d.]+:\d+ instead$/.test(l))
    .filter((l) => !/^weir: \d+ s: \S+ records\/s in, \S+ records\/s out, heap \d+ MiB/.test(l))
    .join('\n');
}

/** stderr must be exactly one "weir: error: ..." line; returns the message after the prefix. */
function oneLineError(r: Run): string {
  const lines = r.stderr.split('\n');
  expect(lines.at(-1), 'stderr ends with a newline').toBe('');
  expect(lines.slice(0, -1), `one line on stderr, got:\n${r.stderr}`).toHaveLength(1);
  expect(r.stderr).not.toMatch(/^\s+at /m);
  expect(lines[0]).toMatch(/^weir: error: /);
  return lines[0]!.slice('weir: error: '.length);
}

describe.concurrent('weir run: job loading errors', () => {
  it('a missing job file', async () => {
    const r = await weir('run', 'test/fixtures/jobs/does-not-exist.ts');
    expect(r.code).toBe(1);
    expect(oneLineError(r)).toBe('job file not found: test/fixtures/jobs/does-not-exist.ts');
  });

  it('a job module without a default export', async () => {
    const r = await weir('run', fixture('no-default-export.ts'));
    expect(r.code).toBe(1);
    expect(oneLineError(r)).toBe(
      'test/fixtures/jobs/no-default-export.ts has no default export; export default defineJob((env, args) => { ... })',
    );
  });

  it('a default export that is not defineJob(...)', async () => {
    const r = await weir('run', fixture('not-a-job.ts'));
    expect(r.code).toBe(1);
    expect(oneLineError(r)).toBe(
      'the default export of test/fixtures/jobs/not-a-job.ts is not a job; wrap the builder: export default defineJob((env, args) => { ... })',
    );
  });

  it('a job module that does not compile: the compiler\'s multi-line message becomes one line naming the file', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'weir-cli-'));
    try {
      writeFileSync(join(dir, 'package.json'), '{"type":"module"}\n');
      const job = join(dir, 'broken.ts');
      writeFileSync(job, 'export default defineJob((env) => {\n  env.fromElements(1,\n');
      const r = await weir('run', job);
      expect(r.code).toBe(1);
      const msg = oneLineError(r);
      expect(msg.startsWith(`cannot load job module ${job}: `)).toBe(true);
      expect(msg).toContain(`${job}:3:1: Unexpected end of file`);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('a syntax error or an import of nothing, in a package that is not "type": "module": the fault with its place (before: advice about CommonJS)', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'weir-cli-'));
    try {
      writeFileSync(join(dir, 'package.json'), '{"name":"plain-package","version":"1.0.0"}\n');
      const syntax = join(dir, 'syntax.ts');
      writeFileSync(syntax, "export default {\n  run: (x: number) => x +),\n};\n");
      const missing = join(dir, 'missing.ts');
      writeFileSync(missing, "import { x } from './nope.ts';\nexport default x;\n");
      const s = await weir('run', syntax);
      expect(s.code).toBe(1);
      expect(oneLineError(s)).toBe(`cannot load job module ${syntax}: ${syntax}:2:26: Unexpected ")"`);
      const m = await weir('run', missing);
      expect(m.code).toBe(1);
      expect(oneLineError(m)).toBe(`cannot load job module ${missing}: ${missing}:1:19: Could not resolve "./nope.ts"`);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('API misuse while building the job is an invalid job definition, placed in the job file without --verbose', async () => {
    const r = await weir('run', fixture('bad-definition.ts'));
    expect(r.code).toBe(1);
    expect(oneLineError(r)).toBe('invalid job definition: map needs a function, got number (at test/fixtures/jobs/bad-definition.ts:5:23)');
  });

  it('any exception while building the job names the job file and line, on worker threads too', async () => {
    const r = await weir('run', fixture('build-throws.ts'), '-w', '2', '--', 'many');
    expect(r.code).toBe(1);
    expect(oneLineError(r)).toBe('building the job failed: expected a number of records, got "many" (at test/fixtures/jobs/build-throws.ts:8:9)');
  });
});

describe.concurrent('weir run: failures while the job runs', () => {
  it('keyed state used on a non-keyed stream', async () => {
    const r = await weir('run', fixture('keyed-state-misuse.ts'), '-w', '1');
    expect(r.code).toBe(1);
    expect(oneLineError(r)).toBe(
      'job "weir job" failed: operator "Counter": getState("count") is keyed state, which exists only on a keyed stream; call keyBy(...) before process()',
    );
  });

  const mapFailure = (msg: string) => {
    const prefix = 'job "weir job" failed: operator "Validate" (subtask 1/2) failed in map on record {"i":6,"payload":"xxx';
    expect(msg.startsWith(prefix), msg).toBe(true);
    // The 500-character record is shortened (to 200 characters, the last one an ellipsis).
    const record = msg.slice(msg.indexOf('on record ') + 'on record '.length, msg.lastIndexOf(': cannot handle'));
    expect(record).toHaveLength(200);
    expect(record.endsWith('…')).toBe(true);
    expect(msg.endsWith(': cannot handle record 6')).toBe(true);
  };

  it('a user exception in a map names the operator, the subtask and the shortened record (one thread)', async () => {
    // Job args pick record 9 (subtask 2/2) and give the error a second line, which the CLI joins.
    const r = await weir('run', fixture('map-throws.ts'), '-p', '2', '-w', '1', '--', '9', 'see the input spec');
    expect(r.code).toBe(1);
    const msg = oneLineError(r);
    expect(msg).toMatch(/^job "weir job" failed: operator "Validate" \(subtask 2\/2\) failed in map on record \{"i":9,"payload":"x{100,}…: cannot handle record 9 see the input spec$/);
  });

  it('job arguments from --args-file (a JSON array) reach the job as after --; both at once, or a file that is not an array of strings, are refused', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'weir-args-file-'));
    try {
      const file = join(dir, 'args.json');
      writeFileSync(file, JSON.stringify(['9', 'see the input spec']));
      const r = await weir('run', fixture('map-throws.ts'), '-p', '2', '-w', '1', '--args-file', file);
      expect(r.code).toBe(1);
      expect(oneLineError(r)).toMatch(/cannot handle record 9 see the input spec$/);
      const both = await weir('run', fixture('map-throws.ts'), '--args-file', file, '--', '9');
      expect(both.code).toBe(2);
      expect(oneLineError(both)).toBe('run: job arguments come either after -- or from --args-file, not both');
      writeFileSync(file, '{"a": 1}');
      const bad = await weir('run', fixture('map-throws.ts'), '--args-file', file);
      expect(bad.code).toBe(2);
      expect(oneLineError(bad)).toBe(`--args-file ${file}: expected a JSON array of strings, e.g. ["--orders", "postgres://db/orders"]`);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('the same on two worker threads', async () => {
    const r = await weir('run', fixture('map-throws.ts'), '-p', '2', '-w', '2');
    expect(r.code).toBe(1);
    mapFailure(oneLineError(r));
  });

  it('--verbose adds a stack trace that shows where the user code threw (worker threads)', async () => {
    const r = await weir('run', fixture('map-throws.ts'), '--parallelism', '2', '--workers', '2', '--verbose');
    expect(r.code).toBe(1);
    const [first, ...rest] = r.stderr.trimEnd().split('\n');
    mapFailure(first!.slice('weir: error: '.length));
    const stack = rest.join('\n');
    expect(stack).toMatch(/^UserCodeError: operator "Validate"/);
    expect(stack).toContain('Caused by: Error: cannot handle record 6');
    expect(stack).toMatch(/at .*test\/fixtures\/jobs\/map-throws\.ts:\d+:\d+/);
  });

});

describe.concurrent('weir run: bad flags', () => {
  it('--parallelism abc', async () => {
    const r = await weir('run', 'examples/word-count.ts', '--parallelism', 'abc');
    expect(r.code).toBe(2);
    expect(oneLineError(r)).toBe('--parallelism expects a positive integer, got "abc"');
  });

  it('settings that conflict are refused before the job loads, naming where they came from (before: exit 1 from the job\'s start, "run options")', async () => {
    const r = await weir('run', 'examples/word-count.ts', '--checkpoint-interval', '1s', '--unaligned-checkpoints', 'on', '--checkpoint-mode', 'at-least-once');
    expect(r.code).toBe(2);
    expect(oneLineError(r)).toBe('flags: unaligned checkpoints (execution.checkpointing.unaligned.enabled) need checkpoint mode exactly-once, not at-least-once');
    const s3 = await weir('run', 'examples/word-count.ts', '--s3-endpoint', 'http://AKIA:s3cr3t@127.0.0.1:9000');
    expect(s3.code).toBe(2);
    expect(oneLineError(s3)).toMatch(/^flags \(S3\): S3 endpoint must not carry credentials/);
    expect(s3.stderr).not.toContain('s3cr3t');
    // Before: taken, and GET /jobs/:id showed key and secret to anyone who could read the API.
    const sp = await weir('run', 'examples/word-count.ts', '--savepoint-dir', 's3://AKIA:s3cr3t@my-bucket/sp');
    expect(sp.code).toBe(2);
    expect(oneLineError(sp)).toBe('--savepoint-dir expects a local path or s3://... without credentials in it (use the AWS credential chain: AWS_ACCESS_KEY_ID, profiles), got "s3://***@my-bucket/sp"');
    // --from is checked as a path too (before: plain text; every error about it printed key and
    // secret), and a password holding @ is blanked whole (before: up to its first @).
    const from = await weir('run', 'examples/word-count.ts', '--from', 's3://AKIA:s3cr@3t@my-bucket/sp-1');
    expect(from.code).toBe(2);
    expect(oneLineError(from)).toBe('--from expects a local path or s3://... without credentials in it (use the AWS credential chain: AWS_ACCESS_KEY_ID, profiles), got "s3://***@my-bucket/sp-1"');
    const web = await weir('run', 'examples/word-count.ts', '--from', 'https://u:hunter2@host/sp-1');
    expect(web.code).toBe(2);
    expect(web.stderr).not.toContain('hunter2');
    const inspect = await weir('state', 'inspect', 's3://AKIA:s3cr3t@my-bucket/sp-1');
    expect(inspect.code).not.toBe(0);
    expect(inspect.stderr).not.toContain('s3cr3t');
  });

  it('--parallelism 0', async () => {
    const r = await weir('run', 'examples/word-count.ts', '--parallelism', '0');
    expect(r.code).toBe(2);
    expect(oneLineError(r)).toBe('--parallelism expects a positive integer, got "0"');
  });

  it('an unknown flag', async () => {
    const r = await weir('run', 'examples/word-count.ts', '--fast');
    expect(r.code).toBe(2);
    expect(oneLineError(r)).toBe('run: unknown option --fast; see weir run --help');
  });

  it('a second positional argument', async () => {
    const r = await weir('run', 'examples/word-count.ts', 'extra');
    expect(r.code).toBe(2);
    expect(oneLineError(r)).toBe('run: unexpected argument "extra"; job arguments go after "--"');
  });
});

describe.concurrent('weir run: success', () => {
  it('a job module holding the process open (a timer at module scope) does not keep weir run from exiting after its job ended (before: it never exited)', async () => {
    const started = Date.now();
    const r = await weir('run', fixture('module-holds-process.ts'), '--workers', '1', '--rest-port', '0');
    expect(r.code).toBe(0);
    expect(r.stderr).toMatch(/still held the process open 2000 ms after the command ended; exiting/);
    expect(Date.now() - started).toBeLessThan(60_000);
  });

  it('job code acting on the process outside any task (--workers 1): an exception from a timer, or process.exit(0), ends weir run with one line and exit 1 (before: Node\'s raw crash report; exit 0 without a word)', async () => {
    const thrown = await weir('run', fixture('escapes-task.ts'), '--workers', '1', '--rest-port', '0', '--', 'throw');
    expect(thrown.code).toBe(1);
    expect(oneLineError(thrown)).toBe('job failed: an exception outside any task (a callback, timer or promise of the job\'s code): async boom in a timer');
    const exited = await weir('run', fixture('escapes-task.ts'), '--workers', '1', '--rest-port', '0', '--', 'exit');
    expect(exited.code).toBe(1);
    expect(oneLineError(exited)).toBe('job failed: the job\'s code ended the process (process.exit(0)) before the job ended');
  });

  it('runs examples/word-count.ts on --workers 1', async () => {
    const r = await weir('run', 'examples/word-count.ts', '--workers', '1', '-p', '2', '--', '20000');
    expect(r.stderr).toMatch(/^weir: job "weir job" finished in \d+\.\d\d s \(20000 records in, 0 out\); job id [0-9a-f]{32}\n$/);
    expect(r.code).toBe(0);
    expect(r.stdout).toBe('');
  });

  it('runs examples/word-count.ts on --workers 2; print lines reach stdout with subtask prefixes', async () => {
    // 30000 sentences of 1-8 of 10 words: every word passes a count of 10000 once (seeded).
    const r = await weir('run', 'examples/word-count.ts', '--workers', '2', '-p', '2', '--', '30000');
    expect(r.code).toBe(0);
    const lines = r.stdout.trimEnd().split('\n');
    for (const l of lines) expect(l).toMatch(/^[12]> \{"word":"[a-z]+","count":10000\}$/);
    expect(new Set(lines.map((l) => l.slice(3))).size).toBe(lines.length);
    expect(lines.length).toBe(10);
    expect(r.stderr).toMatch(new RegExp(`^weir: job "weir job" finished in \\d+\\.\\d\\d s \\(30000 records in, ${lines.length} out\\); job id [0-9a-f]{32}\n$`));
  });
});

// Sequential, after the concurrent suites: spawns alongside them would slow the timed job runs above.
describe('exit codes: 2 for the command line, 1 for the job', () => {
  it('a misspelt flag: weir\'s own words and the nearest flag, exit 2', async () => {
    const r = await weir('run', 'examples/word-count.ts', '--checkpoint-intervall', '1s');
    expect(r.code).toBe(2);
    expect(oneLineError(r)).toBe('run: unknown option --checkpoint-intervall (did you mean --checkpoint-interval?)');
  });

  it('a bad value is refused before the job is loaded (the job file need not exist), exit 2', async () => {
    const r = await weir('run', 'no-such-job.ts', '--restart-strategy', 'sometimes');
    expect(r.code).toBe(2);
    expect(oneLineError(r)).toBe('--restart-strategy expects none, fixed-delay, failure-rate or exponential-delay, got "sometimes"');
  });

  it('a subcommand\'s unknown flag, exit 2', async () => {
    const r = await weir('list', '--jsn');
    expect([r.code, oneLineError(r)]).toEqual([2, 'list: unknown option --jsn (did you mean --json?)']);
  });

  it('an unknown command, with a suggestion, exit 2; no command prints the help on stderr, exit 2', async () => {
    const [typo, none] = await Promise.all([weir('rn', 'job.ts'), weir()]);
    expect([typo.code, oneLineError(typo)]).toEqual([2, 'unknown command "rn" (did you mean run?); run "weir --help" for the list']);
    expect(none.code).toBe(2);
    expect(none.stdout).toBe('');
    expect(none.stderr).toBe(globalHelp());
  });

  it('a bad checkpoint setting in the job\'s own code is the job\'s failure, exit 1', async () => {
    const r = await weir('run', fixture('bad-checkpoint-settings.ts'), '-w', '1');
    expect(r.code).toBe(1);
    expect(oneLineError(r)).toBe('job code (enableCheckpointing): checkpoint interval must be a duration of at least 10 ms, got 5 ms');
  });

  it('weir --help and weir help <command> print on stdout, exit 0 (each command\'s --help: test/cli/help.test.ts)', async () => {
    const [all, stop] = await Promise.all([weir('--help'), weir('help', 'stop')]);
    expect([all.code, all.stdout, all.stderr]).toEqual([0, globalHelp(), '']);
    expect([stop.code, stop.stdout, stop.stderr]).toEqual([0, commandHelp('stop'), '']);
  });
});
