/**
 * Partitioners (rebalance, rescale, broadcast, forward, global, keyBy), per-operator
 * parallelism, uid/name, and max parallelism.
 */
import { describe, expect, it } from 'vitest';
import { createHash } from 'node:crypto';
import {
  ValueStateDescriptor, type Collector, type DataStream, type ProcessContext, type ProcessFunction, type RuntimeContext,
} from '../../src/index.ts';
import { runInline } from '../helpers/run.ts';
import { byNumber, failureOf, groupBy } from './util.ts';

const range = (n: number, from = 0): number[] => Array.from({ length: n }, (_, i) => from + i);

interface Landed<T> {
  sub: number;
  of: number;
  v: T;
}

/** Tags every record with the subtask that processed it. */
class WhereAmI<T> implements ProcessFunction<T, Landed<T>> {
  sub = -1;
  of = -1;
  open(ctx: RuntimeContext) {
    this.sub = ctx.taskInfo.subtaskIndex;
    this.of = ctx.taskInfo.parallelism;
  }
  processElement(v: T, _ctx: ProcessContext, out: Collector<Landed<T>>) {
    out.collect({ sub: this.sub, of: this.of, v });
  }
}

function landing<T>(s: DataStream<T>, p: number): DataStream<Landed<T>> {
  return s.process(new WhereAmI<T>()).setParallelism(p);
}

/** Values received per subtask index. */
function bySubtask<T>(xs: Landed<T>[]): Map<number, T[]> {
  const m = groupBy(xs, (x) => x.sub);
  return new Map([...m].sort((a, b) => a[0] - b[0]).map(([k, v]) => [k, v.map((x) => x.v)]));
}

