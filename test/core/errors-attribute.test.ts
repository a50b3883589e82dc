/**
 * attribute() wraps what user code threw as the operator's USER_CODE failure (restarted by the
 * restart strategy), but passes through errors that say the snapshot does not fit the job:
 * those end the job at once (cluster/decisions/recovery.ts), and wrapped they were restarted for
 * ever (the Kinesis audit: a sink or source throwing RESTORE from its restore path).
 */
import { describe, expect, it } from 'vitest';
import { attribute, errorCode, UserCodeError, WeirError } from '../../src/core/errors.ts';

const where = { operatorName: 'Sink', operatorId: 'op-3', uid: 'out', subtaskIndex: 0, parallelism: 1 };

describe('attribute', () => {
  it('wraps an error from user code as USER_CODE, naming the operator, phase and record', () => {
    const e = attribute(new TypeError('boom'), where, 'invoke', { id: 1 });
    expect(e).toBeInstanceOf(UserCodeError);
    expect(errorCode(e)).toBe('USER_CODE');
    expect(e.message).toMatch(/operator "Sink" \(uid "out", subtask 1\/1\) failed in invoke on record .*boom/);
  });

  for (const code of ['RESTORE', 'STATE_RESTORE'] as const) {
    it(`passes a ${code} error through as it is, so that recovery ends the job`, () => {
      const original = new WeirError(code, 'the checkpoint holds a local file\'s committable');
      expect(attribute(original, where, 'commit')).toBe(original);
    });
  }
});
