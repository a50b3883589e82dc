/**
 * Record-at-a-time transformations (map, filter, flatMap), keyBy with every kind of key,
 * rolling reduce and aggregate, union, collection sources and chaining settings.
 */
import { describe, expect, it } from 'vitest';
import { OutputTag, ReducingStateDescriptor, WatermarkStrategy, type AggregateFunction, type Collector, type KeyedContext, type StreamExecutionEnvironment } from '../../src/index.ts';
import { runInline, sorted } from '../helpers/run.ts';
import { byNumber, failureOf, groupBy } from './util.ts';

const range = (n: number, from = 0): number[] => Array.from({ length: n }, (_, i) => from + i);

describe('map, filter, flatMap', () => {
  it('map transforms every record, in order on one subtask', async () => {
    const r = await runInline((env) => {
      env.fromCollection(range(5000)).map((x) => ({ x, sq: x * x })).collect();
    });
    expect(r.collected()).toEqual(range(5000).map((x) => ({ x, sq: x * x })));
  });

  it('filter keeps exactly the records the predicate accepts, including none and all', async () => {
    const r = await runInline((env) => {
      const s = env.fromCollection(range(3000));
      s.filter((x) => x % 7 === 3).collect('some');
      s.filter(() => false).collect('none');
      s.filter(() => true).collect('all');
    });
    expect(r.collected('some')).toEqual(range(3000).filter((x) => x % 7 === 3));
    expect(r.collected('none')).toEqual([]);
    expect(r.collected('all')).toEqual(range(3000));
  });

  it('flatMap emits through the collector: zero, one or many per record', async () => {
    const r = await runInline((env) => {
      env
        .fromElements(0, 1, 2, 3)
        .flatMap((n: number, out: Collector<string>) => {
          for (let i = 0; i < n; i++) out.collect(`${n}.${i}`);
        })
        .collect();
    });
    expect(r.collected()).toEqual(['1.0', '2.0', '2.1', '3.0', '3.1', '3.2']);
  });

  it('flatMap may return an iterable instead: arrays, generators, and nothing', async () => {
    const r = await runInline((env) => {
      const s = env.fromElements('a b', '', 'c d e');
      s.flatMap((line: string) => (line === '' ? [] : line.split(' '))).collect('array');
      s.flatMap(function* (line: string) {
        for (const ch of line) if (ch !== ' ') yield ch.toUpperCase();
      }).collect('generator');
      // Returning undefined (no collector use) emits nothing.
      s.flatMap((_line: string) => undefined).collect('nothing');
    });
    expect(r.collected('array')).toEqual(['a', 'b', 'c', 'd', 'e']);
    expect(r.collected('generator')).toEqual(['A', 'B', 'C', 'D', 'E']);
    expect(r.collected('nothing')).toEqual([]);
  });

  it('flatMap can mix the collector and a returned iterable in one call', async () => {
    const r = await runInline((env) => {
      env
        .fromElements(1, 2)
        .flatMap((n: number, out: Collector<number>) => {
          out.collect(-n);
          return [n * 10, n * 100];
        })
        .collect();
    });
    expect(r.collected()).toEqual([-1, 10, 100, -2, 20, 200]);
  });

  it('chains of transformations compose (map -> filter -> flatMap -> map) across 1000s of records', async () => {
    const r = await runInline((env) => {
      env
        .fromGenerator((i) => i, { count: 10_000 })
        .map((x) => x + 1)
        .filter((x) => x % 2 === 0)
        .flatMap((x: number) => [x, -x])
        .map((x) => x * 3)
        .collect();
    }, { parallelism: 3 });
    const want = range(10_000).map((x) => x + 1).filter((x) => x % 2 === 0).flatMap((x) => [x, -x]).map((x) => x * 3);
    expect(r.collected<number>().sort(byNumber)).toEqual(want.sort(byNumber));
  });

  it('the API rejects non-functions with a message naming the call', async () => {
    await expect(runInline((env) => void env.fromElements(1).map(42 as never))).rejects.toThrow(/map needs a function, got number/);
    await expect(runInline((env) => void env.fromElements(1).filter(null as never))).rejects.toThrow(/filter needs a function, got null/);
    await expect(runInline((env) => void env.fromElements(1).flatMap('x' as never))).rejects.toThrow(/flatMap needs a function, got string/);
    await expect(runInline((env) => void env.fromElements(1).keyBy(undefined as never))).rejects.toThrow(/keyBy needs a function, got undefined/);
  });
});

