/**
 * On Node below 22 the AWS SDK prints a NodeVersionSupportWarning once per process; weir pins
 * SDK releases that run on Node 20, so neither of its clients (Kinesis, S3) lets it through,
 * and a variable the user set is kept. Each case runs in a process of its own: the SDK warns
 * once per process.
 */
import { spawnSync } from 'node:child_process';
import { resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

const ROOT = resolve(fileURLToPath(new URL('.', import.meta.url)), '../..');
const VARIABLE = 'AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED';

function probe(client: 'kinesis' | 's3', env: NodeJS.ProcessEnv): { stdout: string; stderr: string } {
  const r = spawnSync(process.execPath, ['--import', 'tsx', 'test/fixtures/aws-sdk-clients-probe.ts', client], { cwd: ROOT, encoding: 'utf8', timeout: 60_000, env });
  expect(r.status, r.stderr).toBe(0);
  expect(r.stdout).toBe('made\n');
  return { stdout: r.stdout, stderr: r.stderr };
}

function envWithout(name: string): NodeJS.ProcessEnv {
  const env = { ...process.env };
  delete env[name];
  return env;
}

const warns = Number(process.versions.node.split('.')[0]) < 22;

describe('the AWS SDK Node version warning', () => {
  for (const client of ['kinesis', 's3'] as const) {
    it(`${client}: making a client prints no NodeVersionSupportWarning`, () => {
      expect(probe(client, envWithout(VARIABLE)).stderr).not.toContain('NodeVersionSupportWarning');
    });
  }

  // What the SDK does when the user turns the warning back on (on Node below 22, the Node weir
  // runs on): proves the probe would see the warning if it came.
  it('a user who sets the variable to "false" gets the SDK\'s warning (their setting holds)', () => {
    const stderr = probe('kinesis', { ...envWithout(VARIABLE), [VARIABLE]: 'false' }).stderr;
    expect(stderr.includes('NodeVersionSupportWarning'), stderr).toBe(warns);
  });
});
