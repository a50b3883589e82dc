/** "Did you mean": typos are close, unrelated words are not. */
import { describe, expect, it } from 'vitest';
import { editDistance, suggest } from '../../../src/core/options/suggest.ts';

describe('editDistance', () => {
  it('counts insertions, deletions, substitutions and swaps of neighbours as one edit each', () => {
    expect(editDistance('interval', 'interval')).toBe(0);
    expect(editDistance('intervall', 'interval')).toBe(1);
    expect(editDistance('interal', 'interval')).toBe(1);
    expect(editDistance('intervel', 'interval')).toBe(1);
    expect(editDistance('inetrval', 'interval')).toBe(1);
    expect(editDistance('', 'abc')).toBe(3);
  });
});

describe('suggest', () => {
  const flags = ['checkpoint-interval', 'checkpoint-dir', 'from', 'json'].map((f) => ({ name: f, offer: `--${f}` }));
  it('offers the nearest name within a third of the length', () => {
    expect(suggest('checkpoint-intervall', flags)).toBe('--checkpoint-interval');
    expect(suggest('CHECKPOINT-DIR', flags)).toBe('--checkpoint-dir');
    expect(suggest('jsn', flags)).toBe('--json');
  });
  it('offers nothing for a word that is no typo of any', () => {
    expect(suggest('fast', flags)).toBeUndefined();
    expect(suggest('state.backend', [{ name: 'state.checkpoints.dir', offer: 'x' }])).toBeUndefined();
  });
  it('the offer may differ from the compared name (a flag name offers its key)', () => {
    expect(suggest('checkpoint-interval', [{ name: 'checkpoint-interval', offer: 'execution.checkpointing.interval' }])).toBe('execution.checkpointing.interval');
  });
});
