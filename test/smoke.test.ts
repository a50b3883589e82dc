import { describe, expect, it } from 'vitest';
import { runInline } from './helpers/run.ts';

describe('smoke', () => {
  it('maps and filters a generated stream', async () => {
    const r = await runInline((env) => {
      env.fromGenerator((i) => i, { count: 1000 }).map((x) => x * 2).filter((x) => x % 3 === 0).collect();
    });
    const got = r.collected<number>().sort((a, b) => a - b);
    const want = Array.from({ length: 1000 }, (_, i) => i * 2).filter((x) => x % 3 === 0);
    expect(got).toEqual(want);
  });
});
