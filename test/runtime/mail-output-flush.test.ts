/**
 * What a processing-time timer or a processing-time window emits reaches the next task while
 * the input stays quiet. Operators' output batches were flushed only after input, so before a
 * network edge (a keyBy or rebalance after the timer) the results waited for the next record,
 * without limit (found by a read-only audit; both cases failed before).
 */
import { describe, expect, it } from 'vitest';
import { defineJob, runJob, TumblingProcessingTimeWindows, type Source, type SourceSplit } from '../../src/index.ts';
import type { JobControl } from '../../src/cluster/job-control.ts';

/** Emits a, b, c once (from split s0), then nothing, never ending: an unbounded source gone quiet. */
const quiet: Source<{ k: string }, SourceSplit> = {
  name: 'quiet',
  bounded: false,
  planSplits: (p: number) => Array.from({ length: p }, (_, i) => ({ id: `s${i}` })),
  createReader: () => {
    const splits: SourceSplit[] = [];
    let done = false;
    return {
      addSplits: (s: SourceSplit[]) => void splits.push(...s),
      poll: (out: { collect(v: { k: string }): void }) => {
        if (!done && splits.some((s) => s.id === 's0')) {
          done = true;
          for (const k of ['a', 'b', 'c']) out.collect({ k });
        }
        return 'wait' as const;
      },
      snapshotSplits: () => splits,
    };
  },
} as never;

/** Runs `build`'s job until its sink saw 3 values or 10 s passed, then cancels it; what the sink saw. */
async function firstThree(build: (seen: string[]) => ReturnType<typeof defineJob>): Promise<string[]> {
  const seen: string[] = [];
  let control: JobControl | undefined;
  const result = runJob(build(seen), {
    workers: 1, parallelism: 1, stdout: () => {}, log: () => {},
    services: [{ start: async (c) => { control = c; }, stop: async () => {} }],
  });
  for (let i = 0; i < 1000 && seen.length < 3; i++) await new Promise((r) => setTimeout(r, 10));
  control?.cancel();
  await result;
  return seen.sort();
}

describe('output of mail (timers) with quiet input', () => {
  it('a processing-time timer\'s output crosses a rebalance', async () => {
    const seen = await firstThree((seen) => defineJob((env) => {
      env.setBufferTimeout(10);
      env.fromSource(quiet)
        .keyBy((x) => x.k)
        .process<string>({
          processElement(_x, ctx) {
            ctx.timerService.registerProcessingTimeTimer(ctx.timerService.currentProcessingTime() + 100);
          },
          onTimer(_t, ctx, out) {
            out.collect(ctx.currentKey);
          },
        })
        .rebalance()
        .addSink((k) => void seen.push(k));
    }));
    expect(seen).toEqual(['a', 'b', 'c']);
  });

  it('a processing-time window\'s results cross a keyBy', async () => {
    const seen = await firstThree((seen) => defineJob((env) => {
      env.fromSource(quiet)
        .keyBy((x) => x.k)
        .window(TumblingProcessingTimeWindows.of(200))
        .reduce((a) => a)
        .keyBy((x) => x.k)
        .addSink((x) => void seen.push(x.k));
    }));
    expect(seen).toEqual(['a', 'b', 'c']);
  });
});
