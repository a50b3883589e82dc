/**
 * Randomised event-time window test: random keyed records with out-of-order and late
 * timestamps, random (sometimes regressing) punctuated watermarks, random tumbling, sliding
 * or session windows with random allowed lateness. weir's firings and late side output are
 * compared with a small reference model of Flink's WindowOperator (default EventTimeTrigger):
 * - a record joins every window it belongs to that is not past end - 1 + lateness; a window
 *   already past end - 1 fires at once for each such record;
 * - when the watermark advances from w0 to w1 every window with w0 < end - 1 <= w1 fires;
 *   windows with end - 1 + lateness <= w1 are dropped;
 * - a record that joined no window is late (side output);
 * - sessions: [ts, ts + gap) merges with every session of the key it overlaps or touches.
 * Firings of one key happen in a fully determined order (by end - 1, late ones at the
 * record), so the per-key sequences are compared exactly.
 * Each round runs two window operators over the same records: one whose accumulator is a
 * pair (windows kept whole) and one whose accumulator is a number (sliding windows of a whole
 * number of slides are then kept as panes, window-panes.ts); both must match the model.
 *
 * The seed is printed; replay with SEED=<n> npx vitest run test/runtime/windows-random.test.ts
 */
import { expect, it } from 'vitest';
import {
  EventTimeSessionWindows, OutputTag, Rng, SlidingEventTimeWindows, TumblingEventTimeWindows,
  type AggregateFunction, type WindowAssigner,
} from '../../src/index.ts';
import { runInline } from '../helpers/run.ts';
import { punctuated } from './support.ts';

interface Ev { k: string; ts: number; v: number; wm?: number }
type Spec =
  | { kind: 'tumbling'; size: number }
  | { kind: 'sliding'; size: number; slide: number }
  | { kind: 'session'; gap: number };
/** [key, start, end, sum, count] of one firing. */
type Firing = [string, number, number, number, number];

const MAX = Number.MAX_SAFE_INTEGER;

function floorStart(ts: number, size: number): number {
  const r = ts % size;
  return ts - (r < 0 ? r + size : r);
}

/** The reference model. */
function model(events: readonly Ev[], spec: Spec, lateness: number): { firings: Firing[]; late: number[] } {
  interface Win { start: number; end: number; sum: number; count: number }
  const state = new Map<string, Win[]>();
  const firings: Firing[] = [];
  const late: number[] = [];
  let wm = Number.MIN_SAFE_INTEGER;
  const fire = (k: string, w: Win) => firings.push([k, w.start, w.end, w.sum, w.count]);
  const isLate = (end: number) => end - 1 + lateness <= wm;

  const advance = (to: number) => {
    if (to <= wm) return;
    const from = wm;
    wm = to;
    // Fire in timer order over all keys: by end - 1 (ties: any order; compared per key).
    const due: [string, Win][] = [];
    for (const [k, ws] of state) for (const w of ws) if (w.end - 1 > from && w.end - 1 <= to) due.push([k, w]);
    due.sort((a, b) => a[1].end - b[1].end);
    for (const [k, w] of due) fire(k, w);
    for (const [k, ws] of state) state.set(k, ws.filter((w) => !isLate(w.end)));
  };

  for (const e of events) {
    const ws = state.get(e.k) ?? [];
    state.set(e.k, ws);
    if (spec.kind === 'session') {
      let start = e.ts;
      let end = e.ts + spec.gap;
      const merged = ws.filter((w) => w.start <= end && w.end >= start);
      for (const w of merged) {
        start = Math.min(start, w.start);
        end = Math.max(end, w.end);
      }
      if (isLate(end)) {
        late.push(e.v);
      } else {
        const win: Win = { start, end, sum: e.v, count: 1 };
        for (const w of merged) {
          win.sum += w.sum;
          win.count += w.count;
        }
        state.set(e.k, [...ws.filter((w) => !merged.includes(w)), win]);
        if (end - 1 <= wm) fire(e.k, win);
      }
    } else {
      const size = spec.size;
      const slide = spec.kind === 'sliding' ? spec.slide : spec.size;
      let joined = false;
      for (let s = floorStart(e.ts, slide); s > e.ts - size; s -= slide) {
        const end = s + size;
        if (isLate(end)) continue;
        joined = true;
        let w = ws.find((x) => x.start === s);
        if (w === undefined) {
          w = { start: s, end, sum: 0, count: 0 };
          ws.push(w);
        }
        w.sum += e.v;
        w.count += 1;
        if (end - 1 <= wm) fire(e.k, w);
      }
      if (!joined) late.push(e.v);
    }
    if (e.wm !== undefined) advance(e.wm);
  }
  advance(MAX);
  return { firings, late };
}

