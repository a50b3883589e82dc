/**
 * The Nexmark queries on weir's DataStream API, written as a user would (only `weir`'s public
 * exports), after the definitions of Flink 1.13's Nexmark SQL (nexmark/nexmark repository):
 *
 *   q0  pass-through: every bid, projected
 *   q1  currency conversion: bid prices × 0.908 (dollars to euros)
 *   q2  selection: bids of auctions whose id is a multiple of 123
 *   q3  local item suggestion: auctions of category 10 joined with their sellers from OR, ID, CA
 *       (an unwindowed, incremental join)
 *   q4  average closing price per category: each auction's highest bid made while it was open,
 *       averaged per category (a running average, updated as auctions close)
 *   q5  hot items: per 10 s window sliding by 2 s, the auctions with the most bids
 *   q7  highest bid: per 10 s tumbling window, the bids with the highest price
 *   q8  monitor new users: people who opened an auction in the 10 s window they registered in
 *   q9  winning bids: each closed auction with its highest bid (ties: the earlier, then the
 *       lower bidder id)
 *   q11 user sessions: bids per bidder per session (10 s of inactivity closes a session)
 *   q14 calculation: bids converted to euros between 10 000 and 500 000 €, tagged by time of day
 *
 * Event time is the events' dateTime, with watermarks bounded by OUT_OF_ORDERNESS_MS (above the
 * generator's disorder, so no event is late and every query has one exact answer).
 */
import {
  EventTimeSessionWindows, SlidingEventTimeWindows, TumblingEventTimeWindows, ValueStateDescriptor,
  type AggregateFunction, type DataStream, type KeyedCoProcessFunction, type KeyedContext, type KeyedProcessFunction,
  type KeyedRuntimeContext, type OnTimerContext, type ValueState, type Collector,
} from 'weir';
import type { QueryId, Q0Out, Q1Out, Q2Out, Q3Out, Q4Out, Q5Out, Q7Out, Q8Out, Q9Out, Q11Out, Q14Out } from './check.ts';
import type { Auction, Bid, Event, Person } from './model.ts';

const WINDOW_MS = 10_000;

const count = <T>(): AggregateFunction<T, number, number> => ({
  createAccumulator: () => 0,
  add: (_v, acc) => acc + 1,
  getResult: (acc) => acc,
  merge: (a, b) => a + b,
  commutative: true,
});

/** Day, night or other, by the bid's hour of day (UTC). */
export function bidTimeType(dateTime: number): string {
  const hour = new Date(dateTime).getUTCHours();
  return hour >= 8 && hour <= 18 ? 'dayTime' : hour <= 6 || hour >= 20 ? 'nightTime' : 'otherTime';
}

/**
 * What the bid side of q4 and q9 reads. Projected before the keyBy, as Flink's SQL plans project
 * before an exchange: the channel and url strings would cross threads on 2 workers for nothing.
 */
export type BidCore = Pick<Bid, 'auction' | 'bidder' | 'price' | 'dateTime'>;

/** Whether bid b beats the best so far for an auction (q4, q9). */
export const beats = (b: BidCore, best: BidCore | undefined): boolean =>
  best === undefined || b.price > best.price || (b.price === best.price && (b.dateTime < best.dateTime || (b.dateTime === best.dateTime && b.bidder < best.bidder)));

/** What WinningBids keeps per auction id. */
interface AuctionEntry {
  auction?: Auction;
  best?: BidCore;
  /** Bids that arrived before their auction. */
  early?: BidCore[];
  /** The auction has closed: later bids are ignored. */
  closed?: boolean;
}

/**
 * Auctions and bids keyed by auction id: keeps the auction and its best bid made between its
 * dateTime and expires (inclusive), and emits the pair when event time passes expires. Bids
 * that arrive before their auction wait for it. One state object per auction (as the plain
 * implementation keeps one map entry): a bid reads one state, not four.
 */
class WinningBids implements KeyedCoProcessFunction<number, Auction, BidCore, Q9Out> {
  private entry!: ValueState<AuctionEntry>;

  open(ctx: KeyedRuntimeContext): void {
    this.entry = ctx.getState(new ValueStateDescriptor<AuctionEntry>('auction, best bid, early bids'));
  }

  processElement1(a: Auction, ctx: KeyedContext<number>): void {
    const s = this.entry.value() ?? {};
    s.auction = a;
    if (s.early !== undefined) {
      for (const b of s.early) this.offer(s, a, b);
      s.early = undefined;
    }
    this.entry.update(s);
    ctx.timerService.registerEventTimeTimer(a.expires);
  }

