/** A bounded source over values given in the job module; one reader, position = next index. */
import type { PollStatus, ReaderOutput, Source, SourceReader, SourceSplit } from '../../core/source.ts';

export interface CollectionSplit extends SourceSplit {
  next: number;
}

export class CollectionSource<T> implements Source<T, CollectionSplit> {
  readonly name = 'collection';
  readonly bounded = true;
  readonly maxReaders = 1;
  constructor(private readonly values: readonly T[], private readonly timestamps?: (v: T) => number) {
    if (!Array.isArray(values)) throw new TypeError('fromCollection needs an array');
  }
  planSplits(): CollectionSplit[] {
    return [{ id: 'collection', next: 0 }];
  }
  createReader(): SourceReader<T, CollectionSplit> {
    const values = this.values;
    const tsOf = this.timestamps;
    let splits: CollectionSplit[] = [];
    return {
      // Each poll that collects ends with out.collected(n): the runtime counts per poll.
      reportsCollected: true,
      addSplits: (s) => void (splits = splits.concat(s.map((x) => ({ ...x })))),
      poll(out: ReaderOutput<T>, max: number): PollStatus {
        const s = splits[0];
        if (s === undefined || s.next >= values.length) return 'end';
        const end = Math.min(values.length, s.next + max);
        for (let i = s.next; i < end; i++) {
          const v = values[i]!;
          out.collect(v, tsOf ? tsOf(v) : undefined);
        }
        out.collected?.(end - s.next);
        s.next = end;
        return end < values.length ? 'more' : 'end';
      },
      snapshotSplits: () => splits.map((x) => ({ ...x })),
    };
  }
}