describe('partitioners', () => {
  it('rebalance spreads full batches round robin: 8 batches over 4 subtasks, 2 each', async () => {
    // Ample credits, so no channel is ever skipped for lack of room: the split is exact.
    const r = await runInline((env) => {
      landing(env.fromCollection(range(8 * 1024)).rebalance(), 4).collect();
    }, { credits: 64 });
    const subs = bySubtask(r.collected<Landed<number>>());
    expect([...subs.keys()]).toEqual([0, 1, 2, 3]);
    for (const vs of subs.values()) expect(vs).toHaveLength(2048);
    expect([...subs.values()].flat().sort(byNumber)).toEqual(range(8 * 1024));
  });

  it('rebalance from several producers: each starts its round robin at its own channel (Flink\'s RebalancePartitioner), so small inputs spread too', async () => {
    // 4 producers of 40 records each (less than a batch): one batch per producer. Before, every
    // producer started at channel 0 and subtask 0 got all 160 records.
    const r = await runInline((env) => {
      landing(env.fromGenerator((i) => i, { count: 160 }).setParallelism(4).rebalance(), 4).collect();
    }, { credits: 64 });
    const subs = bySubtask(r.collected<Landed<number>>());
    expect([...subs.keys()]).toEqual([0, 1, 2, 3]);
    for (const vs of subs.values()) expect(vs).toHaveLength(40);
  });

  it('a parallelism change without a partitioner rebalances (every subtask gets data)', async () => {
    const r = await runInline((env) => {
      landing(env.fromCollection(range(4 * 1024)), 2).collect();
    }, { credits: 64 });
    const subs = bySubtask(r.collected<Landed<number>>());
    expect([...subs.keys()]).toEqual([0, 1]);
    expect(subs.get(0)).toHaveLength(2048);
    expect(subs.get(1)).toHaveLength(2048);
  });

  it('rescale 2 -> 4 is pointwise: producer 0 feeds subtasks 0,1 and producer 1 feeds 2,3', async () => {
    const r = await runInline((env) => {
      // A 2-lane generator: subtask 0 makes the even numbers, subtask 1 the odd ones.
      landing(env.fromGenerator((i) => i, { count: 8000 }).setParallelism(2).rescale(), 4).collect();
    }, { credits: 64 });
    const subs = bySubtask(r.collected<Landed<number>>());
    expect([...subs.keys()]).toEqual([0, 1, 2, 3]);
    expect([...subs.get(0)!, ...subs.get(1)!].sort(byNumber)).toEqual(range(4000).map((i) => 2 * i));
    expect([...subs.get(2)!, ...subs.get(3)!].sort(byNumber)).toEqual(range(4000).map((i) => 2 * i + 1));
  });

  it('rescale 4 -> 2: producers 0,1 feed subtask 0 and producers 2,3 feed subtask 1', async () => {
    const r = await runInline((env) => {
      landing(env.fromGenerator((i) => i, { count: 4000 }).setParallelism(4).rescale(), 2).collect();
    });
    const subs = bySubtask(r.collected<Landed<number>>());
    expect(subs.get(0)!.sort(byNumber)).toEqual(range(4000).filter((i) => i % 4 < 2));
    expect(subs.get(1)!.sort(byNumber)).toEqual(range(4000).filter((i) => i % 4 >= 2));
  });

  it('broadcast gives every record to every subtask', async () => {
    const r = await runInline((env) => {
      landing(env.fromCollection(range(1500)).broadcast(), 3).collect();
    });
    const subs = bySubtask(r.collected<Landed<number>>());
    expect([...subs.keys()]).toEqual([0, 1, 2]);
    for (const vs of subs.values()) expect(vs).toEqual(range(1500));
  });

  it('forward keeps subtask i to subtask i (and chains: same result with chaining disabled)', async () => {
    for (const chain of [true, false]) {
      const r = await runInline((env) => {
        let s = env.fromGenerator((i) => i, { count: 3000 }).setParallelism(3);
        if (!chain) s = s.disableChaining();
        landing(s.forward(), 3).collect();
      });
      const subs = bySubtask(r.collected<Landed<number>>());
      for (const [sub, vs] of subs) expect(vs.sort(byNumber), `chain=${chain}`).toEqual(range(1000).map((i) => 3 * i + sub));
      expect(r.graph.vertices).toHaveLength(chain ? 2 : 3);
    }
  });

  it('forward between different parallelisms is rejected with a message naming both operators', async () => {
    await expect(runInline((env) => {
      env.fromGenerator((i) => i, { count: 10 }).setParallelism(2).forward().map((x) => x).name('Narrow').setParallelism(3).collect();
    })).rejects.toThrow('forward() from "generator" (parallelism 2) to "Narrow" (parallelism 3) needs equal parallelism; use rebalance() or rescale()');
  });

  it('global sends everything to subtask 0', async () => {
    const r = await runInline((env) => {
      landing(env.fromGenerator((i) => i, { count: 3000 }).setParallelism(3).global(), 3).collect();
    });
    const subs = bySubtask(r.collected<Landed<number>>());
    expect([...subs.keys()]).toEqual([0]);
    expect(subs.get(0)!.sort(byNumber)).toEqual(range(3000));
  });

  it('keyBy sends every record of a key to one subtask, and uses them all', async () => {
    const r = await runInline((env) => {
      env
        .fromGenerator((i) => `key${i % 200}`, { count: 4000 })
        .keyBy((k) => k)
        .process<{ k: string; sub: number }>({
          processElement: (k, ctx, out) => out.collect({ k, sub: ctx.taskInfo.subtaskIndex }),
        })
        .collect();
    }, { parallelism: 4 });
    const out = r.collected<{ k: string; sub: number }>();
    expect(out).toHaveLength(4000);
    const subsPerKey = new Map<string, Set<number>>();
    for (const { k, sub } of out) subsPerKey.set(k, (subsPerKey.get(k) ?? new Set()).add(sub));
    expect(subsPerKey.size).toBe(200);
    for (const [k, subs] of subsPerKey) expect(subs.size, k).toBe(1);
    expect(new Set(out.map((o) => o.sub))).toEqual(new Set([0, 1, 2, 3]));
  });

  it('partitioning a union or a partitioned stream applies the closest partitioner', async () => {
    const r = await runInline((env) => {
      const a = env.fromCollection(range(100));
      const b = env.fromCollection(range(100, 1000));
      landing(a.union(b).rebalance().global(), 3).collect();
    });
    expect([...bySubtask(r.collected<Landed<number>>()).keys()]).toEqual([0]);
    expect(r.collected()).toHaveLength(200);
  });
});

