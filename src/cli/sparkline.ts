/**
 * A one-line trend for the terminal: values drawn as block characters, oldest to newest. A long
 * history is folded into at most `width` buckets, each drawn by its maximum (a spike must not
 * vanish in an average: a checkpoint that took 40 min stays visible among 3 s ones).
 */
const BLOCKS = '▁▂▃▄▅▆▇█';

export function sparkline(values: readonly number[], width = 60): string {
  if (values.length === 0) return '';
  const w = Math.max(1, Math.min(width, values.length));
  const buckets: number[] = new Array(w).fill(Number.NEGATIVE_INFINITY);
  values.forEach((v, i) => {
    const b = Math.floor((i * w) / values.length);
    if (v > buckets[b]!) buckets[b] = v;
  });
  const min = Math.min(...buckets);
  const max = Math.max(...buckets);
  return buckets.map((v) => BLOCKS[max === min ? 0 : Math.round(((v - min) / (max - min)) * (BLOCKS.length - 1))]).join('');
}
