var __defProp = Object.defineProperty;
var __name = (target, value) => __defProp(target, "name", { value, configurable: true });

// bench/nexmark/job.ts
import { defineJob, WatermarkStrategy } from "file:///work/main/dist/index.js";

// bench/workloads.ts
import { writeSync } from "node:fs";
import { threadId } from "node:worker_threads";
var PARTIAL_MARK = "@@weir-bench-partial ";
var instances = 0;
function partialSink(acc) {
  const instance = `${process.pid}.${threadId}.${instances++}`;
  return {
    invoke(v) {
      acc.add(v);
    },
    finish() {
      writeSync(2, PARTIAL_MARK + JSON.stringify({ instance, result: acc.result(), at: performance.timeOrigin + performance.now() }) + "\n");
    }
  };
}
__name(partialSink, "partialSink");

// bench/nexmark/check.ts
var QUERY_IDS = ["q0", "q1", "q2", "q3", "q4", "q5", "q7", "q8", "q9", "q11", "q14"];
function mixInt(h, x) {
  const lo = x >>> 0;
  const hi = Math.floor(x / 4294967296) >>> 0;
  h = Math.imul(h ^ lo, 16777619);
  return Math.imul(h ^ hi, 16777619);
}
__name(mixInt, "mixInt");
var mixNum = /* @__PURE__ */ __name((h, x) => mixInt(h, Math.round(x * 1e3)), "mixNum");
function mixStr(h, s) {
  for (let k = 0; k < s.length; k++) h = Math.imul(h ^ s.charCodeAt(k), 16777619);
  return Math.imul(h ^ 255, 16777619);
}
__name(mixStr, "mixStr");
function fmix(h) {
  h ^= h >>> 16;
  h = Math.imul(h, 2246822507);
  h ^= h >>> 13;
  h = Math.imul(h, 3266489909);
  return (h ^ h >>> 16) >>> 0;
}
__name(fmix, "fmix");
var SEED_HASH = 2166136261;
var bidLike = /* @__PURE__ */ __name((o) => mixStr(mixInt(mixNum(mixInt(mixInt(SEED_HASH, o.auction), o.bidder), o.price), o.dateTime), o.extra), "bidLike");
var HASH = {
  q0: bidLike,
  q1: bidLike,
  q2: /* @__PURE__ */ __name((o) => mixInt(mixInt(SEED_HASH, o.auction), o.price), "q2"),
  q3: /* @__PURE__ */ __name((o) => mixInt(mixStr(mixStr(mixStr(SEED_HASH, o.name), o.city), o.state), o.id), "q3"),
  q4: /* @__PURE__ */ __name((o) => mixNum(mixInt(mixInt(mixInt(SEED_HASH, o.category), o.sum), o.count), o.avg), "q4"),
  q5: /* @__PURE__ */ __name((o) => mixInt(mixInt(mixInt(SEED_HASH, o.auction), o.num), o.start), "q5"),
  q7: bidLike,
  q8: /* @__PURE__ */ __name((o) => mixInt(mixStr(mixInt(SEED_HASH, o.id), o.name), o.start), "q8"),
  q9: /* @__PURE__ */ __name((o) => [o.seller, o.category, o.dateTime, o.expires, o.bidder, o.price, o.bidTime].reduce(mixInt, mixInt(SEED_HASH, o.id)), "q9"),
  q11: /* @__PURE__ */ __name((o) => mixInt(mixInt(mixInt(mixInt(SEED_HASH, o.bidder), o.count), o.start), o.end), "q11"),
  q14: /* @__PURE__ */ __name((o) => mixStr(mixStr(mixInt(mixNum(mixInt(mixInt(SEED_HASH, o.auction), o.bidder), o.price), o.dateTime), o.bidTimeType), o.extra), "q14")
};
var CHANGELOG_KEY = {
  q4: /* @__PURE__ */ __name((o) => o.category, "q4")
};
var OutputDigest = class {
  constructor(query) {
    this.query = query;
    this.hash = HASH[query];
    this.key = CHANGELOG_KEY[query];
  }
  query;
  static {
    __name(this, "OutputDigest");
  }
  records = 0;
  a = 0;
  b = 0;
  last = /* @__PURE__ */ new Map();
  hash;
  key;
  add(o) {
    this.records++;
    if (this.key !== void 0) this.last.set(this.key(o), o);
    else this.addHash(this.hash(o));
  }
  addHash(h) {
    this.a += fmix(h) & 16777215;
    this.b += fmix(h ^ 2654435769) & 16777215;
  }
  result() {
    if (this.key === void 0) return { records: this.records, hashA: this.a, hashB: this.b };
    let a = 0;
    let b = 0;
    for (const o of this.last.values()) {
      const h = this.hash(o);
      a += fmix(h) & 16777215;
      b += fmix(h ^ 2654435769) & 16777215;
    }
    return { records: this.records, keys: this.last.size, hashA: a, hashB: b };
  }
};