describe('parallelism, uid and name', () => {
  it('setParallelism is per operator; taskInfo and the graph report it', async () => {
    const r = await runInline((env) => {
      const s = env.fromGenerator((i) => i, { count: 20_000 }).setParallelism(2).name('gen');
      landing(s.map((x) => x * 2).name('doubled').setParallelism(3), 5).name('where').collect();
    }, { parallelism: 4, credits: 64 });
    const out = r.collected<Landed<number>>();
    expect(out.map((o) => o.v).sort(byNumber)).toEqual(range(20_000).map((x) => x * 2));
    expect(new Set(out.map((o) => o.of))).toEqual(new Set([5]));
    expect(new Set(out.map((o) => o.sub))).toEqual(new Set([0, 1, 2, 3, 4]));
    const ps = Object.fromEntries(r.graph.vertices.map((v) => [v.name, v.parallelism]));
    expect(ps).toEqual({ gen: 2, doubled: 3, where: 5, 'Collect collect': 4 });
  });

  it('the job default parallelism comes from the run options; env.setParallelism overrides it', async () => {
    const r1 = await runInline((env) => void landing(env.fromGenerator((i) => i, { count: 10 }), 1).collect(), { parallelism: 3 });
    expect(r1.graph.vertices.map((v) => v.parallelism)).toEqual([3, 1, 3]);
    const r2 = await runInline((env) => {
      env.setParallelism(2);
      landing(env.fromGenerator((i) => i, { count: 10 }), 1).collect();
    }, { parallelism: 3 });
    expect(r2.graph.vertices.map((v) => v.parallelism)).toEqual([2, 1, 2]);
    await expect(runInline((env) => void env.setParallelism(0))).rejects.toThrow('setParallelism: expected a positive integer, got 0');
    await expect(runInline((env) => void env.fromElements(1).map((x) => x).setParallelism(1.5))).rejects.toThrow('setParallelism: expected a positive integer, got 1.5');
  });

  it('uid fixes the operator id (a hash of the uid, whatever the position); name is what messages use', async () => {
    const idOf = (uid: string) => createHash('sha256').update(`uid:${uid}`).digest('hex').slice(0, 32);
    const r1 = await runInline((env) => {
      env.fromElements(1).map((x) => x).uid('the-map').name('Mapper').disableChaining().collect();
    });
    const r2 = await runInline((env) => {
      env.fromElements(1, 2).filter(() => true).map((x) => x + 1).uid('the-map').name('Other name').disableChaining().collect();
    });
    const op = (r: typeof r1, name: string) => r.graph.vertices.flatMap((v) => v.operators).find((o) => o.node.name === name)!.node;
    expect(op(r1, 'Mapper').id).toBe(idOf('the-map'));
    expect(op(r2, 'Other name').id).toBe(idOf('the-map'));
    // Without uid the id is positional: the same job built twice gets the same ids.
    const build = () => runInline((env) => void env.fromElements(1).map((x) => x).collect());
    const [a, b] = await Promise.all([build(), build()]);
    expect(a.graph.fingerprint).toBe(b.graph.fingerprint);
  });

  it('uid and name are validated, apply to operators only, and uids must be unique', async () => {
    await expect(runInline((env) => void env.fromElements(1).map((x) => x).uid(''))).rejects.toThrow('uid() needs a non-empty string');
    await expect(runInline((env) => void env.fromElements(1).map((x) => x).name(''))).rejects.toThrow('name() needs a non-empty string');
    await expect(runInline((env) => void env.fromElements(1).rebalance().uid('x')))
      .rejects.toThrow('uid() applies to an operator; this stream is a partition (call it on the operator that produced the stream)');
    await expect(runInline((env) => {
      env.fromElements(1).map((x) => x).uid('dup').name('first').collect();
      env.fromElements(2).map((x) => x).uid('dup').name('second').collect();
    })).rejects.toThrow('uid "dup" is used by two operators ("first" and "second"); uids must be unique');
  });

  it('uid and name work on sinks', async () => {
    const r = await runInline((env) => void env.fromElements(1).collect('x').uid('sink-x').name('My sink').disableChaining());
    const names = r.graph.vertices.map((v) => v.name);
    expect(names).toContain('My sink');
    expect(r.collected('x')).toEqual([1]);
  });
});

