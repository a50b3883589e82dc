/**
 * Writes test events for examples/exactly-once.ts: N JSON lines {"key", "ts", "value"},
 * timestamps advancing ~10 ms per event and out of order by up to 5 s, from a seed.
 *   npx tsx examples/generate-events.ts <count> <out.jsonl> [keys=1000] [seed=1]
 */
import { createWriteStream } from 'node:fs';
import { Rng } from '../src/core/random.ts';

const [countArg, path, keysArg, seedArg] = process.argv.slice(2);
const count = Number(countArg);
const keys = Number(keysArg ?? 1000);
const seed = Number(seedArg ?? 1);
if (!Number.isInteger(count) || count < 0 || path === undefined || !Number.isInteger(keys) || keys < 1 || !Number.isInteger(seed)) {
  process.stderr.write('usage: npx tsx examples/generate-events.ts <count> <out.jsonl> [keys=1000] [seed=1]\n');
  process.exit(2);
}
const out = createWriteStream(path);
const rng = new Rng();
const base = 1_700_000_000_000;
let buf = '';
for (let i = 0; i < count; i++) {
  rng.reseed(seed, i);
  const ev = { key: `k${rng.int(keys)}`, ts: base + i * 10 - rng.int(5000), value: rng.int(100) };
  buf += JSON.stringify(ev) + '\n';
  if (buf.length > 1 << 20) {
    if (!out.write(buf)) await new Promise<void>((r) => out.once('drain', () => r()));
    buf = '';
  }
}
out.end(buf);
await new Promise<void>((r) => out.on('finish', () => r()));
