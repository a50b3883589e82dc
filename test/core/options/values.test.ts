/** Reading a value for an option, worded for its origin; placing values in a settings tree. */
import { describe, expect, it } from 'vitest';
import type { Option } from '../../../src/core/options/option.ts';
import { OPTIONS } from '../../../src/core/options/registry.ts';
import { codeProblem, mergeTrees, readValue, settingsTree, valueOf } from '../../../src/core/options/values.ts';

describe('readValue: a refusal names the option where the value came from', () => {
  it('a flag: the flag as typed and its text', () => {
    expect(readValue(OPTIONS.checkpointMaxConcurrent, '0', { kind: 'flag', flag: '--checkpoint-max-concurrent', text: '0' }))
      .toEqual({ ok: false, message: '--checkpoint-max-concurrent expects an integer >= 1, got "0"' });
    expect(readValue(OPTIONS.parallelism, 'x', { kind: 'flag', flag: '-p', text: 'x' })).toEqual({ ok: false, message: '-p expects a positive integer, got "x"' });
    expect(readValue(OPTIONS.checkpointInterval, 'soon', { kind: 'flag', flag: '--checkpoint-interval', text: 'soon' }))
      .toEqual({ ok: false, message: '--checkpoint-interval: cannot read "soon" as a duration; use e.g. 500ms, 5s, 1min, 2h' });
  });

  it('a config file: the file, the key as written (maybe an older one) and the setting, values in Flink\'s spelling', () => {
    expect(readValue(OPTIONS.checkpointMode, 'x', { kind: 'file', path: 'w.json', key: 'execution.checkpointing.mode' }))
      .toEqual({ ok: false, message: 'w.json: "execution.checkpointing.mode": checkpoint mode must be EXACTLY_ONCE or AT_LEAST_ONCE, got "x"' });
    expect(readValue(OPTIONS.checkpointsRetained, 0, { kind: 'file', path: 'w.json', key: 'state.checkpoints.num-retained' }))
      .toEqual({ ok: false, message: 'w.json: "state.checkpoints.num-retained": number of retained checkpoints must be an integer >= 1, got 0' });
  });

  it('an accepted value in the API\'s form', () => {
    expect(readValue(OPTIONS.checkpointRetention, 'RETAIN_ON_CANCELLATION', { kind: 'file', path: 'w.json', key: 'k' })).toEqual({ ok: true, value: 'retain-on-cancel' });
    expect(readValue(OPTIONS.checkpointDir, 'file:///x', { kind: 'flag', flag: '--checkpoint-dir', text: 'file:///x' })).toEqual({ ok: true, value: '/x' });
    expect(readValue(OPTIONS.checkpointDir, 's3a://b/chk', { kind: 'file', path: 'flink.json', key: 'state.checkpoints.dir' }))
      .toEqual({ ok: false, message: 'flink.json: "state.checkpoints.dir": checkpoint directory must be a local path or s3://... (s3a:// and s3p:// are written s3:// here), got "s3a://b/chk"' });
    expect(codeProblem(OPTIONS.checkpointDir, 'hdfs://nn/chk', 'job code')).toContain('must be a local path or s3://...');
  });

  it('code: the source named by the caller and the setting', () => {
    expect(codeProblem(OPTIONS.jitterFactor, 2, 'job code')).toBe('job code: jitter factor must be between 0 and 1, got 2');
    expect(codeProblem(OPTIONS.jitterFactor, 0.5, 'job code')).toBeUndefined();
  });
});

describe('settings trees', () => {
  const values = new Map<Option, unknown>([
    [OPTIONS.checkpointInterval as Option, '1 s'],
    [OPTIONS.checkpointMode as Option, 'at-least-once'],
    [OPTIONS.parallelism as Option, 4],
    [OPTIONS.restPort as Option, 0],
    [OPTIONS.verbose as Option, true], // no field: read by its command only
  ]);

  it('places each value at its field', () => {
    expect(settingsTree(values)).toEqual({ checkpoint: { interval: '1 s', mode: 'at-least-once' }, parallelism: 4, rest: { port: 0 } });
    expect(valueOf(values, OPTIONS.verbose)).toBe(true);
    expect(valueOf(values, OPTIONS.workers)).toBeUndefined();
  });

  it('merges field by field, the second tree winning', () => {
    const file = { checkpoint: { interval: '10 s', dir: '/a' }, parallelism: 2, restart: { type: 'none' } };
    const flags = { checkpoint: { interval: '1 s' }, parallelism: 4 };
    expect(mergeTrees(file, flags)).toEqual({ checkpoint: { interval: '1 s', dir: '/a' }, parallelism: 4, restart: { type: 'none' } });
    expect(file.checkpoint.interval).toBe('10 s'); // inputs untouched
  });
});