  processElement2(b: BidCore): void {
    const s = this.entry.value();
    if (s === undefined) {
      this.entry.update({ early: [b] });
      return;
    }
    if (s.closed === true) return; // made after the auction closed
    if (s.auction !== undefined) {
      if (this.offer(s, s.auction, b)) this.entry.update(s);
    } else {
      (s.early ??= []).push(b);
      this.entry.update(s);
    }
  }

  /** Whether b became the best bid. */
  private offer(s: AuctionEntry, a: Auction, b: BidCore): boolean {
    if (b.dateTime < a.dateTime || b.dateTime > a.expires || !beats(b, s.best)) return false;
    s.best = b;
    return true;
  }

  onTimer(_ts: number, _ctx: OnTimerContext<number>, out: Collector<Q9Out>): void {
    const s = this.entry.value()!;
    const a = s.auction!;
    const b = s.best;
    if (b !== undefined) {
      out.collect({ id: a.id, seller: a.seller, category: a.category, dateTime: a.dateTime, expires: a.expires, bidder: b.bidder, price: b.price, bidTime: b.dateTime });
    }
    this.entry.update({ closed: true });
  }
}

function winningBids(auctions: DataStream<Auction>, bids: DataStream<Bid>, q: QueryId): DataStream<Q9Out> {
  const cores = bids.map((b): BidCore => ({ auction: b.auction, bidder: b.bidder, price: b.price, dateTime: b.dateTime }));
  return auctions.connect(cores).keyBy((a) => a.id, (b) => b.auction).process(new WinningBids()).uid(`${q} winning bids`);
}

/** q3: sellers from OR, ID or CA joined with their auctions of category 10, whichever comes first. */
class LocalItems implements KeyedCoProcessFunction<number, Person, Auction, Q3Out> {
  private person!: ValueState<Person>;
  private waiting!: ValueState<number[]>;
  open(ctx: KeyedRuntimeContext): void {
    this.person = ctx.getState(new ValueStateDescriptor<Person>('person'));
    this.waiting = ctx.getState(new ValueStateDescriptor<number[]>('auctions waiting for their seller'));
  }
  processElement1(p: Person, _ctx: KeyedContext<number>, out: Collector<Q3Out>): void {
    this.person.update(p);
    const waiting = this.waiting.value();
    if (waiting !== undefined) {
      for (const id of waiting) out.collect({ name: p.name, city: p.city, state: p.state, id });
      this.waiting.clear();
    }
  }
  processElement2(a: Auction, _ctx: KeyedContext<number>, out: Collector<Q3Out>): void {
    const p = this.person.value();
    if (p !== undefined) out.collect({ name: p.name, city: p.city, state: p.state, id: a.id });
    else {
      const waiting = this.waiting.value() ?? [];
      waiting.push(a.id);
      this.waiting.update(waiting);
    }
  }
}

/** q4's second stage: a running average of closing prices per category. */
class AveragePerCategory implements KeyedProcessFunction<number, Q9Out, Q4Out> {
  private sum!: ValueState<[number, number]>;
  open(ctx: KeyedRuntimeContext): void {
    this.sum = ctx.getState(new ValueStateDescriptor<[number, number]>('sum and count'));
  }
  processElement(w: Q9Out, _ctx: KeyedContext<number>, out: Collector<Q4Out>): void {
    const [s, c] = this.sum.value() ?? [0, 0];
    const sum = s + w.price;
    const n = c + 1;
    this.sum.update([sum, n]);
    out.collect({ category: w.category, sum, count: n, avg: sum / n });
  }
}

interface MaxBids { max: number; bids: Q7Out[] }

