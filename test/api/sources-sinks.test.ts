/**
 * The generator source (count, seed determinism across parallelism, rate limit) and the
 * sinks: print, collect, writeAsJsonLines and addSink.
 */
import { afterAll, describe, expect, it } from 'vitest';
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { OutputTag, Rng, TumblingEventTimeWindows, WatermarkStrategy, type RuntimeContext, type SinkFunction } from '../../src/index.ts';
import { runInline, sorted } from '../helpers/run.ts';
import { byNumber, failureOf, testSeed } from './util.ts';

const range = (n: number, from = 0): number[] => Array.from({ length: n }, (_, i) => from + i);

const tmp = mkdtempSync(join(tmpdir(), 'weir-sinks-'));
afterAll(() => rmSync(tmp, { recursive: true, force: true }));

describe('fromGenerator', () => {
  it('emits exactly count records, indices 0..count-1, at any parallelism', async () => {
    for (const p of [1, 3, 8]) {
      const r = await runInline((env) => void env.fromGenerator((i) => i, { count: 2500 }).collect(), { parallelism: p });
      expect(r.collected<number>().sort(byNumber), `parallelism ${p}`).toEqual(range(2500));
    }
  });

  it('count 0 ends at once; more lanes than subtasks are all read', async () => {
    const r = await runInline((env) => {
      env.fromGenerator((i) => i, { count: 0 }).collect('none');
      env.fromGenerator((i) => i, { count: 1000, lanes: 7 }).collect('lanes');
    }, { parallelism: 2 });
    expect(r.collected('none')).toEqual([]);
    expect(r.collected<number>('lanes').sort(byNumber)).toEqual(range(1000));
  });

  it('same seed, same records whatever the parallelism; another seed, other records', async () => {
    const seed = testSeed('generator determinism');
    const gen = (i: number, rng: Rng) => ({ i, a: rng.nextUint32(), b: rng.int(1000), w: rng.pick(['x', 'y', 'z']) });
    const run = (p: number, s: number) => runInline((env) => void env.fromGenerator(gen, { count: 3000, seed: s }).collect(), { parallelism: p });
    const [p1, p3, p5, other] = await Promise.all([run(1, seed), run(3, seed), run(5, seed), run(2, seed + 1)]);
    type Rec = ReturnType<typeof gen>;
    const byIndex = (r: typeof p1) => r.collected<Rec>().sort((x, y) => x.i - y.i);
    const base = byIndex(p1);
    expect(base).toHaveLength(3000);
    expect(byIndex(p3)).toEqual(base);
    expect(byIndex(p5)).toEqual(base);
    // Record i is fn(i, rng at (seed, i)): reproducible without running a job at all.
    const rng = new Rng();
    expect(base).toEqual(range(3000).map((i) => gen(i, rng.reseed(seed, i))));
    // Another seed: exactly the records of that seed (nearly all different from this seed's).
    expect(byIndex(other)).toEqual(range(3000).map((i) => gen(i, rng.reseed(seed + 1, i))));
    const differing = byIndex(other).filter((r, k) => r.a !== base[k]!.a);
    expect(differing.length).toBeGreaterThan(2900);
  });

  it('with watermarks, each lane has its own event time: a subtask reading 5 lanes makes no record late', async () => {
    // Record i has event time i; the reader interleaves its lanes a batch at a time, so lane 0
    // may be thousands of ms ahead of lane 4. One watermark over the reader would drop records of
    // the lagging lanes as late; per lane, every 1 s window of every key counts all its records.
    const count = 40_000;
    const late = new OutputTag<number>('late');
    // Punctuated (a watermark after every record), so what is late depends on the reading order
    // alone, not on when periodic emission runs.
    const punctuated = () => WatermarkStrategy.forGenerator<number>(() => ({
      onEvent(_i, ts, out) {
        out.emitWatermark(ts - 1);
      },
      onPeriodicEmit() {},
    })).withTimestampAssigner((i) => i);
    // Event time also moves during the run (lanes being read hold it back only as far as they
    // are behind): the first window fires long before the generator has produced everything.
    let generated = 0;
    let generatedAtFirstFiring: number | undefined;
    const r = await runInline((env) => {
      const windows = env
        .fromGenerator((i) => (generated++, i), { count, lanes: 5, watermarks: punctuated() })
        .keyBy((i) => i % 3)
        .window(TumblingEventTimeWindows.of(1000))
        .sideOutputLateData(late)
        .aggregate({ createAccumulator: () => 0, add: (_i: number, n: number) => n + 1, getResult: (n: number) => ((generatedAtFirstFiring ??= generated), n) });
      windows.collect('counts');
      windows.getSideOutput(late).collect('late');
    }, { parallelism: 1 });
    expect(r.collected('late')).toEqual([]);
    const counts = r.collected<number>('counts');
    expect(counts).toHaveLength(3 * (count / 1000));
    expect(counts.reduce((a, b) => a + b, 0)).toBe(count);
    expect(generatedAtFirstFiring).toBeLessThan(count / 2);
    // The same reading order with one watermark after the source: records are late.
    const after = await runInline((env) => {
      env
        .fromGenerator((i) => i, { count, lanes: 5 })
        .assignTimestampsAndWatermarks(punctuated())
        .keyBy((i) => i % 3)
        .window(TumblingEventTimeWindows.of(1000))
        .sideOutputLateData(late)
        .aggregate({ createAccumulator: () => 0, add: (_i: number, n: number) => n + 1, getResult: (n: number) => n })
        .getSideOutput(late)
        .collect('late');
    }, { parallelism: 1 });
    expect(after.collected('late').length).toBeGreaterThan(0);
  });

  it('a rate-limited generator emits its count and ends', async () => {
    const r = await runInline((env) => void env.fromGenerator((i) => i, { count: 60, ratePerSecond: 600 }).collect(), { parallelism: 2 });
    expect(r.status).toBe('FINISHED');
    expect(r.collected<number>().sort(byNumber)).toEqual(range(60));
  });

  it('rejects bad options with messages naming the option', async () => {
    await expect(runInline((env) => void env.fromGenerator((i) => i, { count: -1 })))
      .rejects.toThrow('fromGenerator: count must be a non-negative integer or omitted, got -1');
    await expect(runInline((env) => void env.fromGenerator((i) => i, { count: 5, ratePerSecond: 0 })))
      .rejects.toThrow('fromGenerator: ratePerSecond must be a positive number, got 0');
    await expect(runInline((env) => void env.fromGenerator((i) => i, { seed: 1.5 }))).rejects.toThrow('fromGenerator: seed must be an integer, got 1.5');
    await expect(runInline((env) => void env.fromGenerator((i) => i, { lanes: 0 }))).rejects.toThrow('fromGenerator: lanes must be a positive integer, got 0');
    await expect(runInline((env) => void env.fromGenerator('nope' as never))).rejects.toThrow('fromGenerator needs a function (index, rng) => record');
  });

  it('an exception in the generator function fails the job naming the source', async () => {
    const msg = await failureOf((env) => {
      env.fromGenerator((i) => {
        if (i === 5) throw new Error('cannot make 5');
        return i;
      }, { count: 10 }).collect();
    });
    expect(msg).toBe('operator "generator" (subtask 1/1) failed in source "generator": cannot make 5');
  });
});

