/**
 * The Nexmark event generator, following the rules of the reference generators (Apache Beam's
 * and the nexmark/nexmark Flink repository's GeneratorConfig and Person/Auction/BidGenerator),
 * with Beam's default configuration:
 *
 * - Event ids run 0, 1, 2, ...; in every block of 50 ids, 1 is a person, 3 are auctions and 46
 *   are bids (the 1 : 3 : 46 proportion), so the kind of an event follows from its id.
 * - Person and auction ids are dense (1000 + the number of people or auctions before it).
 * - Hot items: half of the bids go to the current hot auction (the newest auction id rounded
 *   down to a multiple of 100), 3 in 4 bids come from the current hot bidder and 3 in 4
 *   auctions from the current hot seller (the newest person id rounded down to a multiple of
 *   100, +1 for bidders); the rest pick among the 1000 most recent people (plus 10 ids not yet
 *   created) or the 100 auctions in flight (plus 10 not yet created).
 * - Prices are 10^(6u) × 100 cents (log-uniform); auctions last 1 ms to twice the time in
 *   which 100 auctions are created.
 * - Event time: 10 000 events per second (0.1 ms apart) from BASE_TIME; out of order in groups
 *   of OUT_OF_ORDER_GROUP events (Beam's outOfOrderGroupSize): the i-th event emitted is event
 *   id base + (i·953 mod group) of its group, so an event is at most 100 ms out of order.
 * - Every field of an event is drawn from a random stream seeded by (SEED, id), so event i is
 *   the same whichever process, thread or lane produces it (weir's generator-source contract).
 *
 * Simplified: the `extra` padding to the reference's average event sizes is left empty, and
 * channel/url come from a small table; neither is read by the queries.
 */
import { createWriteStream } from 'node:fs';
import { Rng } from 'weir';
import type { Auction, Bid, Event, Person } from './model.ts';

export const SEED = 2026;
export const BASE_TIME = 1_700_000_000_000;
export const FIRST_PERSON_ID = 1000;
export const FIRST_AUCTION_ID = 1000;
export const FIRST_CATEGORY_ID = 10;
export const NUM_CATEGORIES = 5;
export const PERSON_PROPORTION = 1;
export const AUCTION_PROPORTION = 3;
export const BID_PROPORTION = 46;
export const TOTAL_PROPORTION = PERSON_PROPORTION + AUCTION_PROPORTION + BID_PROPORTION;
export const NUM_ACTIVE_PEOPLE = 1000;
export const NUM_IN_FLIGHT_AUCTIONS = 100;
export const PERSON_ID_LEAD = 10;
export const AUCTION_ID_LEAD = 10;
/** Ids are rounded down to a multiple of this to name the hot auction, seller and bidder. */
export const HOT_STRIDE = 100;
/** 1 − 1/ratio of the bids (auctions) go to the hot auction, bidder (seller). */
export const HOT_AUCTION_RATIO = 2;
export const HOT_BIDDERS_RATIO = 4;
export const HOT_SELLERS_RATIO = 4;
/** Events per second of event time (Beam's firstEventRate). */
export const EVENTS_PER_SECOND = 10_000;
/** Beam's outOfOrderGroupSize: events emitted in a pseudo-random order within groups of this size. */
export const OUT_OF_ORDER_GROUP = 1000;
/** The largest distance in event time between an event and any event emitted before it. */
export const MAX_DISORDER_MS = (OUT_OF_ORDER_GROUP * 1000) / EVENTS_PER_SECOND;
/** Watermark bound of every query: above the disorder, so no event is ever late. */
export const OUT_OF_ORDERNESS_MS = 1000;