/** The query `q` over the events. */
// eslint-disable-next-line @typescript-eslint/no-explicit-any -- each query has its own output type (check.ts)
export function buildQuery(q: QueryId, events: DataStream<Event>): DataStream<any> {
  const bids = (): DataStream<Bid> => events.filter((e): e is Bid => e.kind === 'bid');
  const auctions = (): DataStream<Auction> => events.filter((e): e is Auction => e.kind === 'auction');
  const persons = (): DataStream<Person> => events.filter((e): e is Person => e.kind === 'person');
  switch (q) {
    case 'q0':
      return bids().map((b): Q0Out => ({ auction: b.auction, bidder: b.bidder, price: b.price, dateTime: b.dateTime, extra: b.extra }));
    case 'q1':
      return bids().map((b): Q1Out => ({ auction: b.auction, bidder: b.bidder, price: 0.908 * b.price, dateTime: b.dateTime, extra: b.extra }));
    case 'q2':
      return bids().filter((b) => b.auction % 123 === 0).map((b): Q2Out => ({ auction: b.auction, price: b.price }));
    case 'q3': {
      const sellers = persons().filter((p) => p.state === 'OR' || p.state === 'ID' || p.state === 'CA');
      const items = auctions().filter((a) => a.category === 10);
      return sellers.connect(items).keyBy((p) => p.id, (a) => a.seller).process(new LocalItems()).uid('q3 join');
    }
    case 'q4':
      return winningBids(auctions(), bids(), q).keyBy((w) => w.category).process(new AveragePerCategory()).uid('q4 average');
    case 'q5':
      // Only the auction id is read (the event time travels with the record): projected before the
      // keyBy, as Flink's SQL plan projects before its exchange (also in q4, q7, q9 and q11).
      return bids()
        .map((b) => b.auction)
        .keyBy((auction) => auction)
        .window(SlidingEventTimeWindows.of(WINDOW_MS, 2000))
        .aggregate(count<number>(), { process: (auction, ctx, [num], out: Collector<Q5Out>) => out.collect({ auction, num: num!, start: ctx.window.start }) })
        .uid('q5 counts')
        // A window's results carry its end - 1: one 2 s tumbling window holds exactly one sliding window's counts.
        .keyBy((c) => c.start)
        .window(TumblingEventTimeWindows.of(2000))
        .process({
          process(_start, _ctx, counts, out) {
            let max = 0;
            for (const c of counts) if (c.num > max) max = c.num;
            for (const c of counts) if (c.num >= max) out.collect(c);
          },
        })
        .uid('q5 hottest');
    case 'q7':
      return bids()
        .map((b): Q7Out => ({ auction: b.auction, bidder: b.bidder, price: b.price, dateTime: b.dateTime, extra: b.extra }))
        .windowAll(TumblingEventTimeWindows.of(WINDOW_MS))
        .aggregate<MaxBids, MaxBids, Q7Out>({
          createAccumulator: () => ({ max: -1, bids: [] }),
          add(b, acc) {
            if (b.price > acc.max) {
              acc.max = b.price;
              acc.bids = [b];
            } else if (b.price === acc.max) acc.bids.push(b);
            return acc;
          },
          getResult: (acc) => acc,
        }, {
          process(_ctx, [acc], out) {
            for (const b of acc!.bids) out.collect(b);
          },
        })
        .uid('q7 highest');
    case 'q8':
      // Projected first, as Flink's SQL q8 does (person id and name, auction seller) and as the
      // plain implementation keeps them: whole auctions in window state cost memory, not logic.
      return persons()
        .map((p) => ({ id: p.id, name: p.name }))
        .coGroup(auctions().map((a) => a.seller))
        .where((p) => p.id)
        .equalTo((seller) => seller)
        .window(TumblingEventTimeWindows.of(WINDOW_MS))
        .apply((ps, as, out, w) => {
          if (ps.length > 0 && as.length > 0) for (const p of ps) out.collect({ id: p.id, name: p.name, start: w.start } satisfies Q8Out);
        })
        .uid('q8 new sellers');
    case 'q9':
      return winningBids(auctions(), bids(), q);
    case 'q11':
      return bids()
        .map((b) => b.bidder)
        .keyBy((bidder) => bidder)
        .window(EventTimeSessionWindows.withGap(WINDOW_MS))
        .aggregate(count<number>(), { process: (bidder, ctx, [n], out: Collector<Q11Out>) => out.collect({ bidder, count: n!, start: ctx.window.start, end: ctx.window.end }) })
        .uid('q11 sessions');
    case 'q14':
      // Filtered before the projection, as the plain implementation does and as Flink's SQL
      // planner pushes the predicate down: the time-of-day tag (a Date per bid) only for survivors.
      return bids()
        .filter((b) => {
          const euros = 0.908 * b.price;
          return euros > 1_000_000 && euros < 50_000_000;
        })
        .map((b): Q14Out => ({ auction: b.auction, bidder: b.bidder, price: 0.908 * b.price, bidTimeType: bidTimeType(b.dateTime), dateTime: b.dateTime, extra: b.extra }));
  }
}
