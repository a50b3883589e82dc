/**
 * The Nexmark queries in plain TypeScript: one pass over the events in arrival order, one
 * thread, no framework. Event time works as in weir: the watermark is the highest dateTime
 * seen minus the bound minus 1, a window [start, end) fires once the watermark reaches end - 1,
 * an auction closes once it reaches expires, and the end of input fires everything. This is
 * the reference every weir run is checked against, and the "plain" column of the suite.
 */
import type { QueryId, Q0Out, Q1Out, Q2Out, Q3Out, Q4Out, Q5Out, Q7Out, Q8Out, Q9Out, Q11Out, Q14Out } from './check.ts';
import { OUT_OF_ORDERNESS_MS } from './generator.ts';
import type { Auction, Bid, Event, Person } from './model.ts';
import { beats, bidTimeType } from './queries.ts';

export interface PlainQuery {
  add(e: Event): void;
  /** End of input: fires every open window and timer. */
  finish(): void;
}

type Emit<T> = (o: T) => void;
const WINDOW_MS = 10_000;

/** Event time of one pass: the watermark, and windows (by start) that fire as it passes their end - 1. */
class Windows<S> {
  readonly open = new Map<number, S>();
  /** Starts of open windows, ascending. */
  private readonly starts: number[] = [];
  constructor(private readonly size: number, private readonly init: () => S, private readonly fire: (start: number, s: S) => void) {}
  get(start: number): S {
    let s = this.open.get(start);
    if (s === undefined) {
      this.open.set(start, (s = this.init()));
      let at = this.starts.length;
      while (at > 0 && this.starts[at - 1]! > start) at--;
      this.starts.splice(at, 0, start);
    }
    return s;
  }
  advance(wm: number): void {
    const starts = this.starts;
    while (starts.length > 0 && starts[0]! + this.size - 1 <= wm) {
      const start = starts.shift()!;
      const s = this.open.get(start)!;
      this.open.delete(start);
      this.fire(start, s);
    }
  }
}

abstract class EventTime implements PlainQuery {
  protected wm = Number.NEGATIVE_INFINITY;
  add(e: Event): void {
    this.onEvent(e);
    const wm = e.dateTime - OUT_OF_ORDERNESS_MS - 1;
    if (wm > this.wm) {
      this.wm = wm;
      this.onWatermark(wm);
    }
  }
  finish(): void {
    this.onWatermark(Number.POSITIVE_INFINITY);
  }
  protected abstract onEvent(e: Event): void;
  protected abstract onWatermark(wm: number): void;
}

/** q4 and q9: auctions close when the watermark reaches their expiry. */
class WinningBids extends EventTime {
  private readonly state = new Map<number, { auction?: Auction; best?: Bid; early?: Bid[]; closed?: boolean }>();
  /** Auction ids by expiry (ms). */
  private readonly timers = new Map<number, number[]>();
  private nextTimer = Number.POSITIVE_INFINITY;
  private maxTimer = Number.NEGATIVE_INFINITY;
  constructor(private readonly emit: Emit<Q9Out>) {
    super();
  }
  private entry(id: number) {
    let s = this.state.get(id);
    if (s === undefined) this.state.set(id, (s = {}));
    return s;
  }
  protected onEvent(e: Event): void {
    if (e.kind === 'auction') {
      const s = this.entry(e.id);
      s.auction = e;
      if (s.early !== undefined) {
        for (const b of s.early) this.offer(s, e, b);
        s.early = undefined;
      }
      const t = this.timers.get(e.expires);
      if (t === undefined) this.timers.set(e.expires, [e.id]);
      else t.push(e.id);
      if (e.expires < this.nextTimer) this.nextTimer = e.expires;
      if (e.expires > this.maxTimer) this.maxTimer = e.expires;
    } else if (e.kind === 'bid') {
      const s = this.entry(e.auction);
      if (s.closed === true) return;
      if (s.auction !== undefined) this.offer(s, s.auction, e);
      else (s.early ??= []).push(e);
    }
  }
  private offer(s: { best?: Bid }, a: Auction, b: Bid): void {
    if (b.dateTime < a.dateTime || b.dateTime > a.expires) return;
    if (beats(b, s.best)) s.best = b;
  }
  protected onWatermark(wm: number): void {
    const last = Math.min(wm, this.maxTimer);
    for (; this.nextTimer <= last; this.nextTimer++) {
      const ids = this.timers.get(this.nextTimer);
      if (ids === undefined) continue;
      this.timers.delete(this.nextTimer);
      for (const id of ids) {
        const s = this.state.get(id)!;
        const a = s.auction!;
        const b = s.best;
        if (b !== undefined) this.emit({ id: a.id, seller: a.seller, category: a.category, dateTime: a.dateTime, expires: a.expires, bidder: b.bidder, price: b.price, bidTime: b.dateTime });
        s.auction = undefined;
        s.best = undefined;
        s.closed = true;
      }
    }
  }
}

