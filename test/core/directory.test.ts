/** A directory weir is told to use that cannot be one is refused naming what gave it, not with the OS's ENOTDIR later. */
import { existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { checkDirectoryPath } from '../../src/core/directory.ts';
import { defineJob, runJob } from '../../src/index.ts';

const tmp = mkdtempSync(join(tmpdir(), 'weir-directory-'));
afterAll(() => rmSync(tmp, { recursive: true, force: true }));

describe('checkDirectoryPath', () => {
  it('accepts a directory, a path to be made, and refuses a file or a path below one', () => {
    const file = join(tmp, 'a-file');
    writeFileSync(file, 'x');
    mkdirSync(join(tmp, 'dir'));
    expect(() => checkDirectoryPath(join(tmp, 'dir'), '--x')).not.toThrow();
    expect(() => checkDirectoryPath(join(tmp, 'dir', 'new', 'deeper'), '--x')).not.toThrow();
    expect(() => checkDirectoryPath(file, '--x')).toThrow(`--x ${file} is a file, not a directory`);
    expect(() => checkDirectoryPath(join(file, 'below'), '--x')).toThrow(`--x ${join(file, 'below')} is below ${file}, a file`);
  });

  it('a checkpoint directory that is a file fails the job\'s start with a line naming the setting (before: ENOTDIR from a mkdir)', async () => {
    const file = join(tmp, 'chk-file');
    writeFileSync(file, 'x');
    await expect(runJob(defineJob((env) => void env.fromCollection([1]).collect()), { workers: 1, stdout: () => {}, log: () => {}, checkpoint: { interval: 100, dir: file } }))
      .rejects.toThrow(`the checkpoint directory (--checkpoint-dir, execution.checkpointing.dir) ${file} is a file, not a directory`);
  });

  it('a checkpoint directory with a URL scheme weir has no storage for is refused: before, hdfs://nn/chk became the local directory ./hdfs:/nn/chk', async () => {
    const cwd = process.cwd();
    for (const dir of ['hdfs://nn:8020/chk', 's3a://bucket/chk']) {
      await expect(runJob(defineJob((env) => void env.fromCollection([1]).collect()), { workers: 1, stdout: () => {}, log: () => {}, checkpoint: { interval: 100, dir } }))
        .rejects.toThrow(/must be a local path or s3:\/\/|for which weir has no storage/);
    }
    expect(existsSync(join(cwd, 'hdfs:'))).toBe(false); // nothing was made there
  });
});
