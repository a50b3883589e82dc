import { describe, expect, it } from 'vitest';
import { JAVA_LONG_MAX, jsonText } from '../../src/observe/json-reply.ts';
import { checkpointConfigJson } from '../../src/observe/flink-checkpoints.ts';
import { DEFAULT_CHECKPOINT_CONFIG } from '../../src/checkpoint/config.ts';

describe('REST reply JSON', () => {
  it('writes a bigint as its exact integer, Java\'s Long.MAX_VALUE included, and leaves strings alone', () => {
    expect(jsonText({ interval: JAVA_LONG_MAX, n: -5n, list: [1n, 2] })).toBe('{"interval":9223372036854775807,"n":-5,"list":[1,2]}');
    // A string that looks like the mark without the process's id stays a string.
    expect(jsonText({ s: '\u0000bigint-x:12', t: '12' })).toBe('{"s":"\\u0000bigint-x:12","t":"12"}');
    expect(jsonText({ a: 1.5, b: null, c: 'x' })).toBe(JSON.stringify({ a: 1.5, b: null, c: 'x' }));
  });

  it('blanks the password of every URL in every string, keys and nesting included', () => {
    const text = jsonText({ message: 'map failed on record {"db":"postgres://app:s3cr3t@db.internal:5432/prod"}', list: [{ stacktrace: 'Error: connect redis://:hunter2@cache:6379 refused' }] });
    expect(text).not.toMatch(/s3cr3t|hunter2/);
    expect(text).toContain('postgres://***@db.internal:5432/prod');
    expect(text).toContain('redis://***@cache:6379');
  });

  it('the checkpoint interval with checkpointing off is Long.MAX_VALUE, as Flink gives it, not a number past it', () => {
    const view = { config: { ...DEFAULT_CHECKPOINT_CONFIG, intervalMs: undefined }, stateBackend: 'heap' } as never;
    const text = jsonText(checkpointConfigJson(view));
    expect(text).toContain('"interval":9223372036854775807,');
    expect(text).not.toContain('9223372036854776000');
  });
});