function q3(emit: Emit<Q3Out>): PlainQuery {
  const persons = new Map<number, Person>();
  const waiting = new Map<number, number[]>();
  return {
    add(e) {
      if (e.kind === 'person') {
        if (e.state !== 'OR' && e.state !== 'ID' && e.state !== 'CA') return;
        persons.set(e.id, e);
        const w = waiting.get(e.id);
        if (w !== undefined) {
          for (const id of w) emit({ name: e.name, city: e.city, state: e.state, id });
          waiting.delete(e.id);
        }
      } else if (e.kind === 'auction') {
        if (e.category !== 10) return;
        const p = persons.get(e.seller);
        if (p !== undefined) emit({ name: p.name, city: p.city, state: p.state, id: e.id });
        else {
          const w = waiting.get(e.seller);
          if (w === undefined) waiting.set(e.seller, [e.id]);
          else w.push(e.id);
        }
      }
    },
    finish() {},
  };
}

class Q5 extends EventTime {
  private readonly windows: Windows<Map<number, number>>;
  constructor(emit: Emit<Q5Out>) {
    super();
    this.windows = new Windows(WINDOW_MS, () => new Map(), (start, counts) => {
      let max = 0;
      for (const c of counts.values()) if (c > max) max = c;
      for (const [auction, num] of counts) if (num >= max) emit({ auction, num, start });
    });
  }
  protected onEvent(e: Event): void {
    if (e.kind !== 'bid') return;
    const ts = e.dateTime;
    for (let start = ts - (ts % 2000); start > ts - WINDOW_MS; start -= 2000) {
      const counts = this.windows.get(start);
      counts.set(e.auction, (counts.get(e.auction) ?? 0) + 1);
    }
  }
  protected onWatermark(wm: number): void {
    this.windows.advance(wm);
  }
}

class Q7 extends EventTime {
  private readonly windows: Windows<{ max: number; bids: Bid[] }>;
  constructor(emit: Emit<Q7Out>) {
    super();
    this.windows = new Windows(WINDOW_MS, () => ({ max: -1, bids: [] as Bid[] }), (_start, w) => {
      for (const b of w.bids) emit({ auction: b.auction, bidder: b.bidder, price: b.price, dateTime: b.dateTime, extra: b.extra });
    });
  }
  protected onEvent(e: Event): void {
    if (e.kind !== 'bid') return;
    const w = this.windows.get(e.dateTime - (e.dateTime % WINDOW_MS));
    if (e.price > w.max) {
      w.max = e.price;
      w.bids = [e];
    } else if (e.price === w.max) w.bids.push(e);
  }
  protected onWatermark(wm: number): void {
    this.windows.advance(wm);
  }
}