// bench/nexmark/generator.ts
import { createWriteStream } from "node:fs";
import { Rng } from "file:///work/main/dist/index.js";
var SEED = 2026;
var BASE_TIME = 17e11;
var FIRST_PERSON_ID = 1e3;
var FIRST_AUCTION_ID = 1e3;
var FIRST_CATEGORY_ID = 10;
var NUM_CATEGORIES = 5;
var PERSON_PROPORTION = 1;
var AUCTION_PROPORTION = 3;
var BID_PROPORTION = 46;
var TOTAL_PROPORTION = PERSON_PROPORTION + AUCTION_PROPORTION + BID_PROPORTION;
var NUM_ACTIVE_PEOPLE = 1e3;
var NUM_IN_FLIGHT_AUCTIONS = 100;
var PERSON_ID_LEAD = 10;
var AUCTION_ID_LEAD = 10;
var HOT_STRIDE = 100;
var HOT_AUCTION_RATIO = 2;
var HOT_BIDDERS_RATIO = 4;
var HOT_SELLERS_RATIO = 4;
var EVENTS_PER_SECOND = 1e4;
var OUT_OF_ORDER_GROUP = 1e3;
var MAX_DISORDER_MS = OUT_OF_ORDER_GROUP * 1e3 / EVENTS_PER_SECOND;
var OUT_OF_ORDERNESS_MS = 1e3;
var FIRST_NAMES = ["Peter", "Paul", "Luke", "John", "Saul", "Vicky", "Kate", "Julie", "Sarah", "Deiter", "Walter"];
var LAST_NAMES = ["Shultz", "Abrams", "Spencer", "White", "Bartels", "Walton", "Smith", "Jones", "Noris"];
var US_CITIES = ["Phoenix", "Los Angeles", "San Francisco", "Boise", "Portland", "Bend", "Redmond", "Seattle", "Kent", "Cheyenne"];
var US_STATES = ["AZ", "CA", "ID", "OR", "WA", "WY"];
var HOT_CHANNELS = ["Google", "Facebook", "Baidu", "Apple"];
var HOT_URLS = HOT_CHANNELS.map((c) => `https://www.nexmark.com/${c.toLowerCase()}/item.htm?query=1`);
var LETTERS = "abcdefghijklmnopqrstuvwxyz";
function eventIdAt(i) {
  const base = i - i % OUT_OF_ORDER_GROUP;
  return base + i * 953 % OUT_OF_ORDER_GROUP;
}
__name(eventIdAt, "eventIdAt");
var timestampForEvent = /* @__PURE__ */ __name((id) => BASE_TIME + Math.floor(id / (EVENTS_PER_SECOND / 1e3)), "timestampForEvent");
function lastBase0PersonId(id) {
  const epoch = Math.floor(id / TOTAL_PROPORTION);
  let offset = id % TOTAL_PROPORTION;
  if (offset >= PERSON_PROPORTION) offset = PERSON_PROPORTION - 1;
  return epoch * PERSON_PROPORTION + offset;
}
__name(lastBase0PersonId, "lastBase0PersonId");
function lastBase0AuctionId(id) {
  let epoch = Math.floor(id / TOTAL_PROPORTION);
  let offset = id % TOTAL_PROPORTION;
  if (offset < PERSON_PROPORTION) {
    epoch--;
    offset = AUCTION_PROPORTION - 1;
  } else if (offset >= PERSON_PROPORTION + AUCTION_PROPORTION) {
    offset = AUCTION_PROPORTION - 1;
  } else {
    offset -= PERSON_PROPORTION;
  }
  return epoch * AUCTION_PROPORTION + offset;
}
__name(lastBase0AuctionId, "lastBase0AuctionId");
function nextBase0PersonId(id, rng) {
  const numPeople = lastBase0PersonId(id) + 1;
  const active = Math.min(numPeople, NUM_ACTIVE_PEOPLE);
  return numPeople - active + rng.int(active + PERSON_ID_LEAD);
}
__name(nextBase0PersonId, "nextBase0PersonId");
function nextBase0AuctionId(id, rng) {
  const max = lastBase0AuctionId(id);
  const min = Math.max(max - NUM_IN_FLIGHT_AUCTIONS, 0);
  return min + rng.int(max - min + 1 + AUCTION_ID_LEAD);
}
__name(nextBase0AuctionId, "nextBase0AuctionId");
var nextPrice = /* @__PURE__ */ __name((rng) => Math.round(Math.pow(10, rng.next() * 6) * 100), "nextPrice");
var CODES = [];
function str(rng, maxLength) {
  const n = 1 + rng.int(maxLength);
  CODES.length = n;
  for (let k = 0; k < n; k++) CODES[k] = LETTERS.charCodeAt(rng.int(26));
  return String.fromCharCode.apply(null, CODES);
}
__name(str, "str");
function auctionLengthMs(id, timestamp, rng) {
  const eventsForAuctions = Math.floor(NUM_IN_FLIGHT_AUCTIONS * TOTAL_PROPORTION / AUCTION_PROPORTION);
  const horizon = timestampForEvent(id + eventsForAuctions) - timestamp;
  return 1 + rng.int(Math.max(horizon * 2, 1));
}
__name(auctionLengthMs, "auctionLengthMs");
function person(id, ts, rng) {
  return {
    kind: "person",
    id: lastBase0PersonId(id) + FIRST_PERSON_ID,
    name: FIRST_NAMES[rng.int(FIRST_NAMES.length)] + " " + LAST_NAMES[rng.int(LAST_NAMES.length)],
    emailAddress: str(rng, 7) + "@" + str(rng, 5) + ".com",
    creditCard: `${1e3 + rng.int(9e3)} ${1e3 + rng.int(9e3)} ${1e3 + rng.int(9e3)} ${1e3 + rng.int(9e3)}`,
    city: US_CITIES[rng.int(US_CITIES.length)],
    state: US_STATES[rng.int(US_STATES.length)],
    dateTime: ts,
    extra: ""
  };
}
__name(person, "person");
function auction(id, ts, rng) {
  const seller = rng.int(HOT_SELLERS_RATIO) > 0 ? Math.floor(lastBase0PersonId(id) / HOT_STRIDE) * HOT_STRIDE : nextBase0PersonId(id, rng);
  const initialBid = nextPrice(rng);
  return {
    kind: "auction",
    id: lastBase0AuctionId(id) + FIRST_AUCTION_ID,
    itemName: str(rng, 20),
    description: str(rng, 100),
    initialBid,
    reserve: initialBid + nextPrice(rng),
    dateTime: ts,
    expires: ts + auctionLengthMs(id, ts, rng),
    seller: seller + FIRST_PERSON_ID,
    category: FIRST_CATEGORY_ID + rng.int(NUM_CATEGORIES),
    extra: ""
  };
}
__name(auction, "auction");
function bid(id, ts, rng) {
  const auctionId = rng.int(HOT_AUCTION_RATIO) > 0 ? Math.floor(lastBase0AuctionId(id) / HOT_STRIDE) * HOT_STRIDE : nextBase0AuctionId(id, rng);
  const bidder = rng.int(HOT_BIDDERS_RATIO) > 0 ? Math.floor(lastBase0PersonId(id) / HOT_STRIDE) * HOT_STRIDE + 1 : nextBase0PersonId(id, rng);
  const price = nextPrice(rng);
  const hot = rng.int(10) > 0;
  const c = rng.int(HOT_CHANNELS.length);
  const channelNo = hot ? 0 : rng.int(1e4);
  return {
    kind: "bid",
    auction: auctionId + FIRST_AUCTION_ID,
    bidder: bidder + FIRST_PERSON_ID,
    price,
    channel: hot ? HOT_CHANNELS[c] : `channel-${channelNo}`,
    url: hot ? HOT_URLS[c] : `https://www.nexmark.com/channel-${channelNo}/item.htm?query=1`,
    dateTime: ts,
    extra: ""
  };
}
__name(bid, "bid");
function eventById(id, rng) {
  rng.reseed(SEED, id);
  const ts = timestampForEvent(id);
  const offset = id % TOTAL_PROPORTION;
  if (offset < PERSON_PROPORTION) return person(id, ts, rng);
  if (offset < PERSON_PROPORTION + AUCTION_PROPORTION) return auction(id, ts, rng);
  return bid(id, ts, rng);
}
__name(eventById, "eventById");
var nexmarkEvent = /* @__PURE__ */ __name((i, rng) => eventById(eventIdAt(i), rng), "nexmarkEvent");
function checkEventCount(n, where) {
  if (!Number.isSafeInteger(n) || n <= 0 || n % OUT_OF_ORDER_GROUP !== 0) {
    throw new RangeError(`${where}: the event count must be a positive multiple of ${OUT_OF_ORDER_GROUP}, got ${n}`);
  }
  return n;
}
__name(checkEventCount, "checkEventCount");

// bench/nexmark/queries.ts
import {
  EventTimeSessionWindows,
  SlidingEventTimeWindows,
  TumblingEventTimeWindows,
  ValueStateDescriptor
} from "file:///work/main/dist/index.js";
var WINDOW_MS = 1e4;
var count = /* @__PURE__ */ __name(() => ({
  createAccumulator: /* @__PURE__ */ __name(() => 0, "createAccumulator"),
  add: /* @__PURE__ */ __name((_v, acc) => acc + 1, "add"),
  getResult: /* @__PURE__ */ __name((acc) => acc, "getResult"),
  merge: /* @__PURE__ */ __name((a, b) => a + b, "merge"),
  commutative: true
}), "count");
function bidTimeType(dateTime) {
  const hour = new Date(dateTime).getUTCHours();
  return hour >= 8 && hour <= 18 ? "dayTime" : hour <= 6 || hour >= 20 ? "nightTime" : "otherTime";
}
__name(bidTimeType, "bidTimeType");
var beats = /* @__PURE__ */ __name((b, best) => best === void 0 || b.price > best.price || b.price === best.price && (b.dateTime < best.dateTime || b.dateTime === best.dateTime && b.bidder < best.bidder), "beats");
var WinningBids = class {
  static {
    __name(this, "WinningBids");
  }
  entry;
  open(ctx) {
    this.entry = ctx.getState(new ValueStateDescriptor("auction, best bid, early bids"));
  }
  processElement1(a, ctx) {
    const s = this.entry.value() ?? {};
    s.auction = a;
    if (s.early !== void 0) {
      for (const b of s.early) this.offer(s, a, b);
      s.early = void 0;
    }
    this.entry.update(s);
    ctx.timerService.registerEventTimeTimer(a.expires);
  }
  processElement2(b) {
    const s = this.entry.value();
    if (s === void 0) {
      this.entry.update({ early: [b] });
      return;
    }
    if (s.closed === true) return;
    if (s.auction !== void 0) {
      if (this.offer(s, s.auction, b)) this.entry.update(s);
    } else {
      (s.early ??= []).push(b);
      this.entry.update(s);
    }
  }
  /** Whether b became the best bid. */
  offer(s, a, b) {
    if (b.dateTime < a.dateTime || b.dateTime > a.expires || !beats(b, s.best)) return false;
    s.best = b;
    return true;
  }
  onTimer(_ts, _ctx, out) {
    const s = this.entry.value();
    const a = s.auction;
    const b = s.best;
    if (b !== void 0) {
      out.collect({ id: a.id, seller: a.seller, category: a.category, dateTime: a.dateTime, expires: a.expires, bidder: b.bidder, price: b.price, bidTime: b.dateTime });
    }
    this.entry.update({ closed: true });
  }
};
function winningBids(auctions, bids, q) {
  const cores = bids.map((b) => ({ auction: b.auction, bidder: b.bidder, price: b.price, dateTime: b.dateTime }));
  return auctions.connect(cores).keyBy((a) => a.id, (b) => b.auction).process(new WinningBids()).uid(`${q} winning bids`);
}
__name(winningBids, "winningBids");
var LocalItems = class {
  static {
    __name(this, "LocalItems");
  }
  person;
  waiting;
  open(ctx) {
    this.person = ctx.getState(new ValueStateDescriptor("person"));
    this.waiting = ctx.getState(new ValueStateDescriptor("auctions waiting for their seller"));
  }
  processElement1(p, _ctx, out) {
    this.person.update(p);
    const waiting = this.waiting.value();
    if (waiting !== void 0) {
      for (const id of waiting) out.collect({ name: p.name, city: p.city, state: p.state, id });
      this.waiting.clear();
    }
  }
  processElement2(a, _ctx, out) {
    const p = this.person.value();
    if (p !== void 0) out.collect({ name: p.name, city: p.city, state: p.state, id: a.id });
    else {
      const waiting = this.waiting.value() ?? [];
      waiting.push(a.id);
      this.waiting.update(waiting);
    }
  }
};
var AveragePerCategory = class {
  static {
    __name(this, "AveragePerCategory");
  }
  sum;
  open(ctx) {
    this.sum = ctx.getState(new ValueStateDescriptor("sum and count"));
  }
  processElement(w, _ctx, out) {
    const [s, c] = this.sum.value() ?? [0, 0];
    const sum = s + w.price;
    const n = c + 1;
    this.sum.update([sum, n]);
    out.collect({ category: w.category, sum, count: n, avg: sum / n });
  }
};
function buildQuery(q, events) {
  const bids = /* @__PURE__ */ __name(() => events.filter((e) => e.kind === "bid"), "bids");
  const auctions = /* @__PURE__ */ __name(() => events.filter((e) => e.kind === "auction"), "auctions");
  const persons = /* @__PURE__ */ __name(() => events.filter((e) => e.kind === "person"), "persons");
  switch (q) {
    case "q0":
      return bids().map((b) => ({ auction: b.auction, bidder: b.bidder, price: b.price, dateTime: b.dateTime, extra: b.extra }));
    case "q1":
      return bids().map((b) => ({ auction: b.auction, bidder: b.bidder, price: 0.908 * b.price, dateTime: b.dateTime, extra: b.extra }));
    case "q2":
      return bids().filter((b) => b.auction % 123 === 0).map((b) => ({ auction: b.auction, price: b.price }));
    case "q3": {
      const sellers = persons().filter((p) => p.state === "OR" || p.state === "ID" || p.state === "CA");
      const items = auctions().filter((a) => a.category === 10);
      return sellers.connect(items).keyBy((p) => p.id, (a) => a.seller).process(new LocalItems()).uid("q3 join");
    }
    case "q4":
      return winningBids(auctions(), bids(), q).keyBy((w) => w.category).process(new AveragePerCategory()).uid("q4 average");
    case "q5":
      return bids().map((b) => b.auction).keyBy((auction2) => auction2).window(SlidingEventTimeWindows.of(WINDOW_MS, 2e3)).aggregate(count(), { process: /* @__PURE__ */ __name((auction2, ctx, [num], out) => out.collect({ auction: auction2, num, start: ctx.window.start }), "process") }).uid("q5 counts").keyBy((c) => c.start).window(TumblingEventTimeWindows.of(2e3)).process({
        process(_start, _ctx, counts, out) {
          let max = 0;
          for (const c of counts) if (c.num > max) max = c.num;
          for (const c of counts) if (c.num >= max) out.collect(c);
        }
      }).uid("q5 hottest");
    case "q7":
      return bids().map((b) => ({ auction: b.auction, bidder: b.bidder, price: b.price, dateTime: b.dateTime, extra: b.extra })).windowAll(TumblingEventTimeWindows.of(WINDOW_MS)).aggregate({
        createAccumulator: /* @__PURE__ */ __name(() => ({ max: -1, bids: [] }), "createAccumulator"),
        add(b, acc) {
          if (b.price > acc.max) {
            acc.max = b.price;
            acc.bids = [b];
          } else if (b.price === acc.max) acc.bids.push(b);
          return acc;
        },
        getResult: /* @__PURE__ */ __name((acc) => acc, "getResult")
      }, {
        process(_ctx, [acc], out) {
          for (const b of acc.bids) out.collect(b);
        }
      }).uid("q7 highest");
    case "q8":
      return persons().map((p) => ({ id: p.id, name: p.name })).coGroup(auctions().map((a) => a.seller)).where((p) => p.id).equalTo((seller) => seller).window(TumblingEventTimeWindows.of(WINDOW_MS)).apply((ps, as, out, w) => {
        if (ps.length > 0 && as.length > 0) for (const p of ps) out.collect({ id: p.id, name: p.name, start: w.start });
      }).uid("q8 new sellers");
    case "q9":
      return winningBids(auctions(), bids(), q);
    case "q11":
      return bids().map((b) => b.bidder).keyBy((bidder) => bidder).window(EventTimeSessionWindows.withGap(WINDOW_MS)).aggregate(count(), { process: /* @__PURE__ */ __name((bidder, ctx, [n], out) => out.collect({ bidder, count: n, start: ctx.window.start, end: ctx.window.end }), "process") }).uid("q11 sessions");
    case "q14":
      return bids().filter((b) => {
        const euros = 0.908 * b.price;
        return euros > 1e6 && euros < 5e7;
      }).map((b) => ({ auction: b.auction, bidder: b.bidder, price: 0.908 * b.price, bidTimeType: bidTimeType(b.dateTime), dateTime: b.dateTime, extra: b.extra }));
  }
}
__name(buildQuery, "buildQuery");