describe('print', () => {
  it('writes one line per record: strings raw, everything else as JSON', async () => {
    let text = '';
    await runInline((env) => {
      env.fromElements<unknown>('plain text', 42, { a: [1, 'b'] }, null, true, 10n, new Map([['k', 1]])).print();
    }, { stdout: (t) => void (text += t) });
    expect(text).toBe('plain text\n42\n{"a":[1,"b"]}\nnull\ntrue\n10\n{"k":1}\n');
  });

  it('with parallelism > 1 every line is prefixed with the 1-based subtask number', async () => {
    let text = '';
    await runInline((env) => {
      // Two lanes forwarded to a parallel print: lane 0 (even) prints on subtask 1, lane 1 on 2.
      env.fromGenerator((i) => i, { count: 10 }).print();
    }, { parallelism: 2, stdout: (t) => void (text += t) });
    const lines = text.trimEnd().split('\n');
    expect(lines.sort()).toEqual(['1> 0', '1> 2', '1> 4', '1> 6', '1> 8', '2> 1', '2> 3', '2> 5', '2> 7', '2> 9']);
  });

  it('a label goes before the subtask number', async () => {
    let one = '';
    let two = '';
    await runInline((env) => void env.fromElements('x').print('out'), { stdout: (t) => void (one += t) });
    await runInline((env) => void env.fromGenerator((i) => i, { count: 2 }).print('out'), { parallelism: 2, stdout: (t) => void (two += t) });
    expect(one).toBe('out> x\n');
    expect(two.trimEnd().split('\n').sort()).toEqual(['out:1> 0', 'out:2> 1']);
  });
});

