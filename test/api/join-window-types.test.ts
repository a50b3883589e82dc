/**
 * The types of filter guards, joins, coGroup, windowAll and count windows flow end to end.
 * These are checked by the typechecker (`npx tsc -p . --noEmit`): each `@ts-expect-error`
 * marks a call that must be refused, and fails the typecheck if it is ever accepted.
 * Nothing here runs a job; the pipelines are only declared.
 */
import { describe, expect, expectTypeOf, it } from 'vitest';
import {
  StreamExecutionEnvironment, TumblingEventTimeWindows, type DataStream, type GlobalWindow, type TimeWindow,
} from '../../src/index.ts';

interface Person { readonly kind: 'person'; readonly id: number; readonly name: string; readonly ts: number }
interface Auction { readonly kind: 'auction'; readonly id: number; readonly seller: number; readonly ts: number }
interface Bid { readonly kind: 'bid'; readonly auction: number; readonly price: number; readonly ts: number }
type Event = Person | Auction | Bid;

function declare(build: (events: DataStream<Event>) => void): void {
  const env = new StreamExecutionEnvironment({ defaultParallelism: 1 });
  build(env.fromCollection<Event>([], { timestamp: (e) => e.ts }));
}

const isBid = (e: Event): e is Bid => e.kind === 'bid';

describe('types', () => {
  it('filter with a type guard narrows the stream; a plain predicate keeps it', () => {
    declare((events) => {
      expectTypeOf(events.filter(isBid)).toEqualTypeOf<DataStream<Bid>>();
      expectTypeOf(events.filter((e): e is Person => e.kind === 'person')).toEqualTypeOf<DataStream<Person>>();
      // TypeScript infers the guard from a discriminant test (TS 5.5 and later).
      expectTypeOf(events.filter((e) => e.kind === 'auction')).toEqualTypeOf<DataStream<Auction>>();
      expectTypeOf(events.filter((e) => e.ts > 0)).toEqualTypeOf<DataStream<Event>>();
      // @ts-expect-error a narrowed stream has no fields of the other members
      events.filter(isBid).map((b) => b.name);
      // A guard for some other type (not a subtype of the stream's) narrows nothing.
      const isNumber = (x: unknown): x is number => typeof x === 'number';
      expectTypeOf(events.filter(isNumber)).toEqualTypeOf<DataStream<Event>>();
      // Keyed streams narrow as well (and, as in Flink, the result is no longer keyed).
      expectTypeOf(events.keyBy((e) => e.kind).filter(isBid)).toEqualTypeOf<DataStream<Bid>>();
    });
  });

  it('window join: both sides keep their types, the key types must agree, the result type is inferred', () => {
    declare((events) => {
      const persons = events.filter((e): e is Person => e.kind === 'person');
      const auctions = events.filter((e): e is Auction => e.kind === 'auction');
      const joined = persons.join(auctions).where((p) => p.id).equalTo((a) => a.seller).window(TumblingEventTimeWindows.of('10 s'))
        .apply((p, a, w) => {
          expectTypeOf(p).toEqualTypeOf<Person>();
          expectTypeOf(a).toEqualTypeOf<Auction>();
          expectTypeOf(w).toEqualTypeOf<TimeWindow>();
          return { name: p.name, auction: a.id, start: w.start };
        });
      expectTypeOf(joined).toEqualTypeOf<DataStream<{ name: string; auction: number; start: number }>>();
      // @ts-expect-error the second key must have the first key's type (number, not string)
      persons.join(auctions).where((p) => p.id).equalTo((a) => String(a.seller));
      // @ts-expect-error a window join needs a window assigner (and is refused at run time too)
      expect(() => persons.join(auctions).where((p) => p.id).equalTo((a) => a.seller).window(10)).toThrow(/needs a window assigner/);
      const flat = persons.join(auctions).where((p) => p.id).equalTo((a) => a.seller).window(TumblingEventTimeWindows.of(10))
        .flatApply((p, a) => (p.id > 0 ? [a.id] : []));
      expectTypeOf(flat).toEqualTypeOf<DataStream<number>>();
    });
  });

  it('coGroup: the function gets readonly arrays of each side', () => {
    declare((events) => {
      const persons = events.filter((e): e is Person => e.kind === 'person');
      const bids = events.filter(isBid);
      const counts = persons.coGroup(bids).where((p) => p.id).equalTo((b) => b.auction).window(TumblingEventTimeWindows.of(10))
        .apply((ps, bs) => {
          expectTypeOf(ps).toEqualTypeOf<readonly Person[]>();
          expectTypeOf(bs).toEqualTypeOf<readonly Bid[]>();
          return [[ps.length, bs.length] as const];
        });
      expectTypeOf(counts).toEqualTypeOf<DataStream<readonly [number, number]>>();
    });
  });

  it('interval join: keyed streams of one key type; the function sees both records and the timestamps', () => {
    declare((events) => {
      const auctions = events.filter((e): e is Auction => e.kind === 'auction').keyBy((a) => a.id);
      const bids = events.filter(isBid).keyBy((b) => b.auction);
      const out = auctions.intervalJoin(bids).between(0, '1 min').process({
        processElement(a, b, ctx) {
          expectTypeOf(a).toEqualTypeOf<Auction>();
          expectTypeOf(b).toEqualTypeOf<Bid>();
          expectTypeOf(ctx.timestamp).toEqualTypeOf<number>();
          return [{ auction: a.id, price: b.price }];
        },
      });
      expectTypeOf(out).toEqualTypeOf<DataStream<{ auction: number; price: number }>>();
      const byName = events.filter((e): e is Person => e.kind === 'person').keyBy((p) => p.name);
      // @ts-expect-error the other stream must be keyed by the same key type (string is not number)
      auctions.intervalJoin(byName);
      // @ts-expect-error the other stream must be keyed (and is refused at run time too)
      expect(() => auctions.intervalJoin(events.filter(isBid))).toThrow(/takes a KeyedStream/);
    });
  });

  it('windowAll and count windows: no key in windowAll functions, GlobalWindow in count windows', () => {
    declare((events) => {
      const bids = events.filter(isBid);
      const top = bids.windowAll(TumblingEventTimeWindows.of(10)).process((({
        process(ctx, elements) {
          expectTypeOf(ctx.window).toEqualTypeOf<TimeWindow>();
          expectTypeOf(elements).toEqualTypeOf<readonly Bid[]>();
          return [Math.max(...elements.map((b) => b.price))];
        },
      })));
      expectTypeOf(top).toEqualTypeOf<DataStream<number>>();
      // @ts-expect-error windowAll functions take no key: (ctx, elements, out)
      bids.windowAll(TumblingEventTimeWindows.of(10)).process({ process: (_key: number, _ctx: unknown, elements: readonly Bid[]) => elements });
      const perAuction = bids.keyBy((b) => b.auction).countWindow(5, 1).process({
        process(key, ctx, elements) {
          expectTypeOf(key).toEqualTypeOf<number>();
          expectTypeOf(ctx.window).toEqualTypeOf<GlobalWindow>();
          return [{ key, n: elements.length }];
        },
      });
      expectTypeOf(perAuction).toEqualTypeOf<DataStream<{ key: number; n: number }>>();
      expectTypeOf(bids.countWindowAll(3).reduce((a, b) => (a.price > b.price ? a : b))).toEqualTypeOf<DataStream<Bid>>();
      // @ts-expect-error count windows have no time window
      bids.keyBy((b) => b.auction).countWindow(5).process({ process: (_k, ctx) => [ctx.window.start] });
    });
    expect(true).toBe(true);
  });
});
