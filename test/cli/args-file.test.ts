/**
 * --args-file: a key twice in an object is refused (there, no object is valid anyway), and a
 * file that is not JSON is told by its place: JSON.parse's message quoted the text around the
 * fault, which in an args file is often a password (`..."3t-Pa55", ]"`).
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { CliError } from '../../src/cli/args.ts';
import { readArgsFile } from '../../src/cli/run.ts';

const dir = mkdtempSync(join(tmpdir(), 'weir-args-file-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

function file(text: string): string {
  const p = join(dir, `${Math.random().toString(36).slice(2)}.json`);
  writeFileSync(p, text);
  return p;
}

describe('--args-file', () => {
  it('reads a JSON array of strings', () => {
    expect(readArgsFile(file('["--orders", "postgres://db/orders"]'))).toEqual(['--orders', 'postgres://db/orders']);
  });

  it('bad JSON: line and column only, none of the file\'s text', () => {
    const p = file('[\n  "--password", "3t-Pa55", ]');
    expect(() => readArgsFile(p)).toThrow(new CliError(`--args-file ${p} is not valid JSON: line 2, column 28: a value expected (a string, number, object, list, true, false or null)`));
    const q = file('["--password", "3t-Pa55"');
    expect(() => readArgsFile(q)).toThrow(new CliError(`--args-file ${q} is not valid JSON: line 1, column 25: unexpected end of the file`));
  });
});
