/**
 * Baseline: Node.js object-mode streams. A Readable generates the records, one Transform per
 * step, a Writable accumulates; stream.pipeline connects them with backpressure. Default
 * object-mode highWaterMark (16 records per stream).
 */
import { Readable, Transform, Writable, type TransformCallback } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { Rng } from 'weir';
import {
  genA, genB, genC, keepA, mapA, MapFilterAccumulator, SEED_B, SEED_C, TumblingCounter, WindowCountAccumulator,
  WordCountAccumulator, type Accumulator, type RecA, type RecB, type RecC, type MappedA, type Result, type Size,
  type WindowResult,
} from '../workloads.ts';
import type { Baseline } from './baseline.ts';

/** Records gen(0) ... gen(n-1), pushed until the buffer is full. */
function generate<T>(n: number, gen: (i: number) => T): Readable {
  let i = 0;
  return new Readable({
    objectMode: true,
    read() {
      while (i < n) {
        if (!this.push(gen(i++))) return;
      }
      this.push(null);
    },
  });
}

function mapStream<I, O>(fn: (v: I) => O): Transform {
  return new Transform({
    objectMode: true,
    transform(v: I, _enc, cb: TransformCallback) {
      cb(null, fn(v));
    },
  });
}

function filterStream<T>(fn: (v: T) => boolean): Transform {
  return new Transform({
    objectMode: true,
    transform(v: T, _enc, cb: TransformCallback) {
      if (fn(v)) cb(null, v);
      else cb();
    },
  });
}

function sink<T>(acc: Accumulator<T>): Writable {
  return new Writable({
    objectMode: true,
    write(v: T, _enc, cb) {
      acc.add(v);
      cb();
    },
  });
}

export const streams: Baseline = {
  async 'map-filter'({ n }: Size) {
    const acc = new MapFilterAccumulator();
    await pipeline(generate(n, genA), mapStream<RecA, MappedA>(mapA), filterStream<MappedA>(keepA), sink(acc));
    return acc.result();
  },

  async 'word-count'({ n, keys }: Size) {
    const gen = genB(keys);
    const rng = new Rng();
    const counts = new Map<string, number>();
    const acc = new WordCountAccumulator();
    const running = new Transform({
      objectMode: true,
      transform(r: RecB, _enc, cb: TransformCallback) {
        const c = (counts.get(r.key) ?? 0) + r.count;
        counts.set(r.key, c);
        cb(null, { key: r.key, count: c } satisfies RecB);
      },
    });
    await pipeline(generate(n, (i) => gen(i, rng.reseed(SEED_B, i))), running, sink(acc));
    return acc.result();
  },

  async 'window-count'({ n, keys }: Size) {
    const gen = genC(keys);
    const rng = new Rng();
    const windows = new TumblingCounter();
    const acc = new WindowCountAccumulator();
    const windowed = new Transform({
      objectMode: true,
      transform(r: RecC, _enc, cb: TransformCallback) {
        windows.add(r, (w: WindowResult) => this.push(w));
        cb();
      },
      flush(cb: TransformCallback) {
        windows.finish((w: WindowResult) => this.push(w));
        cb();
      },
    });
    await pipeline(generate(n, (i) => gen(i, rng.reseed(SEED_C, i))), windowed, sink(acc));
    const r: Result = acc.result();
    return windows.late > 0 ? { ...r, late: windows.late } : r;
  },
};