describe('max parallelism', () => {
  it('env.setMaxParallelism sets the number of key groups for keyed operators', async () => {
    const r = await runInline((env) => {
      env.setMaxParallelism(4);
      env
        .fromGenerator((i) => i % 50, { count: 1000 })
        .keyBy((k) => k)
        .process<{ k: number; max: number; sub: number; n: number }>({
          processElement(k, ctx, out) {
            const s = ctx.getState(new ValueStateDescriptor<number>('n', { defaultValue: 0 }));
            s.update(s.value()! + 1);
            out.collect({ k, max: ctx.taskInfo.maxParallelism, sub: ctx.taskInfo.subtaskIndex, n: s.value()! });
          },
        })
        .collect();
    }, { parallelism: 4 });
    const out = r.collected<{ k: number; max: number; sub: number; n: number }>();
    expect(new Set(out.map((o) => o.max))).toEqual(new Set([4]));
    expect(r.graph.vertices.every((v) => v.maxParallelism === 4)).toBe(true);
    const finals = new Map<number, number>();
    for (const o of out) finals.set(o.k, Math.max(finals.get(o.k) ?? 0, o.n));
    expect([...finals.values()].every((n) => n === 20)).toBe(true);
    expect(finals.size).toBe(50);
  });

  it('the default max parallelism follows Flink: 128 for small jobs', async () => {
    const r = await runInline((env) => void env.fromElements(1).keyBy((x) => x).reduce((a) => a).collect(), { parallelism: 2 });
    expect(r.graph.vertices.map((v) => v.maxParallelism)).toEqual([128, 128]);
  });

  it('parallelism above the max parallelism is a clear error naming the operator', async () => {
    await expect(runInline((env) => {
      env.setMaxParallelism(8);
      env.fromGenerator((i) => i, { count: 10 }).setParallelism(1).keyBy((x) => x).reduce((a) => a).name('Sums').setParallelism(16).collect();
    })).rejects.toThrow('Vertex "Sums"\'s parallelism (16) is higher than the max parallelism (8). Please lower the parallelism or increase the max parallelism (setMaxParallelism).');
    await expect(runInline((env) => {
      env.fromElements(1).map((x) => x).name('Small').setMaxParallelism(2).setParallelism(3).collect();
    })).rejects.toThrow('Vertex "Small"\'s parallelism (3) is higher than the max parallelism (2). Please lower the parallelism or increase the max parallelism (setMaxParallelism).');
  });

  it('setMaxParallelism rejects values outside [1, 32768]', async () => {
    await expect(runInline((env) => void env.setMaxParallelism(0))).rejects.toThrow('setMaxParallelism: max parallelism must be an integer in [1, 32768], got 0');
    await expect(runInline((env) => void env.fromElements(1).map((x) => x).setMaxParallelism(40_000)))
      .rejects.toThrow('setMaxParallelism: max parallelism must be an integer in [1, 32768], got 40000');
  });

  it('an operator max parallelism overrides the job one, per operator', async () => {
    const r = await runInline((env) => {
      env.setMaxParallelism(16);
      env.fromElements(1).keyBy((x) => x).reduce((a) => a).setMaxParallelism(32).name('R').collect();
    });
    const byName = Object.fromEntries(r.graph.vertices.map((v) => [v.name, v.maxParallelism]));
    expect(byName).toEqual({ collection: 16, 'R -> Collect collect': 32 });
  });

  it('a failure in a subtask of a parallel operator names that subtask', async () => {
    const msg = await failureOf((env) => {
      env.fromGenerator((i) => i, { count: 300 }).setParallelism(3).map((i) => {
        if (i === 100) throw new Error('one hundred');
        return i;
      }).name('Picky').collect();
    }, { parallelism: 3 });
    // Record 100 comes from lane 100 % 3 = 1, i.e. subtask 2 of 3 (forward, chained).
    expect(msg).toBe('operator "Picky" (subtask 2/3) failed in map on record 100: one hundred');
  });
});

describe('job settings', () => {
  it('setJobName names the job; buffer timeout and watermark interval take durations', async () => {
    const r = await runInline((env) => {
      env.setJobName('nightly totals').setBufferTimeout('5ms').setAutoWatermarkInterval('1 s');
      expect(env.bufferTimeout).toBe(5);
      expect(env.autoWatermarkInterval).toBe(1000);
      env.fromElements(1).collect();
    });
    expect(r.graph.jobName).toBe('nightly totals');
    expect(r.graph.bufferTimeout).toBe(5);
    await expect(runInline((env) => void env.setJobName(' '))).rejects.toThrow('setJobName: expected a non-empty string');
    await expect(runInline((env) => void env.setBufferTimeout('soon'))).rejects.toThrow('setBufferTimeout: cannot read "soon" as a duration; use e.g. 500ms, 5s, 1min, 2h');
    await expect(runInline((env) => void env.setAutoWatermarkInterval('5 weeks'))).rejects.toThrow('setAutoWatermarkInterval: unknown time unit "weeks" in "5 weeks"; use ms, s, min, h or d');
    await expect(runInline((env) => void env.setBufferTimeout(-1))).rejects.toThrow('setBufferTimeout: expected a non-negative duration, got -1');
  });
});
