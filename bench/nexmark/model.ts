/**
 * Nexmark's three event types (an online auction: people register, open auctions and bid), as
 * one discriminated union so a single stream carries all three and a type-guard `filter`
 * splits it. Field names follow the Nexmark specification (Beam's and Flink's models).
 */

export interface Person {
  readonly kind: 'person';
  readonly id: number;
  readonly name: string;
  readonly emailAddress: string;
  readonly creditCard: string;
  readonly city: string;
  readonly state: string;
  /** Event time, epoch ms. */
  readonly dateTime: number;
  readonly extra: string;
}

export interface Auction {
  readonly kind: 'auction';
  readonly id: number;
  readonly itemName: string;
  readonly description: string;
  readonly initialBid: number;
  readonly reserve: number;
  readonly dateTime: number;
  /** When the auction closes, epoch ms (after dateTime). */
  readonly expires: number;
  readonly seller: number;
  readonly category: number;
  readonly extra: string;
}

export interface Bid {
  readonly kind: 'bid';
  readonly auction: number;
  readonly bidder: number;
  /** Cents. */
  readonly price: number;
  readonly channel: string;
  readonly url: string;
  readonly dateTime: number;
  readonly extra: string;
}

export type Event = Person | Auction | Bid;

export const isPerson = (e: Event): e is Person => e.kind === 'person';
export const isAuction = (e: Event): e is Auction => e.kind === 'auction';
export const isBid = (e: Event): e is Bid => e.kind === 'bid';