describe('keyBy', () => {
  it('string keys: every record of a key meets the same state, over 4 subtasks', async () => {
    const words = range(4000).map((i) => `w${(i * 7919) % 37}`);
    const r = await runInline((env) => {
      env
        .fromCollection(words)
        .keyBy((w) => w)
        .reduce((a, b) => a + '|' + b.length)
        .map((s) => ({ key: s.split('|')[0]!, n: s.split('|').length }))
        .collect();
    }, { parallelism: 4 });
    const out = r.collected<{ key: string; n: number }>();
    expect(out).toHaveLength(4000);
    const want = new Map<string, number>();
    for (const w of words) want.set(w, (want.get(w) ?? 0) + 1);
    const got = new Map<string, number>();
    for (const { key, n } of out) got.set(key, Math.max(got.get(key) ?? 0, n));
    expect(got).toEqual(want);
    // Per key the running counts are exactly 1, 2, ..., n in arrival order.
    for (const [key, items] of groupBy(out, (o) => o.key)) expect(items.map((o) => o.n), key).toEqual(range(want.get(key)!, 1));
  });

  it('number keys: 1 and 1.0 are the same key, "1" (a string) is a different one', async () => {
    const r = await runInline((env) => {
      env
        .fromCollection<{ k: number | string; v: number }>([
          { k: 1, v: 1 }, { k: 1.0, v: 2 }, { k: '1', v: 4 }, { k: 2, v: 8 }, { k: -0.5, v: 16 }, { k: -0.5, v: 32 }, { k: '1', v: 64 },
        ])
        .keyBy((r) => r.k)
        .reduce((a, b) => ({ k: a.k, v: a.v + b.v }))
        .collect();
    }, { parallelism: 3 });
    const last = new Map<string, number>();
    for (const o of r.collected<{ k: number | string; v: number }>()) last.set(`${typeof o.k}:${o.k}`, o.v);
    expect(last).toEqual(new Map([['number:1', 3], ['string:1', 68], ['number:2', 8], ['number:-0.5', 48]]));
  });

  it('composite array keys: equal arrays are one key, order inside the array matters', async () => {
    const r = await runInline((env) => {
      env
        .fromCollection([
          { a: 'x', b: 1, v: 1 }, { a: 'x', b: 2, v: 2 }, { a: 'x', b: 1, v: 4 }, { a: '1', b: 'x' as unknown as number, v: 8 }, { a: 'x', b: 2, v: 16 },
        ])
        .keyBy((r) => [r.a, r.b])
        .reduce((x, y) => ({ ...x, v: x.v + y.v }))
        .collect();
    }, { parallelism: 2 });
    const last = new Map<string, number>();
    for (const o of r.collected<{ a: string; b: number; v: number }>()) last.set(JSON.stringify([o.a, o.b]), o.v);
    expect(last).toEqual(new Map([['["x",1]', 5], ['["x",2]', 18], ['["1","x"]', 8]]));
  });

  it('composite object keys: property order does not matter, values do; currentKey is the selector result', async () => {
    const r = await runInline((env) => {
      env
        .fromCollection([
          { key: { region: 'eu', shop: 7 }, v: 1 },
          { key: { shop: 7, region: 'eu' }, v: 2 },
          { key: { region: 'eu', shop: 8 }, v: 4 },
          { key: { region: 'us', shop: 7 }, v: 8 },
        ])
        .keyBy((r) => r.key)
        .process<{ key: unknown; n: number }>({
          processElement(v, ctx, out) {
            const s = ctx.getReducingState(new ReducingStateDescriptor<number>('sum', (a, b) => a + b));
            s.add(v.v);
            out.collect({ key: ctx.currentKey, n: s.get()! });
          },
        })
        .collect();
    }, { parallelism: 3 });
    const out = r.collected<{ key: { region: string; shop: number }; n: number }>();
    const last = new Map<string, number>();
    for (const o of out) last.set(`${o.key.region}/${o.key.shop}`, o.n);
    expect(last).toEqual(new Map([['eu/7', 3], ['eu/8', 4], ['us/7', 8]]));
  });

  it('an object key comes back from a timer with its properties sorted, as from a checkpoint, whether or not the job was restored', async () => {
    const r = await runInline((env) => {
      env
        .fromCollection([{ key: { user: 'a', region: 'eu' } }, { key: { user: 'b', region: 'us' } }])
        .keyBy((r) => r.key)
        .process<string>({
          processElement(v, ctx, out) {
            out.collect(`record ${JSON.stringify(ctx.currentKey)}`);
            ctx.timerService().registerEventTimeTimer(Number.MAX_VALUE);
          },
          onTimer(_ts, ctx, out) {
            out.collect(`timer ${JSON.stringify(ctx.getCurrentKey())}`);
          },
        })
        .collect();
    });
    expect(r.collected<string>().sort()).toEqual([
      'record {"user":"a","region":"eu"}', 'record {"user":"b","region":"us"}',
      'timer {"region":"eu","user":"a"}', 'timer {"region":"us","user":"b"}',
    ]);
  });

  it('boolean and bigint keys work as keys (currentKey keeps their type)', async () => {
    const r = await runInline((env) => {
      const sumPerKey = {
        processElement(v: number, ctx: KeyedContext<unknown>, out: Collector<[unknown, number]>) {
          const s = ctx.getReducingState(new ReducingStateDescriptor<number>('sum', (a, b) => a + b));
          s.add(v);
          out.collect([ctx.currentKey, s.get()!]);
        },
      };
      env.fromCollection(range(10)).keyBy((x) => x % 2 === 0).process(sumPerKey).collect('bool');
      env.fromCollection(range(10)).keyBy((x) => BigInt(x % 3)).process(sumPerKey).collect('bigint');
    }, { parallelism: 2 });
    const lastOf = (xs: [unknown, number][]) => new Map(xs.map(([k, v]) => [k, v]));
    expect(lastOf(r.collected('bool'))).toEqual(new Map<unknown, number>([[true, 20], [false, 25]]));
    expect(lastOf(r.collected('bigint'))).toEqual(new Map<unknown, number>([[0n, 18], [1n, 12], [2n, 15]]));
  });

  it('a key selector that returns undefined fails the job naming the operator and the record', async () => {
    const msg = await failureOf((env) => {
      env.fromElements({ id: 1 }, { name: 'no id' }).map((x) => x).name('Tagger').keyBy((r: { id?: number }) => r.id).reduce((a) => a).collect();
    });
    // The keyed operator behind the keyBy reports it (its input is where the key is taken).
    expect(msg).toContain('operator "Reduce" (subtask 1/1) failed in keyBy key selector');
    expect(msg).toContain('keyBy key selector');
    expect(msg).toContain('{"name":"no id"}');
    expect(msg).toContain('key selector returned undefined');
  });
});

