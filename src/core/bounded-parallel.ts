/**
 * `fn` over `items` with at most `limit` calls in flight, results in the items' order: requests
 * that do not depend on each other (S3 GETs of many small objects) overlap their latency
 * without an unbounded burst.
 */
export async function mapBounded<T, R>(items: readonly T[], limit: number, fn: (item: T, index: number) => Promise<R>): Promise<R[]> {
  if (!(Number.isInteger(limit) && limit >= 1)) throw new RangeError(`mapBounded: limit must be a positive integer, got ${limit}`);
  const out = new Array<R>(items.length);
  let next = 0;
  const worker = async (): Promise<void> => {
    while (next < items.length) {
      const i = next++;
      out[i] = await fn(items[i]!, i);
    }
  };
  await Promise.all(Array.from({ length: Math.min(limit, items.length) }, worker));
  return out;
}