class Q8 extends EventTime {
  private readonly windows: Windows<{ persons: Map<number, string>; sellers: Set<number> }>;
  constructor(emit: Emit<Q8Out>) {
    super();
    this.windows = new Windows(WINDOW_MS, () => ({ persons: new Map(), sellers: new Set() }), (start, w) => {
      for (const [id, name] of w.persons) if (w.sellers.has(id)) emit({ id, name, start });
    });
  }
  protected onEvent(e: Event): void {
    if (e.kind === 'person') this.windows.get(e.dateTime - (e.dateTime % WINDOW_MS)).persons.set(e.id, e.name);
    else if (e.kind === 'auction') this.windows.get(e.dateTime - (e.dateTime % WINDOW_MS)).sellers.add(e.seller);
  }
  protected onWatermark(wm: number): void {
    this.windows.advance(wm);
  }
}

/** Sessions per bidder: [start, end, count], merged when they overlap or touch (as Flink and weir). */
class Q11 extends EventTime {
  private readonly sessions = new Map<number, [number, number, number][]>();
  private nextSweep = Number.NEGATIVE_INFINITY;
  constructor(private readonly emit: Emit<Q11Out>) {
    super();
  }
  protected onEvent(e: Event): void {
    if (e.kind !== 'bid') return;
    let start = e.dateTime;
    let end = e.dateTime + WINDOW_MS;
    let count = 1;
    const list = this.sessions.get(e.bidder);
    if (list === undefined) {
      this.sessions.set(e.bidder, [[start, end, count]]);
      return;
    }
    for (let k = list.length - 1; k >= 0; k--) {
      const s = list[k]!;
      if (s[0] <= end && s[1] >= start) {
        if (s[0] < start) start = s[0];
        if (s[1] > end) end = s[1];
        count += s[2];
        list.splice(k, 1);
      }
    }
    list.push([start, end, count]);
  }
  /** Emits the sessions the watermark has passed, once per second of event time (and at the end). */
  protected onWatermark(wm: number): void {
    if (wm < this.nextSweep) return;
    this.nextSweep = wm + 1000;
    for (const [bidder, list] of this.sessions) {
      for (let k = list.length - 1; k >= 0; k--) {
        const s = list[k]!;
        if (s[1] - 1 <= wm) {
          this.emit({ bidder, count: s[2], start: s[0], end: s[1] });
          list.splice(k, 1);
        }
      }
      if (list.length === 0) this.sessions.delete(bidder);
    }
  }
}

/** The plain implementation of query q, emitting its output records to `emit`. */
export function plainQuery(q: QueryId, emit: Emit<any>): PlainQuery {
  const stateless = (fn: (b: Bid) => void): PlainQuery => ({ add: (e) => (e.kind === 'bid' ? fn(e) : undefined), finish() {} });
  switch (q) {
    case 'q0':
      return stateless((b) => emit({ auction: b.auction, bidder: b.bidder, price: b.price, dateTime: b.dateTime, extra: b.extra } satisfies Q0Out));
    case 'q1':
      return stateless((b) => emit({ auction: b.auction, bidder: b.bidder, price: 0.908 * b.price, dateTime: b.dateTime, extra: b.extra } satisfies Q1Out));
    case 'q2':
      return stateless((b) => (b.auction % 123 === 0 ? emit({ auction: b.auction, price: b.price } satisfies Q2Out) : undefined));
    case 'q3':
      return q3(emit);
    case 'q4': {
      const sums = new Map<number, [number, number]>();
      return new WinningBids((w) => {
        const s = sums.get(w.category) ?? [0, 0];
        s[0] += w.price;
        s[1]++;
        sums.set(w.category, s);
        emit({ category: w.category, sum: s[0], count: s[1], avg: s[0] / s[1] } satisfies Q4Out);
      });
    }
    case 'q5':
      return new Q5(emit);
    case 'q7':
      return new Q7(emit);
    case 'q8':
      return new Q8(emit);
    case 'q9':
      return new WinningBids(emit);
    case 'q11':
      return new Q11(emit);
    case 'q14':
      return stateless((b) => {
        const price = 0.908 * b.price;
        if (price > 1_000_000 && price < 50_000_000) {
          emit({ auction: b.auction, bidder: b.bidder, price, bidTimeType: bidTimeType(b.dateTime), dateTime: b.dateTime, extra: b.extra } satisfies Q14Out);
        }
      });
  }
}
