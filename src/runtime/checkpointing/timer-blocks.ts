/**
 * Keyed timers in a snapshot: one block per key group (msgpack list of
 * [domain, timestamp, key, namespace, seq], domain 0 event time, 1 processing time), written
 * by the state backend beside the keyed state of the same key groups, so they are
 * redistributed with it on rescaling.
 */
import { decodeValue, encodeValue } from '../../core/codec.ts';
import type { KeyGroupBlock, KeyGroupBlockSource } from '../../state/backend.ts';
import { denormalizeKey, type NormKey } from '../../state/key-groups.ts';
import type { InternalTimerService, Timer } from '../timers.ts';

export type RestoredTimers = {
  domain: 'event' | 'processing';
  timestamp: number;
  key: NormKey;
  keyGroup: number;
  originalKey: unknown;
  namespace: string | number;
  seq: number;
}[];

type EncodedTimer = [domain: 0 | 1, timestamp: number, key: NormKey, namespace: string | number, seq: number];

/**
 * Synchronous phase: the live timers, by reference (timers are immutable), event time first.
 * Encoding waits for the asynchronous phase.
 */
export function timerBlocks(timers: InternalTimerService): KeyGroupBlockSource {
  const captured: { domain: 0 | 1; t: Timer }[] = [];
  for (const t of timers.eventTimersList()) captured.push({ domain: 0, t });
  for (const t of timers.processingTimersList()) captured.push({ domain: 1, t });
  return {
    *encode(): Iterable<KeyGroupBlock> {
      const byGroup = new Map<number, EncodedTimer[]>();
      for (const { domain, t } of captured) {
        let l = byGroup.get(t.keyGroup);
        if (l === undefined) byGroup.set(t.keyGroup, (l = []));
        l.push([domain, t.timestamp, t.key, t.namespace, t.seq]);
      }
      for (const [keyGroup, list] of byGroup) yield { keyGroup, bytes: encodeValue(list) };
    },
  };
}

/** Timers from restored blocks, in the firing order they had: by timestamp, then registration order. */
export function decodeTimerBlocks(blocks: readonly KeyGroupBlock[]): RestoredTimers {
  const timers: RestoredTimers = [];
  for (const { keyGroup, bytes } of blocks) {
    for (const [domain, timestamp, key, namespace, seq] of decodeValue<EncodedTimer[]>(bytes)) {
      timers.push({ domain: domain === 0 ? 'event' : 'processing', timestamp, key, keyGroup, originalKey: denormalizeKey(key), namespace, seq });
    }
  }
  timers.sort((x, y) => x.timestamp - y.timestamp || x.seq - y.seq);
  return timers;
}
