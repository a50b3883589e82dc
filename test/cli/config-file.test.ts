/**
 * The Flink-key config file (weir run --config FILE): every supported key and value form,
 * errors that name the key and the file, and real CLI runs showing the file's settings take
 * effect and that flags override the file.
 */
import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CliError } from '../../src/cli/args.ts';
import { parseConfig, readConfigFile } from '../../src/cli/config-file.ts';
import { applyCheckpointSettings, DEFAULT_CHECKPOINT_CONFIG } from '../../src/checkpoint/config.ts';
import { resolveRestartStrategy } from '../../src/cluster/restart-strategy.ts';

const repo = join(dirname(fileURLToPath(import.meta.url)), '..', '..');
const FILE = '/etc/weir/weir.json';

let dir: string;
beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), 'weir-config-'));
});
afterAll(() => rmSync(dir, { recursive: true, force: true }));

function error(raw: Record<string, unknown>): string {
  try {
    parseConfig(raw, FILE);
  } catch (e) {
    expect(e).toBeInstanceOf(CliError);
    return (e as Error).message;
  }
  throw new Error(`expected ${JSON.stringify(raw)} to be refused`);
}

describe('parseConfig: checkpoint keys', () => {
  it('reads every execution.checkpointing.* key, with Flink value spellings', () => {
    const c = parseConfig({
      'execution.checkpointing.interval': '30 s',
      'execution.checkpointing.mode': 'AT_LEAST_ONCE',
      'execution.checkpointing.timeout': '5 min',
      'execution.checkpointing.min-pause': 500,
      'execution.checkpointing.max-concurrent-checkpoints': 2,
      'execution.checkpointing.tolerable-failed-checkpoints': '3',
      'execution.checkpointing.externalized-checkpoint-retention': 'RETAIN_ON_CANCELLATION',
      'execution.checkpointing.num-retained': 4,
      'execution.checkpointing.dir': '/var/lib/weir/chk',
      'execution.checkpointing.incremental': true,
      'parallelism.default': 3,
    }, FILE);
    expect(c.checkpoint).toEqual({
      interval: '30 s', mode: 'at-least-once', timeout: '5 min', minPause: 500, maxConcurrent: 2, tolerableFailures: 3,
      retention: 'retain-on-cancel', numRetained: 4, dir: '/var/lib/weir/chk', incremental: true,
    });
    expect(c.parallelism).toBe(3);
    expect(c.restart).toBeUndefined();
    // And it means what Flink means by it.
    const cfg = applyCheckpointSettings(DEFAULT_CHECKPOINT_CONFIG, c.checkpoint, 'x');
    expect(cfg).toEqual({
      intervalMs: 30_000, mode: 'at-least-once', timeoutMs: 300_000, minPauseMs: 500, maxConcurrent: 2, tolerableFailures: 3,
      retention: 'retain-on-cancel', numRetained: 4, dir: '/var/lib/weir/chk', incremental: true, incrementalMaxDeltas: 20, incrementalMaxDeltaRatio: 0.5, unaligned: false, alignedCheckpointTimeoutMs: 0,
    });
  });

  it('incremental checkpoints: Flink\'s older key state.backend.incremental, and the chain bounds', () => {
    expect(parseConfig({ 'state.backend.incremental': true }, FILE).checkpoint.incremental).toBe(true);
    const c = parseConfig({ 'state.backend.incremental.max-deltas': 5, 'state.backend.incremental.max-delta-ratio': 1.5 }, FILE).checkpoint;
    expect(c).toEqual({ incrementalMaxDeltas: 5, incrementalMaxDeltaRatio: 1.5 });
  });

  it('unaligned checkpoints: Flink\'s keys (and the older ones); refused with at-least-once or concurrent checkpoints', () => {
    const c = parseConfig({ 'execution.checkpointing.unaligned.enabled': 'true', 'execution.checkpointing.aligned-checkpoint-timeout': '2 s' }, FILE);
    expect(c.checkpoint).toEqual({ unaligned: true, alignedCheckpointTimeout: '2 s' });
    const cfg = applyCheckpointSettings(DEFAULT_CHECKPOINT_CONFIG, c.checkpoint, 'x');
    expect([cfg.unaligned, cfg.alignedCheckpointTimeoutMs]).toEqual([true, 2000]);
    const old = parseConfig({ 'execution.checkpointing.unaligned': true, 'execution.checkpointing.alignment-timeout': 500 }, FILE);
    expect(old.checkpoint).toEqual({ unaligned: true, alignedCheckpointTimeout: 500 });
    expect(() => applyCheckpointSettings(DEFAULT_CHECKPOINT_CONFIG, { unaligned: true, mode: 'at-least-once' }, 'run options'))
      .toThrow('run options: unaligned checkpoints (execution.checkpointing.unaligned.enabled) need checkpoint mode exactly-once, not at-least-once');
    expect(() => applyCheckpointSettings(DEFAULT_CHECKPOINT_CONFIG, { unaligned: true, maxConcurrent: 2 }, 'x')).toThrow(/need max-concurrent-checkpoints 1, not 2/);
    expect(applyCheckpointSettings(DEFAULT_CHECKPOINT_CONFIG, { unaligned: false, mode: 'at-least-once' }, 'x').mode).toBe('at-least-once');
  });

  it('mode: EXACTLY_ONCE / AT_LEAST_ONCE in any case, with - or _', () => {
    for (const [v, want] of [['EXACTLY_ONCE', 'exactly-once'], ['exactly_once', 'exactly-once'], ['exactly-once', 'exactly-once'], ['AT_LEAST_ONCE', 'at-least-once'], ['at-least-once', 'at-least-once']] as const) {
      expect(parseConfig({ 'execution.checkpointing.mode': v }, FILE).checkpoint.mode).toBe(want);
    }
  });

  it('retention: the three Flink values', () => {
    const r = (v: string) => parseConfig({ 'execution.checkpointing.externalized-checkpoint-retention': v }, FILE).checkpoint.retention;
    expect(r('NO_EXTERNALIZED_CHECKPOINTS')).toBe('none');
    expect(r('DELETE_ON_CANCELLATION')).toBe('delete-on-cancel');
    expect(r('retain_on_cancellation')).toBe('retain-on-cancel');
  });

  it('dir: the old key state.checkpoints.dir, and file:// URIs', () => {
    expect(parseConfig({ 'state.checkpoints.dir': '/data/chk' }, FILE).checkpoint.dir).toBe('/data/chk');
    expect(parseConfig({ 'execution.checkpointing.dir': 'file:///data/chk' }, FILE).checkpoint.dir).toBe('/data/chk');
    expect(parseConfig({ 'state.checkpoints.dir': 'file:/data/chk' }, FILE).checkpoint.dir).toBe('/data/chk');
    expect(parseConfig({ 'state.checkpoints.num-retained': 5 }, FILE).checkpoint.numRetained).toBe(5);
    expect(parseConfig({ 'execution.checkpointing.savepoint-dir': 'file:///data/sp' }, FILE).checkpoint.savepointDir).toBe('/data/sp');
    expect(parseConfig({ 'state.savepoints.dir': 'file:/data/sp' }, FILE).checkpoint.savepointDir).toBe('/data/sp');
  });

  it('values in the flags\' spelling are read too; of two names for one setting the current one wins', () => {
    expect(parseConfig({ 'execution.checkpointing.mode': 'at-least-once', 'execution.checkpointing.externalized-checkpoint-retention': 'retain-on-cancel' }, FILE).checkpoint)
      .toEqual({ mode: 'at-least-once', retention: 'retain-on-cancel' });
    expect(parseConfig({ 'state.checkpoints.dir': '/old', 'execution.checkpointing.dir': '/new' }, FILE).checkpoint.dir).toBe('/new');
  });

  it('an empty file is no settings', () => {
    expect(parseConfig({}, FILE)).toEqual({ checkpoint: {}, restart: undefined });
  });
});