const FIRST_NAMES = ['Peter', 'Paul', 'Luke', 'John', 'Saul', 'Vicky', 'Kate', 'Julie', 'Sarah', 'Deiter', 'Walter'];
const LAST_NAMES = ['Shultz', 'Abrams', 'Spencer', 'White', 'Bartels', 'Walton', 'Smith', 'Jones', 'Noris'];
const US_CITIES = ['Phoenix', 'Los Angeles', 'San Francisco', 'Boise', 'Portland', 'Bend', 'Redmond', 'Seattle', 'Kent', 'Cheyenne'];
const US_STATES = ['AZ', 'CA', 'ID', 'OR', 'WA', 'WY'];
const HOT_CHANNELS = ['Google', 'Facebook', 'Baidu', 'Apple'];
const HOT_URLS = HOT_CHANNELS.map((c) => `https://www.nexmark.com/${c.toLowerCase()}/item.htm?query=1`);
const LETTERS = 'abcdefghijklmnopqrstuvwxyz';

/** The event id emitted at position i (Beam's nextAdjustedEventNumber): a permutation within each group. */
export function eventIdAt(i: number): number {
  const base = i - (i % OUT_OF_ORDER_GROUP);
  return base + ((i * 953) % OUT_OF_ORDER_GROUP);
}

export const timestampForEvent = (id: number): number => BASE_TIME + Math.floor(id / (EVENTS_PER_SECOND / 1000));

/** Number of people created up to event id (exclusive of later ones), minus 1. */
export function lastBase0PersonId(id: number): number {
  const epoch = Math.floor(id / TOTAL_PROPORTION);
  let offset = id % TOTAL_PROPORTION;
  if (offset >= PERSON_PROPORTION) offset = PERSON_PROPORTION - 1;
  return epoch * PERSON_PROPORTION + offset;
}