// bench/nexmark/job.ts
var job_default = defineJob((env, args) => {
  const collect = args[3] === "collect";
  const q = args[0];
  if (!QUERY_IDS.includes(q) && !(collect && q === "all")) {
    throw new RangeError(`nexmark job: first argument must be one of ${QUERY_IDS.join(", ")}${collect ? ", all" : ""}, got ${String(args[0])}`);
  }
  const n = checkEventCount(Number(args[1]), "nexmark job, second argument");
  const file = args[2] === void 0 || args[2] === "-" ? void 0 : args[2];
  env.setJobName(`nexmark ${q}`);
  const watermarks = WatermarkStrategy.forBoundedOutOfOrderness(OUT_OF_ORDERNESS_MS).withTimestampAssigner((e) => e.dateTime);
  const events = file === void 0 ? env.fromGenerator(nexmarkEvent, { count: n, seed: SEED, watermarks, name: "nexmark generator" }) : env.fromFile(file, { watermarks, name: "nexmark events file", ...process.env.NEXMARK_SPLIT_SIZE ? { splitSize: Number(process.env.NEXMARK_SPLIT_SIZE) } : {} });
  if (collect) for (const query of q === "all" ? QUERY_IDS : [q]) buildQuery(query, events).collect(query);
  else buildQuery(q, events).addSink(partialSink(new OutputDigest(q))).name(`check ${q}`);
});
export {
  job_default as default
};
//# sourceMappingURL=data:application/json;base64,ewogICJ2ZXJzaW9uIjogMywKICAic291cmNlcyI6IFsiLi4vLi4vd29yay9tYWluL2JlbmNoL25leG1hcmsvam9iLnRzIiwgIi4uLy4uL3dvcmsvbWFpbi9iZW5jaC93b3JrbG9hZHMudHMiLCAiLi4vLi4vd29yay9tYWluL2JlbmNoL25leG1hcmsvY2hlY2sudHMiLCAiLi4vLi4vd29yay9tYWluL2JlbmNoL25leG1hcmsvZ2VuZXJhdG9yLnRzIiwgIi4uLy4uL3dvcmsvbWFpbi9iZW5jaC9uZXhtYXJrL3F1ZXJpZXMudHMiXSwKICAibWFwcGluZ3MiOiAiOzs7O0FBU0EsU0FBUyxXQUFXLHlCQUEwQzs7O0FDRDlELFNBQVMsaUJBQWlCO0FBQzFCLFNBQVMsZ0JBQWdCO0FBb1FsQixJQUFNLGVBQWU7QUF3RDVCLElBQUksWUFBWTtBQVVULFNBQVMsWUFBZSxLQUE2RDtBQUMxRixRQUFNLFdBQVcsR0FBRyxRQUFRLEdBQUcsSUFBSSxRQUFRLElBQUksV0FBVztBQUMxRCxTQUFPO0FBQUEsSUFDTCxPQUFPLEdBQU07QUFDWCxVQUFJLElBQUksQ0FBQztBQUFBLElBQ1g7QUFBQSxJQUNBLFNBQVM7QUFFUCxnQkFBVSxHQUFHLGVBQWUsS0FBSyxVQUFVLEVBQUUsVUFBVSxRQUFRLElBQUksT0FBTyxHQUFHLElBQUksWUFBWSxhQUFhLFlBQVksSUFBSSxFQUFFLENBQUMsSUFBSSxJQUFJO0FBQUEsSUFDdkk7QUFBQSxFQUNGO0FBQ0Y7QUFYZ0I7OztBQ3JVVCxJQUFNLFlBQVksQ0FBQyxNQUFNLE1BQU0sTUFBTSxNQUFNLE1BQU0sTUFBTSxNQUFNLE1BQU0sTUFBTSxPQUFPLEtBQUs7QUFvQjVGLFNBQVMsT0FBTyxHQUFXLEdBQW1CO0FBRTVDLFFBQU0sS0FBSyxNQUFNO0FBQ2pCLFFBQU0sS0FBSyxLQUFLLE1BQU0sSUFBSSxVQUFVLE1BQU07QUFDMUMsTUFBSSxLQUFLLEtBQUssSUFBSSxJQUFJLFFBQVU7QUFDaEMsU0FBTyxLQUFLLEtBQUssSUFBSSxJQUFJLFFBQVU7QUFDckM7QUFOUztBQVFULElBQU0sU0FBUyx3QkFBQyxHQUFXLE1BQXNCLE9BQU8sR0FBRyxLQUFLLE1BQU0sSUFBSSxHQUFJLENBQUMsR0FBaEU7QUFDZixTQUFTLE9BQU8sR0FBVyxHQUFtQjtBQUM1QyxXQUFTLElBQUksR0FBRyxJQUFJLEVBQUUsUUFBUSxJQUFLLEtBQUksS0FBSyxLQUFLLElBQUksRUFBRSxXQUFXLENBQUMsR0FBRyxRQUFVO0FBQ2hGLFNBQU8sS0FBSyxLQUFLLElBQUksS0FBTSxRQUFVO0FBQ3ZDO0FBSFM7QUFJVCxTQUFTLEtBQUssR0FBbUI7QUFDL0IsT0FBSyxNQUFNO0FBQ1gsTUFBSSxLQUFLLEtBQUssR0FBRyxVQUFVO0FBQzNCLE9BQUssTUFBTTtBQUNYLE1BQUksS0FBSyxLQUFLLEdBQUcsVUFBVTtBQUMzQixVQUFRLElBQUssTUFBTSxRQUFTO0FBQzlCO0FBTlM7QUFRVCxJQUFNLFlBQVk7QUFDbEIsSUFBTSxVQUFVLHdCQUFDLE1BQWEsT0FBTyxPQUFPLE9BQU8sT0FBTyxPQUFPLFdBQVcsRUFBRSxPQUFPLEdBQUcsRUFBRSxNQUFNLEdBQUcsRUFBRSxLQUFLLEdBQUcsRUFBRSxRQUFRLEdBQUcsRUFBRSxLQUFLLEdBQWpIO0FBR1QsSUFBTSxPQUF3RDtBQUFBLEVBQ25FLElBQUk7QUFBQSxFQUNKLElBQUk7QUFBQSxFQUNKLElBQUksd0JBQUMsTUFBYSxPQUFPLE9BQU8sV0FBVyxFQUFFLE9BQU8sR0FBRyxFQUFFLEtBQUssR0FBMUQ7QUFBQSxFQUNKLElBQUksd0JBQUMsTUFBYSxPQUFPLE9BQU8sT0FBTyxPQUFPLFdBQVcsRUFBRSxJQUFJLEdBQUcsRUFBRSxJQUFJLEdBQUcsRUFBRSxLQUFLLEdBQUcsRUFBRSxFQUFFLEdBQXJGO0FBQUEsRUFDSixJQUFJLHdCQUFDLE1BQWEsT0FBTyxPQUFPLE9BQU8sT0FBTyxXQUFXLEVBQUUsUUFBUSxHQUFHLEVBQUUsR0FBRyxHQUFHLEVBQUUsS0FBSyxHQUFHLEVBQUUsR0FBRyxHQUF6RjtBQUFBLEVBQ0osSUFBSSx3QkFBQyxNQUFhLE9BQU8sT0FBTyxPQUFPLFdBQVcsRUFBRSxPQUFPLEdBQUcsRUFBRSxHQUFHLEdBQUcsRUFBRSxLQUFLLEdBQXpFO0FBQUEsRUFDSixJQUFJO0FBQUEsRUFDSixJQUFJLHdCQUFDLE1BQWEsT0FBTyxPQUFPLE9BQU8sV0FBVyxFQUFFLEVBQUUsR0FBRyxFQUFFLElBQUksR0FBRyxFQUFFLEtBQUssR0FBckU7QUFBQSxFQUNKLElBQUksd0JBQUMsTUFBYSxDQUFDLEVBQUUsUUFBUSxFQUFFLFVBQVUsRUFBRSxVQUFVLEVBQUUsU0FBUyxFQUFFLFFBQVEsRUFBRSxPQUFPLEVBQUUsT0FBTyxFQUFFLE9BQU8sUUFBUSxPQUFPLFdBQVcsRUFBRSxFQUFFLENBQUMsR0FBaEk7QUFBQSxFQUNKLEtBQUssd0JBQUMsTUFBYyxPQUFPLE9BQU8sT0FBTyxPQUFPLFdBQVcsRUFBRSxNQUFNLEdBQUcsRUFBRSxLQUFLLEdBQUcsRUFBRSxLQUFLLEdBQUcsRUFBRSxHQUFHLEdBQTFGO0FBQUEsRUFDTCxLQUFLLHdCQUFDLE1BQWMsT0FBTyxPQUFPLE9BQU8sT0FBTyxPQUFPLE9BQU8sV0FBVyxFQUFFLE9BQU8sR0FBRyxFQUFFLE1BQU0sR0FBRyxFQUFFLEtBQUssR0FBRyxFQUFFLFFBQVEsR0FBRyxFQUFFLFdBQVcsR0FBRyxFQUFFLEtBQUssR0FBekk7QUFDUDtBQUdPLElBQU0sZ0JBQTJFO0FBQUEsRUFDdEYsSUFBSSx3QkFBQyxNQUFhLEVBQUUsVUFBaEI7QUFDTjtBQUdPLElBQU0sZUFBTixNQUFtRDtBQUFBLEVBUXhELFlBQXFCLE9BQWdCO0FBQWhCO0FBQ25CLFNBQUssT0FBTyxLQUFLLEtBQUs7QUFDdEIsU0FBSyxNQUFNLGNBQWMsS0FBSztBQUFBLEVBQ2hDO0FBQUEsRUFIcUI7QUFBQSxFQW5GdkIsT0EyRTBEO0FBQUE7QUFBQTtBQUFBLEVBQ2hELFVBQVU7QUFBQSxFQUNWLElBQUk7QUFBQSxFQUNKLElBQUk7QUFBQSxFQUNLLE9BQU8sb0JBQUksSUFBOEI7QUFBQSxFQUN6QztBQUFBLEVBQ0E7QUFBQSxFQU9qQixJQUFJLEdBQWtCO0FBQ3BCLFNBQUs7QUFDTCxRQUFJLEtBQUssUUFBUSxPQUFXLE1BQUssS0FBSyxJQUFJLEtBQUssSUFBSSxDQUFDLEdBQUcsQ0FBQztBQUFBLFFBQ25ELE1BQUssUUFBUSxLQUFLLEtBQUssQ0FBQyxDQUFDO0FBQUEsRUFDaEM7QUFBQSxFQUVRLFFBQVEsR0FBaUI7QUFDL0IsU0FBSyxLQUFLLEtBQUssQ0FBQyxJQUFJO0FBQ3BCLFNBQUssS0FBSyxLQUFLLElBQUksVUFBVSxJQUFJO0FBQUEsRUFDbkM7QUFBQSxFQUVBLFNBQWlCO0FBQ2YsUUFBSSxLQUFLLFFBQVEsT0FBVyxRQUFPLEVBQUUsU0FBUyxLQUFLLFNBQVMsT0FBTyxLQUFLLEdBQUcsT0FBTyxLQUFLLEVBQUU7QUFDekYsUUFBSSxJQUFJO0FBQ1IsUUFBSSxJQUFJO0FBQ1IsZUFBVyxLQUFLLEtBQUssS0FBSyxPQUFPLEdBQUc7QUFDbEMsWUFBTSxJQUFJLEtBQUssS0FBSyxDQUFDO0FBQ3JCLFdBQUssS0FBSyxDQUFDLElBQUk7QUFDZixXQUFLLEtBQUssSUFBSSxVQUFVLElBQUk7QUFBQSxJQUM5QjtBQUNBLFdBQU8sRUFBRSxTQUFTLEtBQUssU0FBUyxNQUFNLEtBQUssS0FBSyxNQUFNLE9BQU8sR0FBRyxPQUFPLEVBQUU7QUFBQSxFQUMzRTtBQUNGOzs7QUN0RkEsU0FBUyx5QkFBeUI7QUFDbEMsU0FBUyxXQUFXO0FBR2IsSUFBTSxPQUFPO0FBQ2IsSUFBTSxZQUFZO0FBQ2xCLElBQU0sa0JBQWtCO0FBQ3hCLElBQU0sbUJBQW1CO0FBQ3pCLElBQU0sb0JBQW9CO0FBQzFCLElBQU0saUJBQWlCO0FBQ3ZCLElBQU0sb0JBQW9CO0FBQzFCLElBQU0scUJBQXFCO0FBQzNCLElBQU0saUJBQWlCO0FBQ3ZCLElBQU0sbUJBQW1CLG9CQUFvQixxQkFBcUI7QUFDbEUsSUFBTSxvQkFBb0I7QUFDMUIsSUFBTSx5QkFBeUI7QUFDL0IsSUFBTSxpQkFBaUI7QUFDdkIsSUFBTSxrQkFBa0I7QUFFeEIsSUFBTSxhQUFhO0FBRW5CLElBQU0sb0JBQW9CO0FBQzFCLElBQU0sb0JBQW9CO0FBQzFCLElBQU0sb0JBQW9CO0FBRTFCLElBQU0sb0JBQW9CO0FBRTFCLElBQU0scUJBQXFCO0FBRTNCLElBQU0sa0JBQW1CLHFCQUFxQixNQUFRO0FBRXRELElBQU0sc0JBQXNCO0FBRW5DLElBQU0sY0FBYyxDQUFDLFNBQVMsUUFBUSxRQUFRLFFBQVEsUUFBUSxTQUFTLFFBQVEsU0FBUyxTQUFTLFVBQVUsUUFBUTtBQUNuSCxJQUFNLGFBQWEsQ0FBQyxVQUFVLFVBQVUsV0FBVyxTQUFTLFdBQVcsVUFBVSxTQUFTLFNBQVMsT0FBTztBQUMxRyxJQUFNLFlBQVksQ0FBQyxXQUFXLGVBQWUsaUJBQWlCLFNBQVMsWUFBWSxRQUFRLFdBQVcsV0FBVyxRQUFRLFVBQVU7QUFDbkksSUFBTSxZQUFZLENBQUMsTUFBTSxNQUFNLE1BQU0sTUFBTSxNQUFNLElBQUk7QUFDckQsSUFBTSxlQUFlLENBQUMsVUFBVSxZQUFZLFNBQVMsT0FBTztBQUM1RCxJQUFNLFdBQVcsYUFBYSxJQUFJLENBQUMsTUFBTSwyQkFBMkIsRUFBRSxZQUFZLENBQUMsbUJBQW1CO0FBQ3RHLElBQU0sVUFBVTtBQUdULFNBQVMsVUFBVSxHQUFtQjtBQUMzQyxRQUFNLE9BQU8sSUFBSyxJQUFJO0FBQ3RCLFNBQU8sT0FBUyxJQUFJLE1BQU87QUFDN0I7QUFIZ0I7QUFLVCxJQUFNLG9CQUFvQix3QkFBQyxPQUF1QixZQUFZLEtBQUssTUFBTSxNQUFNLG9CQUFvQixJQUFLLEdBQTlFO0FBRzFCLFNBQVMsa0JBQWtCLElBQW9CO0FBQ3BELFFBQU0sUUFBUSxLQUFLLE1BQU0sS0FBSyxnQkFBZ0I7QUFDOUMsTUFBSSxTQUFTLEtBQUs7QUFDbEIsTUFBSSxVQUFVLGtCQUFtQixVQUFTLG9CQUFvQjtBQUM5RCxTQUFPLFFBQVEsb0JBQW9CO0FBQ3JDO0FBTGdCO0FBT1QsU0FBUyxtQkFBbUIsSUFBb0I7QUFDckQsTUFBSSxRQUFRLEtBQUssTUFBTSxLQUFLLGdCQUFnQjtBQUM1QyxNQUFJLFNBQVMsS0FBSztBQUNsQixNQUFJLFNBQVMsbUJBQW1CO0FBQzlCO0FBQ0EsYUFBUyxxQkFBcUI7QUFBQSxFQUNoQyxXQUFXLFVBQVUsb0JBQW9CLG9CQUFvQjtBQUMzRCxhQUFTLHFCQUFxQjtBQUFBLEVBQ2hDLE9BQU87QUFDTCxjQUFVO0FBQUEsRUFDWjtBQUNBLFNBQU8sUUFBUSxxQkFBcUI7QUFDdEM7QUFaZ0I7QUFjaEIsU0FBUyxrQkFBa0IsSUFBWSxLQUFrQjtBQUN2RCxRQUFNLFlBQVksa0JBQWtCLEVBQUUsSUFBSTtBQUMxQyxRQUFNLFNBQVMsS0FBSyxJQUFJLFdBQVcsaUJBQWlCO0FBQ3BELFNBQU8sWUFBWSxTQUFTLElBQUksSUFBSSxTQUFTLGNBQWM7QUFDN0Q7QUFKUztBQU1ULFNBQVMsbUJBQW1CLElBQVksS0FBa0I7QUFDeEQsUUFBTSxNQUFNLG1CQUFtQixFQUFFO0FBQ2pDLFFBQU0sTUFBTSxLQUFLLElBQUksTUFBTSx3QkFBd0IsQ0FBQztBQUNwRCxTQUFPLE1BQU0sSUFBSSxJQUFJLE1BQU0sTUFBTSxJQUFJLGVBQWU7QUFDdEQ7QUFKUztBQU1ULElBQU0sWUFBWSx3QkFBQyxRQUFxQixLQUFLLE1BQU0sS0FBSyxJQUFJLElBQUksSUFBSSxLQUFLLElBQUksQ0FBQyxJQUFJLEdBQUcsR0FBbkU7QUFHbEIsSUFBTSxRQUFrQixDQUFDO0FBT3pCLFNBQVMsSUFBSSxLQUFVLFdBQTJCO0FBQ2hELFFBQU0sSUFBSSxJQUFJLElBQUksSUFBSSxTQUFTO0FBQy9CLFFBQU0sU0FBUztBQUNmLFdBQVMsSUFBSSxHQUFHLElBQUksR0FBRyxJQUFLLE9BQU0sQ0FBQyxJQUFJLFFBQVEsV0FBVyxJQUFJLElBQUksRUFBRSxDQUFDO0FBQ3JFLFNBQU8sT0FBTyxhQUFhLE1BQU0sTUFBTSxLQUFLO0FBQzlDO0FBTFM7QUFPVCxTQUFTLGdCQUFnQixJQUFZLFdBQW1CLEtBQWtCO0FBQ3hFLFFBQU0sb0JBQW9CLEtBQUssTUFBTyx5QkFBeUIsbUJBQW9CLGtCQUFrQjtBQUNyRyxRQUFNLFVBQVUsa0JBQWtCLEtBQUssaUJBQWlCLElBQUk7QUFDNUQsU0FBTyxJQUFJLElBQUksSUFBSSxLQUFLLElBQUksVUFBVSxHQUFHLENBQUMsQ0FBQztBQUM3QztBQUpTO0FBTVQsU0FBUyxPQUFPLElBQVksSUFBWSxLQUFrQjtBQUN4RCxTQUFPO0FBQUEsSUFDTCxNQUFNO0FBQUEsSUFDTixJQUFJLGtCQUFrQixFQUFFLElBQUk7QUFBQSxJQUM1QixNQUFNLFlBQVksSUFBSSxJQUFJLFlBQVksTUFBTSxDQUFDLElBQUssTUFBTSxXQUFXLElBQUksSUFBSSxXQUFXLE1BQU0sQ0FBQztBQUFBLElBQzdGLGNBQWMsSUFBSSxLQUFLLENBQUMsSUFBSSxNQUFNLElBQUksS0FBSyxDQUFDLElBQUk7QUFBQSxJQUNoRCxZQUFZLEdBQUcsTUFBTyxJQUFJLElBQUksR0FBSSxDQUFDLElBQUksTUFBTyxJQUFJLElBQUksR0FBSSxDQUFDLElBQUksTUFBTyxJQUFJLElBQUksR0FBSSxDQUFDLElBQUksTUFBTyxJQUFJLElBQUksR0FBSSxDQUFDO0FBQUEsSUFDM0csTUFBTSxVQUFVLElBQUksSUFBSSxVQUFVLE1BQU0sQ0FBQztBQUFBLElBQ3pDLE9BQU8sVUFBVSxJQUFJLElBQUksVUFBVSxNQUFNLENBQUM7QUFBQSxJQUMxQyxVQUFVO0FBQUEsSUFDVixPQUFPO0FBQUEsRUFDVDtBQUNGO0FBWlM7QUFjVCxTQUFTLFFBQVEsSUFBWSxJQUFZLEtBQW1CO0FBQzFELFFBQU0sU0FBUyxJQUFJLElBQUksaUJBQWlCLElBQUksSUFDeEMsS0FBSyxNQUFNLGtCQUFrQixFQUFFLElBQUksVUFBVSxJQUFJLGFBQ2pELGtCQUFrQixJQUFJLEdBQUc7QUFDN0IsUUFBTSxhQUFhLFVBQVUsR0FBRztBQUNoQyxTQUFPO0FBQUEsSUFDTCxNQUFNO0FBQUEsSUFDTixJQUFJLG1CQUFtQixFQUFFLElBQUk7QUFBQSxJQUM3QixVQUFVLElBQUksS0FBSyxFQUFFO0FBQUEsSUFDckIsYUFBYSxJQUFJLEtBQUssR0FBRztBQUFBLElBQ3pCO0FBQUEsSUFDQSxTQUFTLGFBQWEsVUFBVSxHQUFHO0FBQUEsSUFDbkMsVUFBVTtBQUFBLElBQ1YsU0FBUyxLQUFLLGdCQUFnQixJQUFJLElBQUksR0FBRztBQUFBLElBQ3pDLFFBQVEsU0FBUztBQUFBLElBQ2pCLFVBQVUsb0JBQW9CLElBQUksSUFBSSxjQUFjO0FBQUEsSUFDcEQsT0FBTztBQUFBLEVBQ1Q7QUFDRjtBQWxCUztBQW9CVCxTQUFTLElBQUksSUFBWSxJQUFZLEtBQWU7QUFDbEQsUUFBTSxZQUFZLElBQUksSUFBSSxpQkFBaUIsSUFBSSxJQUMzQyxLQUFLLE1BQU0sbUJBQW1CLEVBQUUsSUFBSSxVQUFVLElBQUksYUFDbEQsbUJBQW1CLElBQUksR0FBRztBQUM5QixRQUFNLFNBQVMsSUFBSSxJQUFJLGlCQUFpQixJQUFJLElBQ3hDLEtBQUssTUFBTSxrQkFBa0IsRUFBRSxJQUFJLFVBQVUsSUFBSSxhQUFhLElBQzlELGtCQUFrQixJQUFJLEdBQUc7QUFDN0IsUUFBTSxRQUFRLFVBQVUsR0FBRztBQUMzQixRQUFNLE1BQU0sSUFBSSxJQUFJLEVBQUUsSUFBSTtBQUMxQixRQUFNLElBQUksSUFBSSxJQUFJLGFBQWEsTUFBTTtBQUNyQyxRQUFNLFlBQVksTUFBTSxJQUFJLElBQUksSUFBSSxHQUFNO0FBQzFDLFNBQU87QUFBQSxJQUNMLE1BQU07QUFBQSxJQUNOLFNBQVMsWUFBWTtBQUFBLElBQ3JCLFFBQVEsU0FBUztBQUFBLElBQ2pCO0FBQUEsSUFDQSxTQUFTLE1BQU0sYUFBYSxDQUFDLElBQUssV0FBVyxTQUFTO0FBQUEsSUFDdEQsS0FBSyxNQUFNLFNBQVMsQ0FBQyxJQUFLLG1DQUFtQyxTQUFTO0FBQUEsSUFDdEUsVUFBVTtBQUFBLElBQ1YsT0FBTztBQUFBLEVBQ1Q7QUFDRjtBQXJCUztBQXdCRixTQUFTLFVBQVUsSUFBWSxLQUFpQjtBQUNyRCxNQUFJLE9BQU8sTUFBTSxFQUFFO0FBQ25CLFFBQU0sS0FBSyxrQkFBa0IsRUFBRTtBQUMvQixRQUFNLFNBQVMsS0FBSztBQUNwQixNQUFJLFNBQVMsa0JBQW1CLFFBQU8sT0FBTyxJQUFJLElBQUksR0FBRztBQUN6RCxNQUFJLFNBQVMsb0JBQW9CLG1CQUFvQixRQUFPLFFBQVEsSUFBSSxJQUFJLEdBQUc7QUFDL0UsU0FBTyxJQUFJLElBQUksSUFBSSxHQUFHO0FBQ3hCO0FBUGdCO0FBYVQsSUFBTSxlQUFlLHdCQUFDLEdBQVcsUUFBb0IsVUFBVSxVQUFVLENBQUMsR0FBRyxHQUFHLEdBQTNEO0FBR3JCLFNBQVMsZ0JBQWdCLEdBQVcsT0FBdUI7QUFDaEUsTUFBSSxDQUFDLE9BQU8sY0FBYyxDQUFDLEtBQUssS0FBSyxLQUFLLElBQUksdUJBQXVCLEdBQUc7QUFDdEUsVUFBTSxJQUFJLFdBQVcsR0FBRyxLQUFLLG9EQUFvRCxrQkFBa0IsU0FBUyxDQUFDLEVBQUU7QUFBQSxFQUNqSDtBQUNBLFNBQU87QUFDVDtBQUxnQjs7O0FDdExoQjtBQUFBLEVBQ0U7QUFBQSxFQUF5QjtBQUFBLEVBQXlCO0FBQUEsRUFBMEI7QUFBQSxPQUd2RTtBQUlQLElBQU0sWUFBWTtBQUVsQixJQUFNLFFBQVEsOEJBQWdEO0FBQUEsRUFDNUQsbUJBQW1CLDZCQUFNLEdBQU47QUFBQSxFQUNuQixLQUFLLHdCQUFDLElBQUksUUFBUSxNQUFNLEdBQW5CO0FBQUEsRUFDTCxXQUFXLHdCQUFDLFFBQVEsS0FBVDtBQUFBLEVBQ1gsT0FBTyx3QkFBQyxHQUFHLE1BQU0sSUFBSSxHQUFkO0FBQUEsRUFDUCxhQUFhO0FBQ2YsSUFOYztBQVNQLFNBQVMsWUFBWSxVQUEwQjtBQUNwRCxRQUFNLE9BQU8sSUFBSSxLQUFLLFFBQVEsRUFBRSxZQUFZO0FBQzVDLFNBQU8sUUFBUSxLQUFLLFFBQVEsS0FBSyxZQUFZLFFBQVEsS0FBSyxRQUFRLEtBQUssY0FBYztBQUN2RjtBQUhnQjtBQVlULElBQU0sUUFBUSx3QkFBQyxHQUFZLFNBQ2hDLFNBQVMsVUFBYSxFQUFFLFFBQVEsS0FBSyxTQUFVLEVBQUUsVUFBVSxLQUFLLFVBQVUsRUFBRSxXQUFXLEtBQUssWUFBYSxFQUFFLGFBQWEsS0FBSyxZQUFZLEVBQUUsU0FBUyxLQUFLLFNBRHRJO0FBbUJyQixJQUFNLGNBQU4sTUFBcUY7QUFBQSxFQXhFckYsT0F3RXFGO0FBQUE7QUFBQTtBQUFBLEVBQzNFO0FBQUEsRUFFUixLQUFLLEtBQWdDO0FBQ25DLFNBQUssUUFBUSxJQUFJLFNBQVMsSUFBSSxxQkFBbUMsK0JBQStCLENBQUM7QUFBQSxFQUNuRztBQUFBLEVBRUEsZ0JBQWdCLEdBQVksS0FBaUM7QUFDM0QsVUFBTSxJQUFJLEtBQUssTUFBTSxNQUFNLEtBQUssQ0FBQztBQUNqQyxNQUFFLFVBQVU7QUFDWixRQUFJLEVBQUUsVUFBVSxRQUFXO0FBQ3pCLGlCQUFXLEtBQUssRUFBRSxNQUFPLE1BQUssTUFBTSxHQUFHLEdBQUcsQ0FBQztBQUMzQyxRQUFFLFFBQVE7QUFBQSxJQUNaO0FBQ0EsU0FBSyxNQUFNLE9BQU8sQ0FBQztBQUNuQixRQUFJLGFBQWEsdUJBQXVCLEVBQUUsT0FBTztBQUFBLEVBQ25EO0FBQUEsRUFFQSxnQkFBZ0IsR0FBa0I7QUFDaEMsVUFBTSxJQUFJLEtBQUssTUFBTSxNQUFNO0FBQzNCLFFBQUksTUFBTSxRQUFXO0FBQ25CLFdBQUssTUFBTSxPQUFPLEVBQUUsT0FBTyxDQUFDLENBQUMsRUFBRSxDQUFDO0FBQ2hDO0FBQUEsSUFDRjtBQUNBLFFBQUksRUFBRSxXQUFXLEtBQU07QUFDdkIsUUFBSSxFQUFFLFlBQVksUUFBVztBQUMzQixVQUFJLEtBQUssTUFBTSxHQUFHLEVBQUUsU0FBUyxDQUFDLEVBQUcsTUFBSyxNQUFNLE9BQU8sQ0FBQztBQUFBLElBQ3RELE9BQU87QUFDTCxPQUFDLEVBQUUsVUFBVSxDQUFDLEdBQUcsS0FBSyxDQUFDO0FBQ3ZCLFdBQUssTUFBTSxPQUFPLENBQUM7QUFBQSxJQUNyQjtBQUFBLEVBQ0Y7QUFBQTtBQUFBLEVBR1EsTUFBTSxHQUFpQixHQUFZLEdBQXFCO0FBQzlELFFBQUksRUFBRSxXQUFXLEVBQUUsWUFBWSxFQUFFLFdBQVcsRUFBRSxXQUFXLENBQUMsTUFBTSxHQUFHLEVBQUUsSUFBSSxFQUFHLFFBQU87QUFDbkYsTUFBRSxPQUFPO0FBQ1QsV0FBTztBQUFBLEVBQ1Q7QUFBQSxFQUVBLFFBQVEsS0FBYSxNQUE4QixLQUE2QjtBQUM5RSxVQUFNLElBQUksS0FBSyxNQUFNLE1BQU07QUFDM0IsVUFBTSxJQUFJLEVBQUU7QUFDWixVQUFNLElBQUksRUFBRTtBQUNaLFFBQUksTUFBTSxRQUFXO0FBQ25CLFVBQUksUUFBUSxFQUFFLElBQUksRUFBRSxJQUFJLFFBQVEsRUFBRSxRQUFRLFVBQVUsRUFBRSxVQUFVLFVBQVUsRUFBRSxVQUFVLFNBQVMsRUFBRSxTQUFTLFFBQVEsRUFBRSxRQUFRLE9BQU8sRUFBRSxPQUFPLFNBQVMsRUFBRSxTQUFTLENBQUM7QUFBQSxJQUNuSztBQUNBLFNBQUssTUFBTSxPQUFPLEVBQUUsUUFBUSxLQUFLLENBQUM7QUFBQSxFQUNwQztBQUNGO0FBRUEsU0FBUyxZQUFZLFVBQStCLE1BQXVCLEdBQStCO0FBQ3hHLFFBQU0sUUFBUSxLQUFLLElBQUksQ0FBQyxPQUFnQixFQUFFLFNBQVMsRUFBRSxTQUFTLFFBQVEsRUFBRSxRQUFRLE9BQU8sRUFBRSxPQUFPLFVBQVUsRUFBRSxTQUFTLEVBQUU7QUFDdkgsU0FBTyxTQUFTLFFBQVEsS0FBSyxFQUFFLE1BQU0sQ0FBQyxNQUFNLEVBQUUsSUFBSSxDQUFDLE1BQU0sRUFBRSxPQUFPLEVBQUUsUUFBUSxJQUFJLFlBQVksQ0FBQyxFQUFFLElBQUksR0FBRyxDQUFDLGVBQWU7QUFDeEg7QUFIUztBQU1ULElBQU0sYUFBTixNQUFtRjtBQUFBLEVBakluRixPQWlJbUY7QUFBQTtBQUFBO0FBQUEsRUFDekU7QUFBQSxFQUNBO0FBQUEsRUFDUixLQUFLLEtBQWdDO0FBQ25DLFNBQUssU0FBUyxJQUFJLFNBQVMsSUFBSSxxQkFBNkIsUUFBUSxDQUFDO0FBQ3JFLFNBQUssVUFBVSxJQUFJLFNBQVMsSUFBSSxxQkFBK0IsbUNBQW1DLENBQUM7QUFBQSxFQUNyRztBQUFBLEVBQ0EsZ0JBQWdCLEdBQVcsTUFBNEIsS0FBNkI7QUFDbEYsU0FBSyxPQUFPLE9BQU8sQ0FBQztBQUNwQixVQUFNLFVBQVUsS0FBSyxRQUFRLE1BQU07QUFDbkMsUUFBSSxZQUFZLFFBQVc7QUFDekIsaUJBQVcsTUFBTSxRQUFTLEtBQUksUUFBUSxFQUFFLE1BQU0sRUFBRSxNQUFNLE1BQU0sRUFBRSxNQUFNLE9BQU8sRUFBRSxPQUFPLEdBQUcsQ0FBQztBQUN4RixXQUFLLFFBQVEsTUFBTTtBQUFBLElBQ3JCO0FBQUEsRUFDRjtBQUFBLEVBQ0EsZ0JBQWdCLEdBQVksTUFBNEIsS0FBNkI7QUFDbkYsVUFBTSxJQUFJLEtBQUssT0FBTyxNQUFNO0FBQzVCLFFBQUksTUFBTSxPQUFXLEtBQUksUUFBUSxFQUFFLE1BQU0sRUFBRSxNQUFNLE1BQU0sRUFBRSxNQUFNLE9BQU8sRUFBRSxPQUFPLElBQUksRUFBRSxHQUFHLENBQUM7QUFBQSxTQUNwRjtBQUNILFlBQU0sVUFBVSxLQUFLLFFBQVEsTUFBTSxLQUFLLENBQUM7QUFDekMsY0FBUSxLQUFLLEVBQUUsRUFBRTtBQUNqQixXQUFLLFFBQVEsT0FBTyxPQUFPO0FBQUEsSUFDN0I7QUFBQSxFQUNGO0FBQ0Y7QUFHQSxJQUFNLHFCQUFOLE1BQStFO0FBQUEsRUE1Si9FLE9BNEorRTtBQUFBO0FBQUE7QUFBQSxFQUNyRTtBQUFBLEVBQ1IsS0FBSyxLQUFnQztBQUNuQyxTQUFLLE1BQU0sSUFBSSxTQUFTLElBQUkscUJBQXVDLGVBQWUsQ0FBQztBQUFBLEVBQ3JGO0FBQUEsRUFDQSxlQUFlLEdBQVUsTUFBNEIsS0FBNkI7QUFDaEYsVUFBTSxDQUFDLEdBQUcsQ0FBQyxJQUFJLEtBQUssSUFBSSxNQUFNLEtBQUssQ0FBQyxHQUFHLENBQUM7QUFDeEMsVUFBTSxNQUFNLElBQUksRUFBRTtBQUNsQixVQUFNLElBQUksSUFBSTtBQUNkLFNBQUssSUFBSSxPQUFPLENBQUMsS0FBSyxDQUFDLENBQUM7QUFDeEIsUUFBSSxRQUFRLEVBQUUsVUFBVSxFQUFFLFVBQVUsS0FBSyxPQUFPLEdBQUcsS0FBSyxNQUFNLEVBQUUsQ0FBQztBQUFBLEVBQ25FO0FBQ0Y7QUFNTyxTQUFTLFdBQVcsR0FBWSxRQUE0QztBQUNqRixRQUFNLE9BQU8sNkJBQXVCLE9BQU8sT0FBTyxDQUFDLE1BQWdCLEVBQUUsU0FBUyxLQUFLLEdBQXRFO0FBQ2IsUUFBTSxXQUFXLDZCQUEyQixPQUFPLE9BQU8sQ0FBQyxNQUFvQixFQUFFLFNBQVMsU0FBUyxHQUFsRjtBQUNqQixRQUFNLFVBQVUsNkJBQTBCLE9BQU8sT0FBTyxDQUFDLE1BQW1CLEVBQUUsU0FBUyxRQUFRLEdBQS9FO0FBQ2hCLFVBQVEsR0FBRztBQUFBLElBQ1QsS0FBSztBQUNILGFBQU8sS0FBSyxFQUFFLElBQUksQ0FBQyxPQUFjLEVBQUUsU0FBUyxFQUFFLFNBQVMsUUFBUSxFQUFFLFFBQVEsT0FBTyxFQUFFLE9BQU8sVUFBVSxFQUFFLFVBQVUsT0FBTyxFQUFFLE1BQU0sRUFBRTtBQUFBLElBQ2xJLEtBQUs7QUFDSCxhQUFPLEtBQUssRUFBRSxJQUFJLENBQUMsT0FBYyxFQUFFLFNBQVMsRUFBRSxTQUFTLFFBQVEsRUFBRSxRQUFRLE9BQU8sUUFBUSxFQUFFLE9BQU8sVUFBVSxFQUFFLFVBQVUsT0FBTyxFQUFFLE1BQU0sRUFBRTtBQUFBLElBQzFJLEtBQUs7QUFDSCxhQUFPLEtBQUssRUFBRSxPQUFPLENBQUMsTUFBTSxFQUFFLFVBQVUsUUFBUSxDQUFDLEVBQUUsSUFBSSxDQUFDLE9BQWMsRUFBRSxTQUFTLEVBQUUsU0FBUyxPQUFPLEVBQUUsTUFBTSxFQUFFO0FBQUEsSUFDL0csS0FBSyxNQUFNO0FBQ1QsWUFBTSxVQUFVLFFBQVEsRUFBRSxPQUFPLENBQUMsTUFBTSxFQUFFLFVBQVUsUUFBUSxFQUFFLFVBQVUsUUFBUSxFQUFFLFVBQVUsSUFBSTtBQUNoRyxZQUFNLFFBQVEsU0FBUyxFQUFFLE9BQU8sQ0FBQyxNQUFNLEVBQUUsYUFBYSxFQUFFO0FBQ3hELGFBQU8sUUFBUSxRQUFRLEtBQUssRUFBRSxNQUFNLENBQUMsTUFBTSxFQUFFLElBQUksQ0FBQyxNQUFNLEVBQUUsTUFBTSxFQUFFLFFBQVEsSUFBSSxXQUFXLENBQUMsRUFBRSxJQUFJLFNBQVM7QUFBQSxJQUMzRztBQUFBLElBQ0EsS0FBSztBQUNILGFBQU8sWUFBWSxTQUFTLEdBQUcsS0FBSyxHQUFHLENBQUMsRUFBRSxNQUFNLENBQUMsTUFBTSxFQUFFLFFBQVEsRUFBRSxRQUFRLElBQUksbUJBQW1CLENBQUMsRUFBRSxJQUFJLFlBQVk7QUFBQSxJQUN2SCxLQUFLO0FBR0gsYUFBTyxLQUFLLEVBQ1QsSUFBSSxDQUFDLE1BQU0sRUFBRSxPQUFPLEVBQ3BCLE1BQU0sQ0FBQ0EsYUFBWUEsUUFBTyxFQUMxQixPQUFPLHdCQUF3QixHQUFHLFdBQVcsR0FBSSxDQUFDLEVBQ2xELFVBQVUsTUFBYyxHQUFHLEVBQUUsU0FBUyx3QkFBQ0EsVUFBUyxLQUFLLENBQUMsR0FBRyxHQUFHLFFBQTBCLElBQUksUUFBUSxFQUFFLFNBQUFBLFVBQVMsS0FBVyxPQUFPLElBQUksT0FBTyxNQUFNLENBQUMsR0FBM0csV0FBNkcsQ0FBQyxFQUNwSixJQUFJLFdBQVcsRUFFZixNQUFNLENBQUMsTUFBTSxFQUFFLEtBQUssRUFDcEIsT0FBTyx5QkFBeUIsR0FBRyxHQUFJLENBQUMsRUFDeEMsUUFBUTtBQUFBLFFBQ1AsUUFBUSxRQUFRLE1BQU0sUUFBUSxLQUFLO0FBQ2pDLGNBQUksTUFBTTtBQUNWLHFCQUFXLEtBQUssT0FBUSxLQUFJLEVBQUUsTUFBTSxJQUFLLE9BQU0sRUFBRTtBQUNqRCxxQkFBVyxLQUFLLE9BQVEsS0FBSSxFQUFFLE9BQU8sSUFBSyxLQUFJLFFBQVEsQ0FBQztBQUFBLFFBQ3pEO0FBQUEsTUFDRixDQUFDLEVBQ0EsSUFBSSxZQUFZO0FBQUEsSUFDckIsS0FBSztBQUNILGFBQU8sS0FBSyxFQUNULElBQUksQ0FBQyxPQUFjLEVBQUUsU0FBUyxFQUFFLFNBQVMsUUFBUSxFQUFFLFFBQVEsT0FBTyxFQUFFLE9BQU8sVUFBVSxFQUFFLFVBQVUsT0FBTyxFQUFFLE1BQU0sRUFBRSxFQUNsSCxVQUFVLHlCQUF5QixHQUFHLFNBQVMsQ0FBQyxFQUNoRCxVQUFtQztBQUFBLFFBQ2xDLG1CQUFtQiw4QkFBTyxFQUFFLEtBQUssSUFBSSxNQUFNLENBQUMsRUFBRSxJQUEzQjtBQUFBLFFBQ25CLElBQUksR0FBRyxLQUFLO0FBQ1YsY0FBSSxFQUFFLFFBQVEsSUFBSSxLQUFLO0FBQ3JCLGdCQUFJLE1BQU0sRUFBRTtBQUNaLGdCQUFJLE9BQU8sQ0FBQyxDQUFDO0FBQUEsVUFDZixXQUFXLEVBQUUsVUFBVSxJQUFJLElBQUssS0FBSSxLQUFLLEtBQUssQ0FBQztBQUMvQyxpQkFBTztBQUFBLFFBQ1Q7QUFBQSxRQUNBLFdBQVcsd0JBQUMsUUFBUSxLQUFUO0FBQUEsTUFDYixHQUFHO0FBQUEsUUFDRCxRQUFRLE1BQU0sQ0FBQyxHQUFHLEdBQUcsS0FBSztBQUN4QixxQkFBVyxLQUFLLElBQUssS0FBTSxLQUFJLFFBQVEsQ0FBQztBQUFBLFFBQzFDO0FBQUEsTUFDRixDQUFDLEVBQ0EsSUFBSSxZQUFZO0FBQUEsSUFDckIsS0FBSztBQUdILGFBQU8sUUFBUSxFQUNaLElBQUksQ0FBQyxPQUFPLEVBQUUsSUFBSSxFQUFFLElBQUksTUFBTSxFQUFFLEtBQUssRUFBRSxFQUN2QyxRQUFRLFNBQVMsRUFBRSxJQUFJLENBQUMsTUFBTSxFQUFFLE1BQU0sQ0FBQyxFQUN2QyxNQUFNLENBQUMsTUFBTSxFQUFFLEVBQUUsRUFDakIsUUFBUSxDQUFDLFdBQVcsTUFBTSxFQUMxQixPQUFPLHlCQUF5QixHQUFHLFNBQVMsQ0FBQyxFQUM3QyxNQUFNLENBQUMsSUFBSSxJQUFJLEtBQUssTUFBTTtBQUN6QixZQUFJLEdBQUcsU0FBUyxLQUFLLEdBQUcsU0FBUyxFQUFHLFlBQVcsS0FBSyxHQUFJLEtBQUksUUFBUSxFQUFFLElBQUksRUFBRSxJQUFJLE1BQU0sRUFBRSxNQUFNLE9BQU8sRUFBRSxNQUFNLENBQWlCO0FBQUEsTUFDaEksQ0FBQyxFQUNBLElBQUksZ0JBQWdCO0FBQUEsSUFDekIsS0FBSztBQUNILGFBQU8sWUFBWSxTQUFTLEdBQUcsS0FBSyxHQUFHLENBQUM7QUFBQSxJQUMxQyxLQUFLO0FBQ0gsYUFBTyxLQUFLLEVBQ1QsSUFBSSxDQUFDLE1BQU0sRUFBRSxNQUFNLEVBQ25CLE1BQU0sQ0FBQyxXQUFXLE1BQU0sRUFDeEIsT0FBTyx3QkFBd0IsUUFBUSxTQUFTLENBQUMsRUFDakQsVUFBVSxNQUFjLEdBQUcsRUFBRSxTQUFTLHdCQUFDLFFBQVEsS0FBSyxDQUFDLENBQUMsR0FBRyxRQUEyQixJQUFJLFFBQVEsRUFBRSxRQUFRLE9BQU8sR0FBSSxPQUFPLElBQUksT0FBTyxPQUFPLEtBQUssSUFBSSxPQUFPLElBQUksQ0FBQyxHQUE3SCxXQUErSCxDQUFDLEVBQ3RLLElBQUksY0FBYztBQUFBLElBQ3ZCLEtBQUs7QUFHSCxhQUFPLEtBQUssRUFDVCxPQUFPLENBQUMsTUFBTTtBQUNiLGNBQU0sUUFBUSxRQUFRLEVBQUU7QUFDeEIsZUFBTyxRQUFRLE9BQWEsUUFBUTtBQUFBLE1BQ3RDLENBQUMsRUFDQSxJQUFJLENBQUMsT0FBZSxFQUFFLFNBQVMsRUFBRSxTQUFTLFFBQVEsRUFBRSxRQUFRLE9BQU8sUUFBUSxFQUFFLE9BQU8sYUFBYSxZQUFZLEVBQUUsUUFBUSxHQUFHLFVBQVUsRUFBRSxVQUFVLE9BQU8sRUFBRSxNQUFNLEVBQUU7QUFBQSxFQUN4SztBQUNGO0FBMUZnQjs7O0FKOUpoQixJQUFPLGNBQVEsVUFBVSxDQUFDLEtBQUssU0FBUztBQUN0QyxRQUFNLFVBQVUsS0FBSyxDQUFDLE1BQU07QUFDNUIsUUFBTSxJQUFJLEtBQUssQ0FBQztBQUNoQixNQUFJLENBQUMsVUFBVSxTQUFTLENBQVksS0FBSyxFQUFFLFdBQVcsTUFBTSxRQUFRO0FBQ2xFLFVBQU0sSUFBSSxXQUFXLDhDQUE4QyxVQUFVLEtBQUssSUFBSSxDQUFDLEdBQUcsVUFBVSxVQUFVLEVBQUUsU0FBUyxPQUFPLEtBQUssQ0FBQyxDQUFDLENBQUMsRUFBRTtBQUFBLEVBQzVJO0FBQ0EsUUFBTSxJQUFJLGdCQUFnQixPQUFPLEtBQUssQ0FBQyxDQUFDLEdBQUcsOEJBQThCO0FBQ3pFLFFBQU0sT0FBTyxLQUFLLENBQUMsTUFBTSxVQUFhLEtBQUssQ0FBQyxNQUFNLE1BQU0sU0FBWSxLQUFLLENBQUM7QUFDMUUsTUFBSSxXQUFXLFdBQVcsQ0FBQyxFQUFFO0FBQzdCLFFBQU0sYUFBYSxrQkFBa0IseUJBQWdDLG1CQUFtQixFQUFFLHNCQUFzQixDQUFDLE1BQU0sRUFBRSxRQUFRO0FBQ2pJLFFBQU0sU0FBNEIsU0FBUyxTQUN2QyxJQUFJLGNBQWMsY0FBYyxFQUFFLE9BQU8sR0FBRyxNQUFNLE1BQU0sWUFBWSxNQUFNLG9CQUFvQixDQUFDLElBQy9GLElBQUksU0FBZ0IsTUFBTSxFQUFFLFlBQVksTUFBTSx1QkFBdUIsR0FBSSxRQUFRLElBQUkscUJBQXFCLEVBQUUsV0FBVyxPQUFPLFFBQVEsSUFBSSxrQkFBa0IsRUFBRSxJQUFJLENBQUMsRUFBRyxDQUFDO0FBQzNLLE1BQUksUUFBUyxZQUFXLFNBQVMsTUFBTSxRQUFRLFlBQVksQ0FBQyxDQUFDLEVBQUcsWUFBVyxPQUFPLE1BQU0sRUFBRSxRQUFRLEtBQUs7QUFBQSxNQUNsRyxZQUFXLEdBQWMsTUFBTSxFQUFFLFFBQVEsWUFBWSxJQUFJLGFBQWEsQ0FBWSxDQUFDLENBQUMsRUFBRSxLQUFLLFNBQVMsQ0FBQyxFQUFFO0FBQzlHLENBQUM7IiwKICAibmFtZXMiOiBbImF1Y3Rpb24iXQp9Cg==
