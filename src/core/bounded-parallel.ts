/**
 * `fn` over `items` with at most `limit` calls in flight, results in the items' order: requests
 * that do not depend on each other (S3 GETs of many small objects, a state file's blocks) overlap
 * their latency without an unbounded burst. After a call fails no further call starts; the
 * promise rejects with that failure once the calls in flight have settled.
 */
export async function mapBounded<T, R>(items: readonly T[], limit: number, fn: (item: T, index: number) => Promise<R>): Promise<R[]> {
  if (!(Number.isInteger(limit) && limit >= 1)) throw new RangeError(`mapBounded: limit must be a positive integer, got ${limit}`);
  const out = new Array<R>(items.length);
  let next = 0;
  let failed = false;
  let firstFailure: unknown;
  const worker = async (): Promise<void> => {
    while (!failed && next < items.length) {
      const i = next++;
      try {
        out[i] = await fn(items[i]!, i);
      } catch (e) {
        if (!failed) firstFailure = e;
        failed = true;
        throw e;
      }
    }
  };
  // Settled, not all: a failure must not leave calls running after the caller has moved on.
  const ends = await Promise.allSettled(Array.from({ length: Math.min(limit, items.length) }, worker));
  if (ends.some((e) => e.status === 'rejected')) throw firstFailure;
  return out;
}