describe('parseConfig: restart-strategy keys', () => {
  it('reads every restart-strategy.* key; the result resolves to the intended strategy', () => {
    const fixed = parseConfig({ 'restart-strategy.type': 'fixed-delay', 'restart-strategy.fixed-delay.attempts': 5, 'restart-strategy.fixed-delay.delay': '2 s' }, FILE);
    expect(resolveRestartStrategy(fixed.restart!, 'x')).toEqual({ type: 'fixed-delay', attempts: 5, delayMs: 2000 });
    const rate = parseConfig({
      'restart-strategy.type': 'failure-rate', 'restart-strategy.failure-rate.max-failures-per-interval': '3',
      'restart-strategy.failure-rate.failure-rate-interval': '5 min', 'restart-strategy.failure-rate.delay': '10 s',
    }, FILE);
    expect(resolveRestartStrategy(rate.restart!, 'x')).toEqual({ type: 'failure-rate', maxFailuresPerInterval: 3, intervalMs: 300_000, delayMs: 10_000 });
    const exp = parseConfig({
      'restart-strategy.type': 'exponential-delay', 'restart-strategy.exponential-delay.initial-backoff': '2 s',
      'restart-strategy.exponential-delay.max-backoff': '5 min', 'restart-strategy.exponential-delay.backoff-multiplier': '2.0',
      'restart-strategy.exponential-delay.reset-backoff-threshold': '2 h', 'restart-strategy.exponential-delay.jitter-factor': 0.2,
      'restart-strategy.exponential-delay.attempts-before-reset-backoff': 10,
    }, FILE);
    expect(resolveRestartStrategy(exp.restart!, 'x')).toEqual({
      type: 'exponential-delay', initialBackoffMs: 2000, maxBackoffMs: 300_000, multiplier: 2, resetThresholdMs: 7_200_000, jitter: 0.2, attemptsBeforeReset: 10,
    });
  });

  it('type spellings: Flink\'s old names and aliases for none', () => {
    const t = (v: string) => parseConfig({ 'restart-strategy.type': v }, FILE).restart!.type;
    expect(t('fixeddelay')).toBe('fixed-delay');
    expect(t('FIXED_DELAY')).toBe('fixed-delay');
    expect(t('failurerate')).toBe('failure-rate');
    expect(t('exponentialdelay')).toBe('exponential-delay');
    for (const none of ['none', 'off', 'disable', 'no-restart', 'NONE']) expect(t(none)).toBe('none');
    expect(parseConfig({ 'restart-strategy': 'fixed-delay' }, FILE).restart!.type).toBe('fixed-delay');
  });

  it("state backend keys: Flink's rocksdb is weir's disk backend, its local directory and cache", () => {
    expect(parseConfig({ 'state.backend.type': 'rocksdb', 'state.backend.rocksdb.localdir': '/x', 'state.backend.disk.cache-entries': 5 }, FILE)).toMatchObject({
      stateBackend: 'disk', stateBackendOptions: { disk: { dir: '/x', cacheEntries: 5 } },
    });
    expect(parseConfig({ 'state.backend.type': 'hashmap' }, FILE)).toMatchObject({ stateBackend: 'heap' });
  });

  it('failure-rate and fixed-delay delays are two settings: which one the file names last does not matter; failure-rate\'s alone does not mean fixed-delay', () => {
    for (const order of [['restart-strategy.failure-rate.delay', 'restart-strategy.fixed-delay.delay'], ['restart-strategy.fixed-delay.delay', 'restart-strategy.failure-rate.delay']]) {
      const delays: Record<string, string> = { 'restart-strategy.failure-rate.delay': '30 s', 'restart-strategy.fixed-delay.delay': '1 s' };
      const c = parseConfig({ 'restart-strategy.type': 'failure-rate', [order[0]!]: delays[order[0]!], [order[1]!]: delays[order[1]!] }, FILE);
      expect(resolveRestartStrategy(c.restart!, 'x')).toMatchObject({ type: 'failure-rate', delayMs: 30_000 });
    }
    expect(parseConfig({ 'restart-strategy.failure-rate.delay': '30 s' }, FILE).restart).toEqual({ failureRateDelay: '30 s' });
  });

  it('an older key beside the current one for one setting: the current key wins wherever it stands, as in Flink (the last key won)', () => {
    expect(parseConfig({ 'execution.checkpointing.dir': '/data/chk', 'state.checkpoints.dir': '/tmp/old-chk' }, FILE).checkpoint.dir).toBe('/data/chk');
    expect(parseConfig({ 'state.checkpoints.dir': '/tmp/old-chk', 'execution.checkpointing.dir': '/data/chk' }, FILE).checkpoint.dir).toBe('/data/chk');
    expect(parseConfig({ 'restart-strategy': 'none', 'restart-strategy.type': 'fixed-delay' }, FILE).restart!.type).toBe('fixed-delay');
    expect(parseConfig({ 'restart-strategy.type': 'fixed-delay', 'restart-strategy': 'none' }, FILE).restart!.type).toBe('fixed-delay');
  });

  it('the order of keys does not matter (a backoff bound before the other)', () => {
    const c = parseConfig({ 'restart-strategy.exponential-delay.initial-backoff': '2 min', 'restart-strategy.exponential-delay.max-backoff': '10 min' }, FILE);
    expect(resolveRestartStrategy(c.restart!, 'x')).toMatchObject({ initialBackoffMs: 120_000, maxBackoffMs: 600_000 });
  });
});