describe('rolling reduce and aggregate', () => {
  it('reduce emits the running reduction per key after every record', async () => {
    const r = await runInline((env) => {
      env
        .fromElements(['a', 1], ['b', 10], ['a', 2], ['a', 3], ['b', 20])
        .keyBy((t) => t[0])
        .reduce((x, y) => [x[0], (x[1] as number) + (y[1] as number)])
        .collect();
    });
    expect(r.collected()).toEqual([['a', 1], ['b', 10], ['a', 3], ['a', 6], ['b', 30]]);
  });

  it('aggregate keeps an accumulator per key and emits getResult after every record', async () => {
    const avg: AggregateFunction<{ k: string; v: number }, { sum: number; n: number }, { k: string; avg: number }> & { last?: string } = {
      createAccumulator: () => ({ sum: 0, n: 0 }),
      add: (v, acc) => ({ sum: acc.sum + v.v, n: acc.n + 1, k: v.k } as never),
      getResult: (acc) => ({ k: (acc as unknown as { k: string }).k, avg: acc.sum / acc.n }),
    };
    const r = await runInline((env) => {
      env
        .fromElements({ k: 'x', v: 2 }, { k: 'y', v: 5 }, { k: 'x', v: 4 }, { k: 'x', v: 9 }, { k: 'y', v: 1 })
        .keyBy((r) => r.k)
        .aggregate(avg)
        .collect();
    });
    expect(r.collected()).toEqual([
      { k: 'x', avg: 2 }, { k: 'y', avg: 5 }, { k: 'x', avg: 3 }, { k: 'x', avg: 5 }, { k: 'y', avg: 3 },
    ]);
  });

  it('reduce over many keys on 4 subtasks ends with the exact sum per key', async () => {
    const r = await runInline((env) => {
      env
        .fromGenerator((i) => ({ key: i % 101, value: i }), { count: 20_000 })
        .keyBy((r) => r.key)
        .reduce((a, b) => ({ key: a.key, value: a.value + b.value }))
        .collect();
    }, { parallelism: 4 });
    const out = r.collected<{ key: number; value: number }>();
    expect(out).toHaveLength(20_000);
    const want = new Map<number, number>();
    for (let i = 0; i < 20_000; i++) want.set(i % 101, (want.get(i % 101) ?? 0) + i);
    const got = new Map<number, number>();
    for (const o of out) got.set(o.key, Math.max(got.get(o.key) ?? 0, o.value));
    expect(got).toEqual(want);
  });

  it('aggregate rejects a function object without the needed methods', async () => {
    await expect(runInline((env) => void env.fromElements(1).keyBy((x) => x).aggregate({ add: (v: number, a: number) => a + v } as never)))
      .rejects.toThrow(/aggregate needs an object with a createAccumulator\(\.\.\.\) method/);
  });

  it('a throwing reduce function fails the job naming the operator, subtask and record', async () => {
    const msg = await failureOf((env) => {
      env
        .fromElements({ k: 'a', v: 1 }, { k: 'a', v: 2 })
        .keyBy((r) => r.k)
        .reduce(() => {
          throw new Error('cannot add');
        })
        .name('Summer')
        .collect();
    });
    expect(msg).toBe('operator "Summer" (subtask 1/1) failed in reduce on record {"k":"a","v":2}: cannot add');
  });
});