export function lastBase0AuctionId(id: number): number {
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

function nextBase0PersonId(id: number, rng: Rng): number {
  const numPeople = lastBase0PersonId(id) + 1;
  const active = Math.min(numPeople, NUM_ACTIVE_PEOPLE);
  return numPeople - active + rng.int(active + PERSON_ID_LEAD);
}

function nextBase0AuctionId(id: number, rng: Rng): number {
  const max = lastBase0AuctionId(id);
  const min = Math.max(max - NUM_IN_FLIGHT_AUCTIONS, 0);
  return min + rng.int(max - min + 1 + AUCTION_ID_LEAD);
}

const nextPrice = (rng: Rng): number => Math.round(Math.pow(10, rng.next() * 6) * 100);

/** Char codes of the string being drawn (reused; the longest string is 100 letters). */
const CODES: number[] = [];

/**
 * A random string of 1 to maxLength letters, built flat in one call: `s += letter` per letter
 * makes a chain of ~100 linked pieces per description, which every variant pays to generate
 * but only one that keeps auctions (weir's window state) pays again in memory and GC.
 */
function str(rng: Rng, maxLength: number): string {
  const n = 1 + rng.int(maxLength);
  CODES.length = n;
  for (let k = 0; k < n; k++) CODES[k] = LETTERS.charCodeAt(rng.int(26));
  return String.fromCharCode.apply(null, CODES);
}

function auctionLengthMs(id: number, timestamp: number, rng: Rng): number {
  const eventsForAuctions = Math.floor((NUM_IN_FLIGHT_AUCTIONS * TOTAL_PROPORTION) / AUCTION_PROPORTION);
  const horizon = timestampForEvent(id + eventsForAuctions) - timestamp;
  return 1 + rng.int(Math.max(horizon * 2, 1));
}

function person(id: number, ts: number, rng: Rng): Person {
  return {
    kind: 'person',
    id: lastBase0PersonId(id) + FIRST_PERSON_ID,
    name: FIRST_NAMES[rng.int(FIRST_NAMES.length)]! + ' ' + LAST_NAMES[rng.int(LAST_NAMES.length)]!,
    emailAddress: str(rng, 7) + '@' + str(rng, 5) + '.com',
    creditCard: `${1000 + rng.int(9000)} ${1000 + rng.int(9000)} ${1000 + rng.int(9000)} ${1000 + rng.int(9000)}`,
    city: US_CITIES[rng.int(US_CITIES.length)]!,
    state: US_STATES[rng.int(US_STATES.length)]!,
    dateTime: ts,
    extra: '',
  };
}

function auction(id: number, ts: number, rng: Rng): Auction {
  const seller = rng.int(HOT_SELLERS_RATIO) > 0
    ? Math.floor(lastBase0PersonId(id) / HOT_STRIDE) * HOT_STRIDE
    : nextBase0PersonId(id, rng);
  const initialBid = nextPrice(rng);
  return {
    kind: 'auction',
    id: lastBase0AuctionId(id) + FIRST_AUCTION_ID,
    itemName: str(rng, 20),
    description: str(rng, 100),
    initialBid,
    reserve: initialBid + nextPrice(rng),
    dateTime: ts,
    expires: ts + auctionLengthMs(id, ts, rng),
    seller: seller + FIRST_PERSON_ID,
    category: FIRST_CATEGORY_ID + rng.int(NUM_CATEGORIES),
    extra: '',
  };
}

function bid(id: number, ts: number, rng: Rng): Bid {
  const auctionId = rng.int(HOT_AUCTION_RATIO) > 0
    ? Math.floor(lastBase0AuctionId(id) / HOT_STRIDE) * HOT_STRIDE
    : nextBase0AuctionId(id, rng);
  const bidder = rng.int(HOT_BIDDERS_RATIO) > 0
    ? Math.floor(lastBase0PersonId(id) / HOT_STRIDE) * HOT_STRIDE + 1
    : nextBase0PersonId(id, rng);
  const price = nextPrice(rng);
  const hot = rng.int(10) > 0;
  const c = rng.int(HOT_CHANNELS.length);
  const channelNo = hot ? 0 : rng.int(10_000);
  return {
    kind: 'bid',
    auction: auctionId + FIRST_AUCTION_ID,
    bidder: bidder + FIRST_PERSON_ID,
    price,
    channel: hot ? HOT_CHANNELS[c]! : `channel-${channelNo}`,
    url: hot ? HOT_URLS[c]! : `https://www.nexmark.com/channel-${channelNo}/item.htm?query=1`,
    dateTime: ts,
    extra: '',
  };
}

/** The event with this id; `rng` is reseeded to (SEED, id). */
export function eventById(id: number, rng: Rng): Event {
  rng.reseed(SEED, id);
  const ts = timestampForEvent(id);
  const offset = id % TOTAL_PROPORTION;
  if (offset < PERSON_PROPORTION) return person(id, ts, rng);
  if (offset < PERSON_PROPORTION + AUCTION_PROPORTION) return auction(id, ts, rng);
  return bid(id, ts, rng);
}

/**
 * The i-th event emitted (weir's generator-source contract: (index, rng)). With n events in
 * all, ids are a permutation of 0..n-1 as long as n is a multiple of OUT_OF_ORDER_GROUP.
 */
export const nexmarkEvent = (i: number, rng: Rng): Event => eventById(eventIdAt(i), rng);

/** Event counts must be whole out-of-order groups, so the n events emitted are ids 0..n-1. */
export function checkEventCount(n: number, where: string): number {
  if (!Number.isSafeInteger(n) || n <= 0 || n % OUT_OF_ORDER_GROUP !== 0) {
    throw new RangeError(`${where}: the event count must be a positive multiple of ${OUT_OF_ORDER_GROUP}, got ${n}`);
  }
  return n;
}

/** Calls fn on the first n events in emission order (the plain implementations' source). */
export function forEachEvent(n: number, fn: (e: Event) => void): void {
  const rng = new Rng(SEED, 0);
  for (let i = 0; i < n; i++) fn(nexmarkEvent(i, rng));
}

/** Writes the first n events, in emission order, as JSON lines (the file-source variant). */
export async function writeEventsFile(path: string, n: number): Promise<void> {
  const out = createWriteStream(path);
  const rng = new Rng(SEED, 0);
  const CHUNK = 4096;
  for (let i = 0; i < n; ) {
    let text = '';
    for (const end = Math.min(n, i + CHUNK); i < end; i++) text += JSON.stringify(nexmarkEvent(i, rng)) + '\n';
    if (!out.write(text)) await new Promise<void>((r) => out.once('drain', () => r()));
  }
  await new Promise<void>((resolve, reject) => {
    out.on('error', reject);
    out.end(() => resolve());
  });
}