describe('parseConfig: errors name the key and the file', () => {
  it('unknown keys', () => {
    expect(error({ 'execution.checkpointing.intervall': '1 s' })).toBe(`${FILE}: unknown configuration key "execution.checkpointing.intervall" (did you mean "execution.checkpointing.interval"?)`);
    expect(error({ 'state.backend': 'forst' })).toBe(`${FILE}: "state.backend": state backend must be hashmap or rocksdb, got "forst"`);
    expect(error({ 'state.backend.incremental.enabled': true })).toMatch(/unknown configuration key "state.backend.incremental.enabled"/);    // A flag's name used as a key, and an older key misspelt.
    expect(error({ 'checkpoint-interval': '1 s' })).toBe(`${FILE}: unknown configuration key "checkpoint-interval" (did you mean "execution.checkpointing.interval"?)`);
    expect(error({ 'state.checkpoint.dir': '/x' })).toBe(`${FILE}: unknown configuration key "state.checkpoint.dir" (did you mean "state.checkpoints.dir"?)`);
  });

  const bad: [string, unknown, RegExp][] = [
    ['execution.checkpointing.interval', 'soon', /cannot read "soon" as a duration/],
    ['execution.checkpointing.interval', '5 ms', /at least 10 ms/],
    ['execution.checkpointing.interval', true, /must be a string/],
    ['execution.checkpointing.timeout', '1 fortnight', /unknown time unit/],
    ['execution.checkpointing.min-pause', -5, /non-negative/],
    ['execution.checkpointing.mode', 'SOMETIMES', /must be EXACTLY_ONCE or AT_LEAST_ONCE, got "SOMETIMES"/],
    ['execution.checkpointing.max-concurrent-checkpoints', 0, /integer >= 1, got 0/],
    ['execution.checkpointing.max-concurrent-checkpoints', 1.5, /must be an integer, got 1.5/],
    ['execution.checkpointing.tolerable-failed-checkpoints', -1, /integer >= 0, got -1/],
    ['execution.checkpointing.externalized-checkpoint-retention', 'KEEP', /must be NO_EXTERNALIZED_CHECKPOINTS, DELETE_ON_CANCELLATION or RETAIN_ON_CANCELLATION, got "KEEP"/],
    ['execution.checkpointing.num-retained', 0, /integer >= 1, got 0/],
    ['state.checkpoints.num-retained', 'two', /must be an integer, got "two"/],
    ['execution.checkpointing.dir', '', /non-empty path/],
    ['execution.checkpointing.savepoint-dir', ' ', /non-empty path/],
    ['state.checkpoints.dir', { path: '/x' }, /must be a string/],
    ['parallelism.default', 0, /positive integer, got 0/],
    ['restart-strategy.type', 'sometimes', /must be none, fixed-delay, failure-rate or exponential-delay, got "sometimes"/],
    ['restart-strategy.fixed-delay.attempts', -2, /integer >= 0, got -2/],
    ['restart-strategy.fixed-delay.delay', 'later', /cannot read "later" as a duration/],
    ['restart-strategy.failure-rate.delay', 'x', /cannot read "x"/],
    ['restart-strategy.failure-rate.max-failures-per-interval', 0, /integer >= 1, got 0/],
    ['restart-strategy.failure-rate.failure-rate-interval', 'hourly', /cannot read "hourly"/],
    ['restart-strategy.exponential-delay.initial-backoff', 'x', /cannot read "x"/],
    ['restart-strategy.exponential-delay.max-backoff', 'x', /cannot read "x"/],
    ['restart-strategy.exponential-delay.backoff-multiplier', 'double', /must be a number, got "double"/],
    ['restart-strategy.exponential-delay.backoff-multiplier', 0.5, />= 1, got 0.5/],
    ['restart-strategy.exponential-delay.reset-backoff-threshold', 'x', /cannot read "x"/],
    ['restart-strategy.exponential-delay.jitter-factor', 2, /between 0 and 1, got 2/],
    ['restart-strategy.exponential-delay.jitter-factor', 'lots', /must be a number, got "lots"/],
    ['restart-strategy.exponential-delay.attempts-before-reset-backoff', 0, />= 1, got 0/],
  ];
  for (const [key, value, reason] of bad) {
    it(`${key} = ${JSON.stringify(value)}`, () => {
      const msg = error({ [key]: value });
      expect(msg.startsWith(`${FILE}: "${key}"`), msg).toBe(true);
      expect(msg).toMatch(reason);
    });
  }

  it('backoff bounds that contradict each other name the file', () => {
    const msg = error({ 'restart-strategy.exponential-delay.initial-backoff': '10 min', 'restart-strategy.exponential-delay.max-backoff': '1 min' });
    expect(msg).toBe(`${FILE}: max backoff (60000 ms) is smaller than the initial backoff (600000 ms)`);
  });
});