describe('union', () => {
  it('unions three streams of different sources into one', async () => {
    const r = await runInline((env) => {
      const a = env.fromElements(1, 2, 3);
      const b = env.fromCollection([10, 20]);
      const c = env.fromGenerator((i) => 100 + i, { count: 4 });
      a.union(b, c).map((x) => x * 2).collect();
    }, { parallelism: 2 });
    expect(r.collected<number>().sort(byNumber)).toEqual([2, 4, 6, 20, 40, 200, 202, 204, 206]);
  });

  it('a union feeds a keyed operator: state is shared across the unioned inputs', async () => {
    const r = await runInline((env) => {
      const a = env.fromElements({ k: 'x', v: 1 }, { k: 'y', v: 2 });
      const b = env.fromElements({ k: 'x', v: 10 });
      const c = env.fromElements({ k: 'x', v: 100 }, { k: 'y', v: 200 });
      a.union(b, c).keyBy((r) => r.k).reduce((p, q) => ({ k: p.k, v: p.v + q.v })).collect();
    }, { parallelism: 3 });
    const last = new Map<string, number>();
    for (const o of r.collected<{ k: string; v: number }>()) last.set(o.k, Math.max(last.get(o.k) ?? 0, o.v));
    expect(last).toEqual(new Map([['x', 111], ['y', 202]]));
  });

  it('a stream unioned with itself delivers every record twice; a side output can join its main output', async () => {
    const tag = new OutputTag<number>('tens');
    const r = await runInline((env) => {
      const a = env.fromElements(1, 2);
      a.union(a).collect('self');
      const p = env.fromElements(3, 4).process<number>({
        processElement(v, ctx, out) {
          out.collect(v);
          ctx.output(tag, v * 10);
        },
      });
      p.union(p.getSideOutput(tag)).collect('joined');
    }, { parallelism: 2 });
    expect(r.collected<number>('self').sort(byNumber)).toEqual([1, 1, 2, 2]);
    expect(r.collected<number>('joined').sort(byNumber)).toEqual([3, 4, 30, 40]);
  });

  it('union() rejects something that is not a stream', async () => {
    await expect(runInline((env) => void env.fromElements(1).union([2] as never))).rejects.toThrow(/union\(\) takes DataStreams/);
  });
});

describe('collection sources', () => {
  it('fromElements and fromCollection emit in order, with one reader whatever the parallelism', async () => {
    const r = await runInline((env) => {
      env.fromElements('a', 'b', 'c').collect('elements');
      env.fromCollection(range(2500)).collect('collection');
      env.fromCollection([]).collect('empty');
    }, { parallelism: 4 });
    expect(r.collected('elements')).toEqual(['a', 'b', 'c']);
    expect(r.collected('collection')).toEqual(range(2500));
    expect(r.collected('empty')).toEqual([]);
    const sources = r.graph.vertices.filter((v) => v.isSource);
    expect(sources.map((v) => v.parallelism)).toEqual([1, 1, 1]);
  });

  it('fromCollection with a timestamp function stamps records (visible as ctx.timestamp)', async () => {
    const r = await runInline((env) => {
      env
        .fromCollection([5, 7], { timestamp: (v) => v * 1000 })
        .process<string>({ processElement: (v, ctx, out) => out.collect(`${v}@${ctx.timestamp}`) })
        .collect('stamped');
      env
        .fromElements(5)
        .process<string>({ processElement: (v, ctx, out) => out.collect(`${v}@${ctx.timestamp}`) })
        .collect('plain');
    });
    expect(r.collected('stamped')).toEqual(['5@5000', '7@7000']);
    expect(r.collected('plain')).toEqual(['5@undefined']);
  });

  it('a collection source cannot run with parallelism above 1, and says so', async () => {
    await expect(runInline((env) => void env.fromElements(1, 2).setParallelism(2)))
      .rejects.toThrow('source "collection" supports at most 1 reader(s), cannot set parallelism 2');
    await expect(runInline((env) => void env.fromCollection('abc' as never))).rejects.toThrow(/fromCollection needs an array/);
  });
});

