/** Key selectors and partitioning as every layer sees them. */

/** A key selector as the runtime calls it. */
export type KeySelectorFn = (value: any) => unknown;

export type PartitionKind = 'forward' | 'hash' | 'rebalance' | 'rescale' | 'broadcast' | 'global';

export interface PartitionSpec {
  readonly kind: PartitionKind;
  /** For 'hash': the key selector whose key group picks the channel. */
  readonly keySelector?: KeySelectorFn;
}