describe('readConfigFile', () => {
  it('reads a JSON file', () => {
    const p = join(dir, 'ok.json');
    writeFileSync(p, JSON.stringify({ 'execution.checkpointing.interval': '1 s', 'restart-strategy.type': 'none' }));
    expect(readConfigFile(p)).toEqual({ checkpoint: { interval: '1 s' }, restart: { type: 'none' } });
  });

  it('a key given twice is refused with the file, the key and its line (JSON.parse kept the last one silently)', () => {
    const p = join(dir, 'twice.json');
    writeFileSync(p, '{"execution.checkpointing.interval": "1 h",\n "execution.checkpointing.interval": "20 ms"}');
    expect(() => readConfigFile(p)).toThrow(new CliError(`config file ${p}: line 2, column 2: the key "execution.checkpointing.interval" is given twice in one object (JSON.parse would keep the last silently)`));
  });

  it('a file that is not JSON: its place, never its content (a password next to the fault)', () => {
    const p = join(dir, 'secret.json');
    writeFileSync(p, '{"s3.secret-key": "3t-Pa55", }');
    expect(() => readConfigFile(p)).toThrow(new CliError(`config file ${p} is not valid JSON: line 1, column 30: a key in double quotes expected`));
  });

  it('errors name the file: missing, not JSON, not an object, a bad key', () => {
    const missing = join(dir, 'missing.json');
    expect(() => readConfigFile(missing)).toThrow(new RegExp(`^cannot read config file ${missing}`));
    const notJson = join(dir, 'bad.json');
    writeFileSync(notJson, '{"execution.checkpointing.interval": ');
    expect(() => readConfigFile(notJson)).toThrow(new RegExp(`^config file ${notJson} is not valid JSON`));
    const arr = join(dir, 'arr.json');
    writeFileSync(arr, '[1, 2]');
    expect(() => readConfigFile(arr)).toThrow(`config file ${arr} must hold a JSON object`);
    const badKey = join(dir, 'badkey.json');
    writeFileSync(badKey, JSON.stringify({ 'execution.checkpointing.interval': '1 s', 'execution.checkpointing.mood': 'happy' }));
    expect(() => readConfigFile(badKey)).toThrow(`${badKey}: unknown configuration key "execution.checkpointing.mood"`);
    const badValue = join(dir, 'badvalue.json');
    writeFileSync(badValue, JSON.stringify({ 'execution.checkpointing.num-retained': 0 }));
    expect(() => readConfigFile(badValue)).toThrow(`${badValue}: "execution.checkpointing.num-retained"`);
  });
});