describe('chaining settings', () => {
  const pipeline = (mode: 'default' | 'disable' | 'newChain' | 'envOff') => (env: StreamExecutionEnvironment) => {
    if (mode === 'envOff') env.disableOperatorChaining();
    let s = env.fromGenerator((i) => i, { count: 5000 }).map((x) => x * 3);
    if (mode === 'disable') s = s.disableChaining();
    let f = s.filter((x) => x % 2 === 1);
    if (mode === 'newChain') f = f.startNewChain();
    f.flatMap((x: number) => [x, x + 1]).keyBy((x) => x % 10).reduce((a, b) => a + b).map((x) => -x).collect();
  };

  it('disableChaining, startNewChain and disableOperatorChaining change the graph but not the results', async () => {
    const results = await Promise.all(
      (['default', 'disable', 'newChain', 'envOff'] as const).map((m) => runInline(pipeline(m), { parallelism: 2 })),
    );
    const [base, ...others] = results;
    const want = sorted(base!.collected<number>());
    expect(want).toHaveLength(5000);
    for (const r of others) expect(sorted(r.collected<number>())).toEqual(want);
    const counts = results.map((r) => r.graph.vertices.length);
    // default: [source->map->filter->flatMap], [reduce->map->collect]
    expect(counts[0]).toBe(2);
    expect(counts[1]).toBe(4); // map stands alone: source | map | filter->flatMap | reduce->...
    expect(counts[2]).toBe(3); // filter starts a new chain: source->map | filter->flatMap
    expect(counts[3]).toBe(7); // every operator its own vertex
  });
});

describe('record-at-a-time chains', () => {
  // Chained map, filter, flatMap, process and sink functions pass records one by one, without
  // batch arrays in between; these pin down what must not change with that.

  it('an exception in a chained operator names that operator and its record, not the one upstream', async () => {
    const throwAt = (bad: number, message: string) => (x: number): number => {
      if (x === bad) throw new Error(message);
      return x;
    };
    const inFilter = await failureOf((env) => {
      env
        .fromGenerator((i) => i, { count: 100 })
        .map((x) => x * 2).name('Double')
        .filter((x) => throwAt(14, 'fourteen')(x) >= 0).name('Check')
        .collect();
    });
    expect(inFilter).toBe('operator "Check" (subtask 1/1) failed in filter on record 14: fourteen');

    const belowProcess = await failureOf((env) => {
      env
        .fromGenerator((i) => i, { count: 100 })
        .process({ processElement: (x: number, _ctx, out: Collector<number>) => out.collect(x + 1000) }).name('Emit')
        .map(throwAt(1042, 'boom')).name('Boom')
        .collect();
    });
    expect(belowProcess).toBe('operator "Boom" (subtask 1/1) failed in map on record 1042: boom');
  });

  it('keeps record order, timestamps and per-operator record counts through a chain of every kind', async () => {
    const late = new OutputTag<number>('odd');
    const r = await runInline((env) => {
      const main = env
        .fromGenerator((i) => i, { count: 5000 })
        .assignTimestampsAndWatermarks(WatermarkStrategy.forMonotonousTimestamps<number>().withTimestampAssigner((x) => 10 * x))
        .map((x) => x + 1)
        .filter((x) => x % 3 !== 0)
        .flatMap((x: number, out: Collector<number>) => {
          out.collect(x);
          if (x % 5 === 0) out.collect(-x);
        })
        .process({
          processElement(x: number, ctx, out: Collector<[number, number | undefined]>) {
            if (x % 2 !== 0) ctx.output(late, x);
            out.collect([x, ctx.timestamp]);
          },
        });
      main.collect('main');
      main.getSideOutput(late).collect('odd');
    });
    const want: [number, number][] = [];
    for (let i = 0; i < 5000; i++) {
      const x = i + 1;
      if (x % 3 === 0) continue;
      want.push([x, 10 * i]);
      if (x % 5 === 0) want.push([-x, 10 * i]);
    }
    expect(r.collected('main')).toEqual(want);
    expect(r.collected('odd')).toEqual(want.map(([x]) => x).filter((x) => x % 2 !== 0));
    expect(r.progress.recordsIn).toBe(5000);
    expect(r.progress.recordsOut).toBe(want.length + want.filter(([x]) => x % 2 !== 0).length);
  });
});