describe('collect', () => {
  it('gathers records per sink name; unknown names give an empty list', async () => {
    const r = await runInline((env) => {
      const s = env.fromElements(1, 2, 3);
      s.collect();
      s.map((x) => x * 2).collect('doubled');
    });
    expect(r.collected()).toEqual([1, 2, 3]);
    expect(r.collected('doubled')).toEqual([2, 4, 6]);
    expect(r.sinks().sort()).toEqual(['collect', 'doubled']);
    expect(r.collected('nothing here')).toEqual([]);
  });

  it('two collect sinks with one name add up; an empty name is rejected', async () => {
    const r = await runInline((env) => {
      env.fromElements(1).collect('same');
      env.fromElements(2).collect('same');
    });
    expect(r.collected<number>('same').sort(byNumber)).toEqual([1, 2]);
    await expect(runInline((env) => void env.fromElements(1).collect(''))).rejects.toThrow('collect() needs a non-empty sink name');
  });
});

describe('writeAsJsonLines', () => {
  it('writes <dir>/part-<subtask>.jsonl per subtask; reading them back gives every record', async () => {
    const dir = join(tmp, 'jsonl');
    const records = range(1000).map((i) => ({ i, s: `r${i}`, nested: { even: i % 2 === 0 } }));
    await runInline((env) => {
      env.fromGenerator((i) => records[i]!, { count: 1000 }).writeAsJsonLines(dir);
    }, { parallelism: 2 });
    expect(readdirSync(dir).sort()).toEqual(['part-0.jsonl', 'part-1.jsonl']);
    const read = (f: string) => readFileSync(join(dir, f), 'utf8').split('\n').filter((l) => l !== '').map((l) => JSON.parse(l) as { i: number });
    const p0 = read('part-0.jsonl');
    const p1 = read('part-1.jsonl');
    // Forward from the 2-lane generator: subtask 0 wrote the even records, subtask 1 the odd.
    expect(p0.every((r) => r.i % 2 === 0)).toBe(true);
    expect(p1.every((r) => r.i % 2 === 1)).toBe(true);
    expect([...p0, ...p1].sort((a, b) => a.i - b.i)).toEqual(records);
    expect(readFileSync(join(dir, 'part-0.jsonl'), 'utf8').endsWith('\n')).toBe(true);
  });

  it('Maps, Sets and bigints keep their data (as print writes them); an undefined record fails the job naming it, never a line "undefined"', async () => {
    const dir = join(tmp, 'jsonl-types');
    await runInline((env) => void env.fromElements<unknown>({ m: new Map([['a', 1]]), s: new Set([1, 2]), n: 12345678901234567890n }).writeAsJsonLines(dir));
    // Before: {"m":{},"s":{}} was lost data and the bigint failed the job without naming the sink.
    expect(readFileSync(join(dir, 'part-0.jsonl'), 'utf8')).toBe('{"m":{"a":1},"s":[1,2],"n":"12345678901234567890"}\n');
    const msg = await failureOf((env) => void env.fromElements(1, 2).map((x) => (x === 2 ? undefined : x)).writeAsJsonLines(join(tmp, 'jsonl-undefined')));
    expect(msg).toMatch(/writeAsJsonLines.*a record of undefined has no JSON form/);
  });

  it('creates missing directories; refuses to start over an earlier run\'s part files unless told to overwrite them', async () => {
    const dir = join(tmp, 'deep', 'er', 'out');
    await runInline((env) => void env.fromElements('first', 'run', 'longer').writeAsJsonLines(dir));
    // A second run into the same directory is refused before it starts: the first run's output is intact.
    await expect(runInline((env) => void env.fromElements('second').writeAsJsonLines(dir))).rejects.toThrow(
      `writeAsJsonLines: ${dir} already holds part files (part-0.jsonl); refusing to overwrite them: remove them, write to another directory, or pass { overwrite: true }`,
    );
    expect(readFileSync(join(dir, 'part-0.jsonl'), 'utf8')).toBe('"first"\n"run"\n"longer"\n');
    // Other files in the directory are no obstacle; asked to, the sink replaces the part file.
    writeFileSync(join(dir, 'notes.txt'), 'mine\n');
    await runInline((env) => void env.fromElements('second').writeAsJsonLines(dir, { overwrite: true }));
    expect(readFileSync(join(dir, 'part-0.jsonl'), 'utf8')).toBe('"second"\n');
    await expect(runInline((env) => void env.fromElements(1).writeAsJsonLines(''))).rejects.toThrow('writeAsJsonLines() needs a directory path');
  });

  it('a directory with files that are not part files is written to', async () => {
    const dir = join(tmp, 'with-notes');
    mkdirSync(dir, { recursive: true });
    writeFileSync(join(dir, 'README'), 'output below\n');
    await runInline((env) => void env.fromElements('x').writeAsJsonLines(dir));
    expect(readFileSync(join(dir, 'part-0.jsonl'), 'utf8')).toBe('"x"\n');
  });
});