interface Run { code: number | null; stderr: string }

function weir(...args: string[]): Promise<Run> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ['bin/weir.js', ...args], { cwd: repo, stdio: ['ignore', 'ignore', 'pipe'] });
    let stderr = '';
    child.stderr.setEncoding('utf8').on('data', (d: string) => (stderr += d));
    child.on('error', reject);
    child.on('close', (code) => resolve({ code, stderr }));
  });
}

const JOB = 'test/fixtures/jobs/recoverable-counts.ts';

/** Checkpoint directories (chk-<n>) and history entries of every job under a checkpoint root. */
function checkpointsUnder(root: string): { dirs: string[]; completed: { id: number; externalPath: string }[] } {
  const dirs: string[] = [];
  const completed: { id: number; externalPath: string }[] = [];
  if (!existsSync(root)) return { dirs, completed };
  for (const job of readdirSync(root)) {
    for (const e of readdirSync(join(root, job))) if (/^chk-\d+$/.test(e)) dirs.push(join(root, job, e));
    const h = join(root, job, 'checkpoint-history.jsonl');
    if (existsSync(h)) {
      for (const l of readFileSync(h, 'utf8').split('\n')) {
        if (l === '') continue;
        const x = JSON.parse(l);
        if (x.status === 'COMPLETED') completed.push({ id: x.id, externalPath: x.externalPath });
      }
    }
  }
  return { dirs, completed };
}

