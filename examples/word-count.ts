/**
 * Keyed running word count over generated sentences: the quick-start job.
 *   npx weir run examples/word-count.ts -- 200000
 */
import { defineJob } from 'weir';

const WORDS = ['weir', 'river', 'barrier', 'stream', 'state', 'snapshot', 'key', 'window', 'flow', 'water'];

export default defineJob((env, args) => {
  const sentences = Number(args[0] ?? 100_000);
  env
    .fromGenerator((i, rng) => Array.from({ length: 1 + rng.int(8) }, () => rng.pick(WORDS)).join(' '), { count: sentences, seed: 42 })
    .name('sentences')
    .flatMap((line: string) => line.split(' ').map((word) => ({ word, count: 1 })))
    .keyBy((w) => w.word)
    .reduce((a, b) => ({ word: a.word, count: a.count + b.count }))
    .uid('counts')
    .filter((w) => w.count % 10_000 === 0)
    .print();
});