function generate(rng: Rng, n: number): Ev[] {
  const out: Ev[] = [];
  let base = rng.range(-50, 50);
  for (let i = 0; i < n; i++) {
    base += rng.range(0, 4);
    // Mostly a little out of order, sometimes far behind (late).
    const ts = base - (rng.bool(0.15) ? rng.range(10, 60) : rng.range(0, 6));
    const e: Ev = { k: rng.pick(['a', 'b', 'c']), ts, v: i + 1 };
    // Punctuation, sometimes lower than an earlier one (must be ignored).
    if (rng.bool(0.3)) out.push({ ...e, wm: base - rng.range(0, 12) });
    else out.push(e);
  }
  return out;
}

function assigner(spec: Spec): WindowAssigner {
  if (spec.kind === 'tumbling') return TumblingEventTimeWindows.of(spec.size);
  if (spec.kind === 'sliding') return SlidingEventTimeWindows.of(spec.size, spec.slide);
  return EventTimeSessionWindows.withGap(spec.gap);
}

const sumCount: AggregateFunction<Ev, [number, number], [number, number]> = {
  createAccumulator: () => [0, 0],
  add: (e, [s, c]) => [s + e.v, c + 1],
  getResult: (acc) => acc,
  merge: (a, b) => [a[0] + b[0], a[1] + b[1]],
};

/** sum and count in one number (sum * 4096 + count; counts here stay below 4096): a primitive accumulator. */
const packedSumCount: AggregateFunction<Ev, number, [number, number]> = {
  createAccumulator: () => 0,
  add: (e, acc) => acc + e.v * 4096 + 1,
  getResult: (acc) => [Math.floor(acc / 4096), acc % 4096],
  merge: (a, b) => a + b,
  commutative: true,
};

const perKey = (fs: readonly Firing[]) => {
  const m: Record<string, Firing[]> = {};
  for (const f of fs) (m[f[0]] ??= []).push(f);
  return m;
};

it('random event-time windows with late data match the reference model', async () => {
  const seed = process.env.SEED !== undefined ? Number(process.env.SEED) : Math.floor(Math.random() * 2 ** 31);
  console.log(`windows-random: SEED=${seed}`);
  const rng = new Rng(seed);
  for (let round = 0; round < 12; round++) {
    const kind = rng.pick(['tumbling', 'sliding', 'session'] as const);
    const spec: Spec = kind === 'tumbling' ? { kind, size: rng.range(3, 20) }
      : kind === 'sliding' ? (() => {
        const slide = rng.range(2, 10);
        // Half the time a whole number of slides (kept as panes when the accumulator is a number).
        return { kind, slide, size: rng.bool(0.5) ? slide * rng.range(1, 4) : slide * rng.range(1, 3) + rng.range(0, slide - 1) };
      })()
      : { kind, gap: rng.range(2, 12) };
    const lateness = rng.pick([0, 0, 3, 10, 30]);
    const events = generate(rng, rng.range(20, 150));
    const want = model(events, spec, lateness);
    // Odd rounds spread the keys over three window subtasks: every subtask sees every watermark.
    const parallelism = round % 2 === 0 ? 1 : 3;
    const res = await runInline((env) => {
      env.setAutoWatermarkInterval(0);
      const keyed = env.fromCollection(events).assignTimestampsAndWatermarks(punctuated<Ev>()).keyBy((e) => e.k);
      // The same windows over two accumulators: a pair (whole windows) and a number (panes where sliding allows).
      const windowsInto = (agg: AggregateFunction<Ev, any, [number, number]>, firings: string, late: string): void => {
        const tag = new OutputTag<Ev>(late);
        const w = keyed.window(assigner(spec)).allowedLateness(lateness).sideOutputLateData(tag)
          .aggregate(agg, {
            process(key, ctx, [acc], out) {
              out.collect([key, ctx.window.start, ctx.window.end, acc![0], acc![1]] as Firing);
            },
          });
        w.collect(firings);
        w.getSideOutput(tag).map((e) => e.v).collect(late);
      };
      windowsInto(sumCount, 'main', 'late');
      windowsInto(packedSumCount, 'packed', 'late packed');
    }, { parallelism });
    const ctx = `seed ${seed}, round ${round}, ${JSON.stringify(spec)}, lateness ${lateness}, parallelism ${parallelism}`;
    expect(perKey(res.collected<Firing>('main')), ctx).toEqual(perKey(want.firings));
    // Late records of different keys may come from different subtasks: compare as sets.
    const num = (a: number, b: number) => a - b;
    expect([...res.collected<number>('late')].sort(num), ctx).toEqual([...want.late].sort(num));
    expect(perKey(res.collected<Firing>('packed')), `${ctx}, number accumulator`).toEqual(perKey(want.firings));
    expect([...res.collected<number>('late packed')].sort(num), `${ctx}, number accumulator`).toEqual([...want.late].sort(num));
  }
});