describe.concurrent('weir run --config', () => {
  it('the file\'s checkpoint settings take effect (file:// dir, interval), and --checkpoint-dir overrides the file', async () => {
    const chk = join(dir, 'run1-chk');
    const other = join(dir, 'run1-other');
    const cfg = join(dir, 'run1.json');
    writeFileSync(cfg, JSON.stringify({ 'execution.checkpointing.interval': '20 ms', 'state.checkpoints.dir': `file://${chk}`, 'execution.checkpointing.mode': 'EXACTLY_ONCE' }));
    const [a, b] = await Promise.all([
      weir('run', JOB, '-w', '1', '--config', cfg, '--', join(dir, 'run1-out-a'), '300', '1000'),
      weir('run', JOB, '-w', '1', '--config', cfg, '--checkpoint-dir', other, '--', join(dir, 'run1-out-b'), '300', '1000'),
    ]);
    expect(a.code, a.stderr).toBe(0);
    expect(b.code, b.stderr).toBe(0);
    const inChk = checkpointsUnder(chk);
    expect(inChk.completed.length).toBeGreaterThan(0);
    for (const c of inChk.completed) expect(c.externalPath.startsWith(join(chk, ''))).toBe(true);
    const inOther = checkpointsUnder(other);
    expect(inOther.completed.length).toBeGreaterThan(0);
    for (const c of inOther.completed) expect(c.externalPath.startsWith(join(other, ''))).toBe(true);
    // Exactly one job in each: the flag moved run b's checkpoints away from the file's directory.
    expect(readdirSync(chk)).toHaveLength(1);
    expect(readdirSync(other)).toHaveLength(1);
  });

  it('the file\'s restart strategy and retention take effect, and --restart-strategy overrides the file', async () => {
    const chk = join(dir, 'run2-chk');
    const cfg = join(dir, 'run2.json');
    writeFileSync(cfg, JSON.stringify({
      'execution.checkpointing.interval': '20 ms', 'execution.checkpointing.dir': chk,
      'execution.checkpointing.externalized-checkpoint-retention': 'RETAIN_ON_CANCELLATION',
      'restart-strategy.type': 'fixed-delay', 'restart-strategy.fixed-delay.attempts': 1, 'restart-strategy.fixed-delay.delay': '0 s',
    }));
    const [restarted, overridden] = await Promise.all([
      // 2.7 s of input at 300 records/s: the task fails at the first record after a checkpoint
      // completed, which a loaded machine can take longer than a second to see.
      weir('run', JOB, '-w', '1', '--config', cfg, '--', join(dir, 'run2-out-a'), '800', '300', 'once@1'),
      weir('run', JOB, '-w', '1', '--config', cfg, '--restart-strategy', 'none', '--', join(dir, 'run2-out-b'), '800', '300', 'once@1'),
    ]);
    expect(restarted.code, restarted.stderr).toBe(0);
    expect(restarted.stderr).toMatch(/restarting in 0 ms \(attempt 1 of 1\) from checkpoint \d+/);
    expect(overridden.code).toBe(1);
    expect(overridden.stderr).toMatch(/injected failure/);
    expect(overridden.stderr).not.toMatch(/restarting/);
    // RETAIN_ON_CANCELLATION from the file: the failed job's checkpoints are kept.
    const failedJob = readdirSync(chk).map((j) => join(chk, j)).filter((j) => readdirSync(j).some((e) => /^chk-\d+$/.test(e)));
    expect(failedJob).toHaveLength(1);
  });

  it('an unknown key in the file is a one-line error with the nearest key, exit code 2', async () => {
    const cfg = join(dir, 'run4.json');
    writeFileSync(cfg, JSON.stringify({ 'execution.checkpointing.intervall': '1 s' }));
    const r = await weir('run', JOB, '--config', cfg, '--', join(dir, 'run4-out'));
    expect(r.code).toBe(2);
    expect(r.stderr).toBe(`weir: error: ${cfg}: unknown configuration key "execution.checkpointing.intervall" (did you mean "execution.checkpointing.interval"?)\n`);
  });

  it('a bad value in the file is a one-line error naming the key and the file, exit code 2', async () => {
    const cfg = join(dir, 'run3.json');
    writeFileSync(cfg, JSON.stringify({ 'execution.checkpointing.interval': 'often' }));
    const r = await weir('run', JOB, '--config', cfg, '--', join(dir, 'run3-out'));
    expect(r.code).toBe(2);
    expect(r.stderr).toBe(`weir: error: ${cfg}: "execution.checkpointing.interval": checkpoint interval: cannot read "often" as a duration; use e.g. 500ms, 5s, 1min, 2h\n`);
  });
});
