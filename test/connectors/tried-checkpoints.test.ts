/** The committers' memory of what they tried: per writer subtask, bounded, same answers for commits in checkpoint order. */
import { describe, expect, it } from 'vitest';
import { TriedCheckpoints } from '../../src/connectors/common/tried-checkpoints.ts';

describe('TriedCheckpoints', () => {
  it('a checkpoint tried again is tried before; a new one is not; an older one after a newer one is; subtasks apart', () => {
    const t = new TriedCheckpoints();
    expect(t.tryOnce(0, 1)).toBe(false);
    expect(t.tryOnce(0, 1)).toBe(true); // a retry after a lost answer
    expect(t.tryOnce(1, 1)).toBe(false); // another writer's checkpoint 1
    expect(t.tryOnce(0, 2)).toBe(false);
    expect(t.tryOnce(0, 1)).toBe(true);
    for (let chk = 3; chk < 100_000; chk++) expect(t.tryOnce(0, chk)).toBe(false);
    expect((t as unknown as { highest: Map<number, number> }).highest.size).toBe(2); // not one entry per checkpoint
  });
});
