/**
 * The channel bound of an execution plan: counted per edge from the partitioning (forward and
 * global: one per producer; rescale: the larger side; every other kind: producers x consumers),
 * the count always equal to the channels the plan would build, and a plan over the bound
 * refused before a single channel is made, naming the widest edge.
 */
import { describe, expect, it } from 'vitest';
import { StreamExecutionEnvironment } from '../../src/api/environment.ts';
import { checkChannelCount, planExecution } from '../../src/graph/execution-plan.ts';
import { buildJobGraph } from '../../src/graph/job-graph.ts';

/** source(p1) -> <partition> -> map(p2) -> keyBy -> reduce(p3). */
function graph(p1: number, p2: number, p3: number, partition: 'rebalance' | 'rescale' | 'forward' | 'broadcast') {
  const env = new StreamExecutionEnvironment({ defaultParallelism: 1 });
  const s = env.fromGenerator((i) => i, { count: 10 }).setParallelism(p1);
  const parted = partition === 'rebalance' ? s.rebalance() : partition === 'rescale' ? s.rescale() : partition === 'broadcast' ? s.broadcast() : s.forward();
  parted.map((x: number) => x).setParallelism(p2).keyBy((x) => x % 3).reduce((a, b) => a + b).setParallelism(p3).print();
  return buildJobGraph(env);
}

describe('execution plan channel bound', () => {
  const shapes: [number, number, number, 'rebalance' | 'rescale' | 'forward' | 'broadcast'][] = [
    [3, 5, 2, 'rebalance'], [5, 3, 4, 'rescale'], [3, 7, 1, 'rescale'], [4, 4, 4, 'forward'], [2, 6, 3, 'broadcast'], [1, 1, 1, 'rebalance'],
  ];
  for (const [p1, p2, p3, kind] of shapes) {
    it(`counts exactly the channels the plan builds: ${kind} ${p1} -> ${p2}, keyBy -> ${p3}`, () => {
      const g = graph(p1, p2, p3, kind);
      const built = planExecution(g, 2).channels.length;
      // At the bound it passes; one below, it is refused.
      expect(() => checkChannelCount(g, built)).not.toThrow();
      expect(() => checkChannelCount(g, built - 1)).toThrow(`the job needs ${built} channels between subtasks, more than the ${built - 1} allowed (--max-channels)`);
      expect(planExecution(g, 2, built).channels).toHaveLength(built);
    });
  }

  it('names the widest edge: keyBy at 1000 x 1000 is a million channels (and print at p=1 a thousand more), refused before any is built', () => {
    const g = graph(1000, 1000, 1000, 'forward');
    expect(() => planExecution(g, 2, 65536)).toThrow(
      'the job needs 1001000 channels between subtasks, more than the 65536 allowed (--max-channels); the hash edge from "generator -> Map" (parallelism 1000) to "Reduce" (parallelism 1000) alone has 1000000: lower the parallelism, or raise --max-channels',
    );
  });
});
