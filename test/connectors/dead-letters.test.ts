/**
 * Dead letters do not vanish: a source with malformed: 'dead-letter' counts them (the job's
 * progress, the REST overview, each source subtask's numRecordsInErrors) and writes each one, with its source,
 * location, error and raw text, to a file beside the job's file output by default
 * (<out>.dead-letters/), to --dead-letter-dir when given, or, without either, shows the
 * first ten of each source subtask in the log. They still reach the DEAD_LETTERS side output.
 */
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { DEAD_LETTERS, defineJob, runJob, type JobResult, type MalformedRecord } from '../../src/index.ts';
import type { JobControl, JobService } from '../../src/cluster/job-control.ts';

const tmp = mkdtempSync(join(tmpdir(), 'weir-dead-letters-'));
afterAll(() => rmSync(tmp, { recursive: true, force: true }));

/** Two files (one split each): good lines and `bad` malformed ones, spread over both. */
function input(name: string, bad: number): string {
  const dir = join(tmp, name);
  mkdirSync(dir);
  for (const f of [0, 1]) {
    const lines: string[] = [];
    for (let i = 0; i < 20; i++) lines.push(JSON.stringify({ f, i }));
    for (let b = f; b < bad; b += 2) lines.splice(2 + b, 0, `not json ${b}`);
    writeFileSync(join(dir, `in-${f}.jsonl`), lines.join('\n') + '\n');
  }
  return dir;
}

interface Letter { source: string; location: string; error: string; raw: string }

function lettersIn(dir: string): Letter[] {
  return readdirSync(dir).sort().flatMap((f) => readFileSync(join(dir, f), 'utf8').trimEnd().split('\n').map((l) => JSON.parse(l) as Letter));
}

describe('dead letters', () => {
  it('are counted and written beside the file output by default, with source, location and raw text', async () => {
    const src = input('beside', 3);
    const out = join(tmp, 'beside-out');
    const lines: string[] = [];
    // The REST overview and the source subtasks' metrics, read when the job has ended (the control API serves the same objects).
    let overview: Record<string, unknown> = {};
    let errorsPerSubtask: (number | undefined)[] = [];
    let control: JobControl | undefined;
    const probe: JobService = {
      start: async (c) => void (control = c),
      stop: async () => {
        overview = control!.overview();
        errorsPerSubtask = control!.metrics().subtasks.filter((t) => t.vertex === 0).map((t) => t.metrics['numRecordsInErrors']);
      },
    };
    const r = await runJob(
      defineJob((env) => {
        const s = env.fromFile(src, { malformed: 'dead-letter' });
        s.writeAsJsonLines(out);
        s.getSideOutput(DEAD_LETTERS).collect('dead');
      }),
      { workers: 1, parallelism: 2, stdout: () => {}, log: (l) => lines.push(l), services: [probe] },
    );
    expect(overview['deadLetters']).toEqual({ count: 3, dir: `${out}.dead-letters` });
    expect(errorsPerSubtask).toHaveLength(2);
    expect(errorsPerSubtask.reduce((a, b) => a! + b!, 0)).toBe(3);
    expect(r.status).toBe('FINISHED');
    expect(r.progress.deadLetters).toBe(3);
    expect(r.progress.recordsIn).toBe(40);
    expect(r.deadLetterDir).toBe(`${out}.dead-letters`);
    // Nothing in the log: they are in the file.
    expect(lines.filter((l) => l.includes('dead letter'))).toEqual([]);
    const letters = lettersIn(`${out}.dead-letters`);
    expect(letters.map((l) => [l.location, l.raw]).sort()).toEqual([
      [`${join(src, 'in-0.jsonl')}:3`, 'not json 0'],
      [`${join(src, 'in-0.jsonl')}:5`, 'not json 2'],
      [`${join(src, 'in-1.jsonl')}:4`, 'not json 1'],
    ]);
    for (const l of letters) {
      expect(l.source).toBe(`file:${src}`);
      expect(l.error).toMatch(/JSON/);
    }
    // One file per source subtask that had letters.
    expect(readdirSync(`${out}.dead-letters`).sort()).toEqual([`file_${src.slice(1).replace(/[^A-Za-z0-9._-]+/g, '_')}-0.jsonl`, `file_${src.slice(1).replace(/[^A-Za-z0-9._-]+/g, '_')}-1.jsonl`]);
    // The side output still has them.
    expect(r.collected<MalformedRecord>('dead').map((d) => d.raw).sort()).toEqual(['not json 0', 'not json 1', 'not json 2']);
  });

  it('go to the directory given (deadLetterDir, --dead-letter-dir) on worker threads too', async () => {
    const src = input('given', 2);
    const dir = join(tmp, 'given-letters');
    const fixture = join(tmp, 'given-job.mts');
    writeFileSync(fixture, `import { defineJob } from ${JSON.stringify(join(process.cwd(), 'src/index.ts'))};\nexport default defineJob((env, [src]) => void env.fromFile(src!, { malformed: 'dead-letter' }).filter(() => false).print());\n`);
    const r = await runJob(fixture, { workers: 2, parallelism: 2, args: [src], deadLetterDir: dir, stdout: () => {}, log: () => {} });
    expect(r.status).toBe('FINISHED');
    expect(r.progress.deadLetters).toBe(2);
    expect(lettersIn(dir).map((l) => l.raw).sort()).toEqual(['not json 0', 'not json 1']);
  }, 120_000);

  it('a dead-letter directory that is a file is refused before the job starts; one that cannot be written fails the job, losing no letter silently (before: logged, counted as written, exit 0)', async () => {
    const src = input('unwritable', 3);
    const afile = join(tmp, 'a-file');
    writeFileSync(afile, 'not a directory');
    const job = defineJob((env) => void env.fromFile(src, { malformed: 'dead-letter' }).collect());
    await expect(runJob(job, { workers: 1, parallelism: 1, deadLetterDir: afile, stdout: () => {}, log: () => {} }))
      .rejects.toThrow(`the dead-letter directory ${afile} (--dead-letter-dir) is a file, not a directory`);
    // Below a file: no directory can be made there, at the first letter.
    const r = await runJob(job, { workers: 1, parallelism: 1, deadLetterDir: join(afile, 'letters'), restartStrategy: { type: 'none' }, stdout: () => {}, log: () => {} });
    expect(r.status).toBe('FAILED');
    expect(r.error?.message).toMatch(/cannot write dead letters to .*a-file\/letters: .*ENOTDIR.*; the source fails rather than lose its malformed records/);
  });

  it('without a file sink or a directory, the first ten of each source subtask are logged and the rest counted', async () => {
    const src = input('logged', 26);
    const lines: string[] = [];
    const r: JobResult = await runJob(
      defineJob((env) => void env.fromFile(src, { malformed: 'dead-letter' }).collect()),
      { workers: 1, parallelism: 2, stdout: () => {}, log: (l) => lines.push(l) },
    );
    expect(r.status).toBe('FINISHED');
    expect(r.progress.deadLetters).toBe(26);
    expect(r.deadLetterDir).toBeUndefined();
    expect(r.collected()).toHaveLength(40);
    const shown = lines.filter((l) => l.startsWith('weir: dead letter from '));
    expect(shown).toHaveLength(20);
    expect(shown).toContain(`weir: dead letter from file:${src} at ${join(src, 'in-0.jsonl')}:3: Unexpected token 'o', "not json 0" is not valid JSON (raw: not json 0)`);
    expect(lines.filter((l) => l.startsWith('weir: more dead letters from '))).toHaveLength(2);
  });
});
