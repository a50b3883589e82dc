/**
 * Bad savepoint paths (issue point 8): a path that does not exist, a directory that is not a
 * savepoint, a file, a truncated state file, truncated metadata, metadata of a newer format
 * version, foreign metadata, a half-written savepoint (state files but no metadata, as a
 * process killed mid-savepoint leaves it) and a state file with a flipped byte. Each gets a
 * clear error from runJob and the inspect library (and, for some, from real `weir run --from`
 * and `weir state inspect` processes: exit code and one line), and nothing is modified or created.
 *
 * Fixture: test/fixtures/jobs/savepoint-app.ts (v1).
 */
import { createHash } from 'node:crypto';
import { cpSync, existsSync, mkdirSync, readdirSync, readFileSync, rmSync, statSync, truncateSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { summarize } from '../../src/checkpoint/inspect.ts';
import { runJob } from '../../src/index.ts';
import { fingerprint, fixture, oneLineError, sleep, start, stopWithSavepoint, tempDir, waitRunning, weir } from './helpers.ts';

const JOB = fixture('savepoint-app.ts');
const tmp = tempDir('sp-robust');
afterAll(() => tmp.cleanup());

let good = '';
beforeAll(async () => {
  const h = await start(JOB, { workers: 1, parallelism: 2, args: ['v1', '100000', '1000'] });
  await waitRunning(h);
  await sleep(100);
  good = await stopWithSavepoint(h, tmp.fresh('sp'));
  expect((await h.result).status).toBe('FINISHED');
});

const stateFile = (dir: string) => join(dir, readdirSync(dir).find((f) => f.endsWith('.state'))!);
const copy = (name: string) => {
  const d = tmp.fresh(name);
  cpSync(good, d, { recursive: true });
  return d;
};

function rewriteMetadata(dir: string, change: (body: Record<string, unknown>) => void): void {
  const outer = JSON.parse(readFileSync(join(dir, '_metadata'), 'utf8')) as { sha256: string; body: Record<string, unknown> };
  change(outer.body);
  // A well-formed file: the checksum matches the new body.
  outer.sha256 = createHash('sha256').update(JSON.stringify(outer.body)).digest('hex');
  writeFileSync(join(dir, '_metadata'), JSON.stringify(outer, null, 1) + '\n');
}

/** What `--from` a path that is not a snapshot adds: where snapshots are, and --from latest. */
const LATEST_HINT = 'give a checkpoint or savepoint directory (one with a _metadata file), or --from latest to resume from the newest checkpoint in --checkpoint-dir';

interface Case {
  readonly name: string;
  /**
   * Also through real `weir run --from` and `weir state inspect` processes (the same checks as
   * runJob's and the inspect library's, plus exit code and one line; a few cases suffice).
   */
  readonly cli?: true;
  /** Makes the bad path; returns it. */
  make(): string;
  /** The message of runJob / weir run, with the path given as P. */
  readonly restore: string | RegExp;
  /** The message of weir state inspect (after "state inspect: "). */
  readonly inspect: string | RegExp;
}

const cases: Case[] = [
  {
    name: 'a path that does not exist',
    cli: true,
    make: () => join(tmp.dir, 'no', 'such', 'savepoint'),
    restore: `P does not exist; ${LATEST_HINT}`,
    inspect: 'P does not exist',
  },
  {
    name: 'a directory that is not a savepoint',
    make: () => {
      const d = tmp.fresh('plain-dir');
      mkdirSync(d);
      writeFileSync(join(d, 'notes.txt'), 'hello\n');
      return d;
    },
    restore: `P is not a checkpoint or savepoint (no _metadata file); ${LATEST_HINT}`,
    inspect: 'P is not a checkpoint or savepoint (no _metadata file)',
  },
  {
    name: 'a file (the metadata file itself)',
    make: () => join(copy('file'), '_metadata'),
    restore: `P is not a checkpoint or savepoint (no _metadata file); ${LATEST_HINT}`,
    inspect: 'P is a file, not a checkpoint or savepoint directory',
  },
  {
    name: 'a half-written savepoint (state files, no metadata: killed before it completed)',
    make: () => {
      const d = copy('half');
      // What an interrupted finalize leaves: state files and at most a temporary metadata file.
      writeFileSync(join(d, '_metadata.tmp'), readFileSync(join(d, '_metadata'), 'utf8').slice(0, 100));
      rmSync(join(d, '_metadata'));
      return d;
    },
    restore: `P is not a checkpoint or savepoint (no _metadata file); ${LATEST_HINT}`,
    inspect: 'P is not a checkpoint or savepoint (no _metadata file)',
  },
  {
    name: 'a truncated state file',
    cli: true,
    make: () => {
      const d = copy('truncated-state');
      const f = stateFile(d);
      truncateSync(f, statSync(f).size - 10);
      return d;
    },
    restore: /^cannot restore from P: state file [0-9a-f]+-[01]\.state of operator "counts" has \d+ bytes, expected \d+ \(truncated\)$/,
    inspect: /^P: state file [0-9a-f]+-[01]\.state of operator "counts" has \d+ bytes, expected \d+ \(truncated\)$/,
  },
  {
    name: 'truncated metadata',
    make: () => {
      const d = copy('truncated-meta');
      truncateSync(join(d, '_metadata'), 200);
      return d;
    },
    restore: 'cannot restore from P: P/_metadata: metadata is not valid JSON (torn or corrupt write)',
    inspect: 'P: P/_metadata: metadata is not valid JSON (torn or corrupt write)',
  },
  {
    name: 'metadata written by a newer format version',
    cli: true,
    make: () => {
      const d = copy('newer');
      rewriteMetadata(d, (b) => (b['version'] = 3));
      return d;
    },
    restore: 'cannot restore from P: P/_metadata: written by a newer weir (metadata version 3, this weir reads up to 2)',
    inspect: 'P: P/_metadata: written by a newer weir (metadata version 3, this weir reads up to 2)',
  },
  {
    name: 'metadata that is not weir\'s',
    make: () => {
      const d = tmp.fresh('foreign');
      mkdirSync(d);
      writeFileSync(join(d, '_metadata'), '{"version": 3, "operators": []}\n');
      return d;
    },
    restore: 'cannot restore from P: P/_metadata: not a weir checkpoint or savepoint metadata file',
    inspect: 'P: P/_metadata: not a weir checkpoint or savepoint metadata file',
  },
  {
    name: 'metadata whose checksum does not match',
    make: () => {
      const d = copy('tampered');
      const p = join(d, '_metadata');
      writeFileSync(p, readFileSync(p, 'utf8').replace('"savepoint app v1"', '"savepoint app v9"'));
      return d;
    },
    restore: 'cannot restore from P: P/_metadata: metadata checksum mismatch (corrupt)',
    inspect: 'P: P/_metadata: metadata checksum mismatch (corrupt)',
  },
];

const expand = (m: string | RegExp, p: string): string | RegExp =>
  typeof m === 'string' ? m.replaceAll('P', p) : new RegExp(m.source.replaceAll('P', p.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')));

function expectMessage(actual: string, want: string | RegExp): void {
  if (typeof want === 'string') expect(actual).toBe(want);
  else expect(actual).toMatch(want);
}

describe.concurrent('restoring from a bad savepoint path', () => {
  const home = tmp.fresh('home');
  for (const c of cases) {
    it(`${c.name}: a clear error from runJob and from inspect${c.cli ? ' (and from weir run and weir state inspect)' : ''}; nothing modified or created`, async () => {
      const p = c.make();
      const exists = existsSync(p);
      const before = exists && statSync(p).isDirectory() ? fingerprint(p) : exists ? { file: readFileSync(p, 'utf8') } : undefined;
      const chk = tmp.fresh('chk');
      const err = await runJob(JOB, { workers: 1, parallelism: 2, args: ['v1', '100', '0'], from: p, checkpoint: { interval: '1 s', dir: chk }, stdout: () => {}, log: () => {} })
        .then(() => undefined, (e: Error) => e);
      expect(err?.name).toBe('StartError');
      expectMessage(err!.message, expand(c.restore, p));
      const inspectMessage = typeof c.inspect === 'string' ? (expand(c.inspect, p) as string) : new RegExp(`^${(expand(c.inspect, p) as RegExp).source.slice(1)}`);
      const lib = await summarize(p).then(() => undefined, (e: Error) => e);
      expect(lib?.name).toBe('InspectError');
      expectMessage(lib!.message, inspectMessage);
      if (c.cli) {
        const [run, inspect] = await Promise.all([
          weir(home, 'run', JOB, '-w', '1', '--rest-port', '0', '--checkpoint-dir', chk, '--checkpoint-interval', '1s', '--from', p, '--', 'v1', '100', '0'),
          weir(home, 'state', 'inspect', p),
        ]);
        expect(run.code).toBe(1);
        expectMessage(oneLineError(run), expand(c.restore, p));
        expect(inspect.code).toBe(2);
        expect(inspect.stdout).toBe('');
        expectMessage(oneLineError(inspect), typeof inspectMessage === 'string' ? `state inspect: ${inspectMessage}` : new RegExp(`^state inspect: ${inspectMessage.source.slice(1)}`));
      }
      const after = exists && statSync(p).isDirectory() ? fingerprint(p) : existsSync(p) ? { file: readFileSync(p, 'utf8') } : undefined;
      expect(after, 'the path is left as it was').toEqual(before);
      expect(existsSync(chk), 'no checkpoint directory was created').toBe(false);
    });
  }

  it('a state file with a flipped byte (same size): the restore fails on the checksum, naming the file; the savepoint is left as it was', async () => {
    const d = copy('flipped');
    const f = stateFile(d);
    const bytes = readFileSync(f);
    bytes[12] ^= 0xff; // inside the first block
    writeFileSync(f, bytes);
    const before = fingerprint(d);
    const r = await runJob(JOB, { workers: 1, parallelism: 2, args: ['v1', '300', '0'], from: d, stdout: () => {}, log: () => {} });
    // Not a silent fresh start: the snapshot asked for cannot be used, so the job fails.
    expect(r.status, `processed ${r.collected('out').length} records from empty state instead`).toBe('FAILED');
    expect(r.error?.message).toContain(f);
    expect(r.error?.message).toMatch(/checksum/);
    expect(r.collected('out')).toEqual([]);
    const inspect = await weir(home, 'state', 'inspect', d);
    expect(inspect.code).toBe(2);
    expect(oneLineError(inspect)).toMatch(/^state inspect: .*checksum/);
    expect(fingerprint(d)).toEqual(before);
  });
});