describe('addSink', () => {
  it('a SinkFunction gets open, every record, finish at the end of input, then close', async () => {
    const calls: string[] = [];
    class Recorder implements SinkFunction<number> {
      sub = -1;
      open(ctx: RuntimeContext) {
        this.sub = ctx.taskInfo.subtaskIndex;
        calls.push(`open ${this.sub}`);
      }
      invoke(v: number, ctx: { timestamp: number | undefined }) {
        calls.push(`invoke ${this.sub} ${v} ${ctx.timestamp}`);
      }
      finish() {
        calls.push(`finish ${this.sub}`);
      }
      close() {
        calls.push(`close ${this.sub}`);
      }
    }
    await runInline((env) => {
      env.fromCollection([1, 2, 3], { timestamp: (v) => v * 100 }).addSink(new Recorder());
    });
    expect(calls).toEqual(['open 0', 'invoke 0 1 100', 'invoke 0 2 200', 'invoke 0 3 300', 'finish 0', 'close 0']);
  });

  it('ctx.timestamp is undefined for a record without one, chained and across an exchange', async () => {
    const seen: string[] = [];
    const sink = (where: string): SinkFunction<number> => ({
      invoke(v: number, ctx: { timestamp: number | undefined }) {
        seen.push(`${where} ${v} ${ctx.timestamp === undefined ? 'none' : ctx.timestamp}`);
      },
    });
    await runInline((env) => {
      env.fromElements(1, 2).addSink(sink('chained'));
      env.fromElements(3).keyBy((v) => v).addSink(sink('keyed'));
      env.fromCollection([4], { timestamp: () => 0 }).keyBy((v) => v).addSink(sink('keyed'));
    });
    expect(seen.sort()).toEqual(['chained 1 none', 'chained 2 none', 'keyed 3 none', 'keyed 4 0']);
  });

  it('with parallelism 3 each subtask finishes once, after its own records', async () => {
    const calls: { sub: number; what: string }[] = [];
    await runInline((env) => {
      env.fromGenerator((i) => i, { count: 3000 }).addSink(new (class implements SinkFunction<number> {
        sub = -1;
        open(ctx: RuntimeContext) {
          this.sub = ctx.taskInfo.subtaskIndex;
        }
        invoke(v: number) {
          calls.push({ sub: this.sub, what: `${v}` });
        }
        finish() {
          calls.push({ sub: this.sub, what: 'finish' });
        }
      })());
    }, { parallelism: 3 });
    for (const sub of [0, 1, 2]) {
      const mine = calls.filter((c) => c.sub === sub).map((c) => c.what);
      expect(mine).toHaveLength(1001);
      expect(mine[1000]).toBe('finish');
      expect(mine.slice(0, 1000).map(Number).every((v) => v % 3 === sub)).toBe(true);
    }
  });

  it('a plain function works as a sink; records without timestamps have ctx.timestamp undefined', async () => {
    const got: number[] = [];
    await runInline((env) => void env.fromElements(3, 1, 2).addSink((v) => void got.push(v)));
    expect(got).toEqual([3, 1, 2]);
  });

  it('rejects an object without invoke()', async () => {
    await expect(runInline((env) => void env.fromElements(1).addSink({} as never))).rejects.toThrow('addSink needs an object with an invoke(...) method');
  });

  it('exceptions in invoke and in finish are attributed to the sink', async () => {
    const inInvoke = await failureOf((env) => {
      env.fromElements('a', 'b').addSink({
        invoke(v: string) {
          if (v === 'b') throw new Error('disk full');
        },
      }).name('Writer');
    });
    expect(inInvoke).toBe('operator "Writer" (subtask 1/1) failed in sink on record "b": disk full');
    const inFinish = await failureOf((env) => {
      env.fromElements('a').addSink({
        invoke() {},
        finish() {
          throw new Error('flush failed');
        },
      }).name('Writer');
    });
    expect(inFinish).toBe('operator "Writer" (subtask 1/1) failed in sink finish: flush failed');
  });

  it('sinks see every record of a keyed, repartitioned pipeline exactly once', async () => {
    const got: number[] = [];
    await runInline((env) => {
      env.fromGenerator((i) => i, { count: 5000 }).keyBy((x) => x % 10).map((x) => x).addSink((v) => void got.push(v));
    }, { parallelism: 4 });
    expect(sorted(got)).toEqual(sorted(range(5000)));
  });
});
