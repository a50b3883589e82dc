/** The application spec (issue 13 point 1): JSON and YAML, every error one line naming the field. */
import { describe, expect, it } from 'vitest';
import { parseSpecText, validateSpec } from '../../src/lifecycle/spec.ts';

const YAML = `
name: orders
job:
  module: jobs/orders.ts
  version: v2
  args: [v2, 5000]
  parallelism: 2
configuration:
  execution.checkpointing.interval: 1s
state: running
upgradeMode: last-state
initialSavepointPath: /data/sp-1
allowNonRestoredState: true
savepointTriggerNonce: 3
savepoints: { interval: 10 min, maxAge: 2d, maxCount: 4, timeout: 30s }
lastState: { maxCheckpointAge: 5min }
rollback: { enabled: true, readinessTimeout: 90s }
health: { restartsThreshold: 5, restartsWindow: 2 min, checkpointProgressWindow: 10 min }
`;

const base = { name: 'orders', job: { module: '/j.ts', version: 'v1' } };
const error = (raw: unknown): string => {
  try {
    validateSpec(raw, 'orders.yaml', '/apps');
  } catch (e) {
    return (e as Error).message;
  }
  throw new Error('no error');
};

describe('application spec', () => {
  it('reads every field from YAML, durations in ms, the module against the spec\'s folder', () => {
    const s = parseSpecText(YAML, 'orders.yaml', '/apps');
    expect(s).toEqual({
      name: 'orders',
      job: { module: '/apps/jobs/orders.ts', version: 'v2', args: ['v2', '5000'], parallelism: 2 },
      configuration: { 'execution.checkpointing.interval': '1s' },
      state: 'running', upgradeMode: 'last-state', initialSavepointPath: '/data/sp-1', allowNonRestoredState: true, savepointTriggerNonce: 3,
      savepoints: { intervalMs: 600_000, maxAgeMs: 172_800_000, maxCount: 4, timeoutMs: 30_000 },
      lastState: { maxCheckpointAgeMs: 300_000 },
      rollback: { enabled: true, readinessTimeoutMs: 90_000 },
      health: { restartsThreshold: 5, restartsWindowMs: 120_000, checkpointProgressWindowMs: 600_000 },
    });
  });

  it('reads JSON, with the operator\'s defaults for what is left out', () => {
    const s = parseSpecText(JSON.stringify(base), 'orders.json', '/apps');
    expect(s.state).toBe('running');
    expect(s.upgradeMode).toBe('savepoint');
    expect(s.savepoints).toEqual({ maxAgeMs: 86_400_000, maxCount: 10, timeoutMs: 600_000 });
    expect(s.rollback).toEqual({ enabled: false, readinessTimeoutMs: 300_000 });
    expect(s.health).toEqual({ restartsThreshold: 64, restartsWindowMs: 120_000 });
  });

  it('names the field of every problem', () => {
    expect(error({ ...base, job: { ...base.job, paralelism: 2 } })).toBe('orders.yaml: field "job.paralelism": unknown field (did you mean "parallelism"?)');
    expect(error({ ...base, job: { ...base.job, parallelism: 0 } })).toBe('orders.yaml: field "job.parallelism": expected an integer >= 1, got 0');
    expect(error({ ...base, job: { version: 'v1' } })).toBe('orders.yaml: field "job.module": required');
    expect(error({ ...base, upgradeMode: 'snapshot' })).toBe('orders.yaml: field "upgradeMode": expected one of stateless, savepoint, last-state, got "snapshot"');
    expect(error({ ...base, state: 'paused' })).toBe('orders.yaml: field "state": expected one of running, suspended, got "paused"');
    expect(error({ ...base, name: 'Orders_1' })).toMatch(/^orders\.yaml: field "name": expected lower-case letters/);
    expect(error({ ...base, savepoints: { interval: '5 parsecs' } })).toBe('orders.yaml: field "savepoints.interval": unknown time unit "parsecs" in "5 parsecs"; use ms, s, min, h or d');
    expect(error({ ...base, rollback: { enabled: 'yes' } })).toBe('orders.yaml: field "rollback.enabled": expected true or false, got "yes"');
    expect(error({ ...base, job: { ...base.job, args: ['a', { b: 1 }] } })).toBe('orders.yaml: field "job.args[1]": expected a string, got an object');
    expect(error([1])).toBe('orders.yaml: expected an object (a mapping of fields), got a list');
  });

  it('checks configuration keys and values against the option registry; the manager owns the directories', () => {
    expect(error({ ...base, configuration: { 'execution.checkpointing.dir': '/x' } })).toBe('orders.yaml: field "configuration.execution.checkpointing.dir": the manager sets this key itself (one directory per application)');
    expect(error({ ...base, configuration: { 'execution.checkpointing.intervall': '1s' } })).toBe('orders.yaml: field "configuration.execution.checkpointing.intervall": not a configuration key weir knows (see docs/configuration.md)');
    expect(error({ ...base, configuration: { 'execution.checkpointing.interval': '1 fortnight' } })).toMatch(/^orders\.yaml: field "configuration\.execution\.checkpointing\.interval": checkpoint interval/);
    // Settings that must agree, checked as weir run --config checks them (before: accepted, refused at the deployment).
    expect(error({ ...base, configuration: { 'restart-strategy.type': 'exponential-delay', 'restart-strategy.exponential-delay.initial-backoff': '10 min', 'restart-strategy.exponential-delay.max-backoff': '1 s' } }))
      .toBe('orders.yaml: field "configuration": max backoff (1000 ms) is smaller than the initial backoff (600000 ms)');
    // Before: accepted, written to the deployment's files (the endpoint's password with them), refused at its start.
    const leaky = error({ ...base, configuration: { 's3.endpoint': 'http://AKIA:s3cr3t@minio:9000' } });
    expect(leaky).toMatch(/^orders\.yaml: field "configuration": S3 endpoint must not carry credentials/);
    expect(leaky).not.toContain('s3cr3t');
    // The initial savepoint as --from: no credentials (before: accepted, then in the manager's log and the deployment's command line).
    const initial = error({ ...base, initialSavepointPath: 's3://AKIA:s3cr3t@my-bucket/sp-1' });
    expect(initial).toBe('orders.yaml: field "initialSavepointPath": expected a local path or s3://... without credentials in it (use the AWS credential chain: AWS_ACCESS_KEY_ID, profiles), got "s3://***@my-bucket/sp-1"');
    expect(error({ ...base, configuration: { 'execution.checkpointing.interval': '1s', 'execution.checkpointing.unaligned.enabled': true, 'execution.checkpointing.mode': 'AT_LEAST_ONCE' } }))
      .toBe('orders.yaml: field "configuration": unaligned checkpoints (execution.checkpointing.unaligned.enabled) need checkpoint mode exactly-once, not at-least-once');
  });

  it('refuses modes whose needs the configuration does not meet', () => {
    expect(error({ ...base, upgradeMode: 'last-state' })).toBe('orders.yaml: field "upgradeMode": last-state needs checkpoints: set configuration "execution.checkpointing.interval"');
    expect(error({ ...base, health: { checkpointProgressWindow: '1 min' } })).toBe('orders.yaml: field "health.checkpointProgressWindow": needs checkpoints: set configuration "execution.checkpointing.interval"');
    // Windows a healthy job cannot meet (before: accepted, and a restart loop or a rollback of every upgrade).
    const every = (interval: string) => ({ ...base, configuration: { 'execution.checkpointing.interval': interval } });
    expect(error({ ...every('1 min'), health: { checkpointProgressWindow: '10s' } })).toBe('orders.yaml: field "health.checkpointProgressWindow": 10000 ms is shorter than two checkpoint intervals (120000 ms): a healthy job would be restarted before it completes a checkpoint');
    expect(error({ ...every('1 min'), rollback: { enabled: true, readinessTimeout: '30s' } })).toBe('orders.yaml: field "rollback.readinessTimeout": 30000 ms is not longer than the checkpoint interval (60000 ms): an upgrade is stable only once it completed a checkpoint, so every upgrade would roll back');
    expect(() => validateSpec({ ...every('1 min'), health: { checkpointProgressWindow: '2 min' }, rollback: { enabled: true, readinessTimeout: '61s' } }, 'orders.yaml', '/')).not.toThrow();
    expect(() => validateSpec({ ...every('1 min'), rollback: { enabled: false, readinessTimeout: '30s' } }, 'orders.yaml', '/')).not.toThrow();
  });

  it('reports text that is not YAML or JSON in one line', () => {
    expect(() => parseSpecText('name: [a', 'x.yaml', '/')).toThrow(/^x\.yaml: not valid YAML: /);
    // Where, in the one line (before: no line number).
    expect(() => parseSpecText('name: x\njob: { module: a.ts,\n  version: v1\nfoo: [\n', 'y.yaml', '/')).toThrow(/^y\.yaml: not valid YAML: .* at line 4, column 1$/);
    expect(() => parseSpecText('{', 'x.json', '/')).toThrow(/^x\.json: not valid JSON: /);
  });

  it('a version or argument written as a number keeps its text (before: String(1.10) = "1.1", so an upgrade from 1.1 to 1.10 was no change; args 01234, 0x1F passed as 1234, 31)', () => {
    const yaml = 'name: orders\njob:\n  module: /j.ts\n  version: 1.10\n  args: [--zip, 01234, --ratio, 1.10, 0x1F, 1e2, true, 5000, "q"]\n';
    expect(parseSpecText(yaml, 'o.yaml', '/').job).toEqual({ module: '/j.ts', version: '1.10', args: ['--zip', '01234', '--ratio', '1.10', '0x1F', '1e2', 'true', '5000', 'q'] });
    const block = 'name: orders\njob:\n  module: /j.ts\n  version: 2.0\n  args:\n    - 007\n    - .5\n';
    expect(parseSpecText(block, 'o.yaml', '/').job).toEqual({ module: '/j.ts', version: '2.0', args: ['007', '.5'] });
    const json = '{"name": "orders", "job": {"module": "/j.ts", "version": 1.10, "args": [1e2, 0.50]}}';
    expect(parseSpecText(json, 'o.json', '/').job).toEqual({ module: '/j.ts', version: '1.10', args: ['1e2', '0.50'] });
    // Data without the text (JSON over REST): an integer is its digits, another number is refused.
    expect(validateSpec({ ...base, job: { ...base.job, version: 2, args: [5000] } }, 'orders.yaml', '/').job).toEqual({ module: '/j.ts', version: '2', args: ['5000'] });
    expect(error({ ...base, job: { ...base.job, version: 1.1 } })).toBe('orders.yaml: field "job.version": got the number 1.1, which may have been written otherwise (1.10 reads as 1.1); write it in quotes, as "1.10"');
    expect(error({ ...base, job: { ...base.job, args: ['--ratio', 1.1] } })).toMatch(/^orders\.yaml: field "job\.args\[1\]": got the number 1\.1, /);
  });

  it('a YAML spec with a key twice is refused in one line', () => {
    expect(() => parseSpecText('name: a\njob: { module: /j.ts, version: v1 }\nname: b\n', 'd.yaml', '/')).toThrow(/^d\.yaml: not valid YAML: Map keys must be unique at line 3, column 1$/);
  });

  it('a JSON spec with a key twice is refused, naming the key and its line (JSON.parse kept the last silently); bad JSON is told by its place, never its text', () => {
    expect(() => parseSpecText('{"name": "orders", "job": {"module": "/j.ts", "version": "v1"},\n "name": "payments"}', 'o.json', '/'))
      .toThrow(/^o\.json: line 2, column 2: the key "name" is given twice in one object/);
    let message = '';
    try {
      parseSpecText('{"name": "orders", "configuration": {"s3.secret-key": "3t-Pa55", }}', 'o.json', '/');
    } catch (e) {
      message = (e as Error).message;
    }
    expect(message).toBe('o.json: not valid JSON: line 1, column 66: a key in double quotes expected');
  });
});
