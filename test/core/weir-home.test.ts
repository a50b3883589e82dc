/**
 * weir's default home is in the shared temporary directory: another user could create it first
 * and plant a job registry entry (the CLI would send its REST token to their server), a manager
 * discovery file or an application. Its private parts (the registry, the manager's directory)
 * are refused unless they belong to this user and no one else can write to them.
 */
import { chmodSync, mkdtempSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { privateHomeDir, weirHome } from '../../src/core/weir-home.ts';

let base: string;
const saved = { TMPDIR: process.env.TMPDIR, WEIR_HOME: process.env.WEIR_HOME };
beforeEach(() => {
  base = mkdtempSync(join(tmpdir(), 'weir-home-test-'));
  process.env.TMPDIR = base;
  delete process.env.WEIR_HOME;
});
afterEach(() => {
  for (const [k, v] of Object.entries(saved)) if (v === undefined) delete process.env[k]; else process.env[k] = v;
  rmSync(base, { recursive: true, force: true });
});

describe('the default weir home', () => {
  it('is made private (0700) and used', () => {
    const dir = privateHomeDir('jobs');
    expect(dir).toBe(join(base, `weir-${process.getuid!()}`, 'jobs'));
    expect(statSync(dir).mode & 0o777).toBe(0o700);
  });

  it('writable by others, it is refused with the directory named (before: trusted)', () => {
    const home = weirHome();
    privateHomeDir('jobs');
    chmodSync(home, 0o777);
    expect(() => privateHomeDir('manager')).toThrow(`weir's directory ${home} is writable by others (mode 777); remove it, or set WEIR_HOME to a directory of your own`);
  });

  it('a WEIR_HOME given explicitly is the user\'s choice', () => {
    const mine = join(base, 'mine');
    process.env.WEIR_HOME = mine;
    privateHomeDir('jobs');
    chmodSync(mine, 0o777);
    expect(privateHomeDir('jobs')).toBe(join(mine, 'jobs'));
  });
});
