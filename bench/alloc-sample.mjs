/**
 * By hand: where a process allocates, garbage included. A preload that samples every allocation
 * of the thread it runs in with V8's sampling heap profiler, keeping the samples of objects the
 * garbage collector has since freed (`--heap-prof` keeps only what is still alive at exit, which
 * hides the short-lived garbage a stream processor makes), and writes the profile at exit:
 *
 *   ALLOC_SAMPLE_OUT=/tmp/a.heapprofile WEIR_RUNTIME=dist node --import ./bench/alloc-sample.mjs \
 *     bench/ts-entry.mjs bench/child.ts window-count weir-1 5000000 10000
 *   node bench/alloc-sample.mjs /tmp/a.heapprofile [top]      # bytes sampled per function
 *
 * The main thread only by default: weir's one-worker jobs run there. With ALLOC_SAMPLE_THREADS=all
 * every thread that loads the preload samples itself (weir's worker threads inherit `--import`),
 * each writing `<ALLOC_SAMPLE_OUT>-<threadId>.heapprofile` (the main thread is 0): how session 55
 * compared a worker of a two-worker job with the single worker of a one-worker job.
 * Chrome DevTools opens the .heapprofile too. Session 51 found the PRNG's boxed draws
 * and the window tables' rebuilds with it (BENCHMARKS.md).
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { Session } from 'node:inspector';
import { isMainThread, threadId } from 'node:worker_threads';

/** One sample per this many bytes allocated, on average. */
const SAMPLING_INTERVAL_BYTES = 4096;

function summarize(file, top) {
  const profile = JSON.parse(readFileSync(file, 'utf8'));
  const bytes = new Map();
  let total = 0;
  const stack = [profile.head];
  while (stack.length > 0) {
    const node = stack.pop();
    const f = node.callFrame;
    const name = `${f.functionName || '(anonymous)'} ${f.url.split('/').pop()}:${f.lineNumber + 1}`;
    bytes.set(name, (bytes.get(name) ?? 0) + node.selfSize);
    total += node.selfSize;
    for (const c of node.children ?? []) stack.push(c);
  }
  console.log(`${(total / 1e6).toFixed(1)} MB sampled in all`);
  for (const [name, b] of [...bytes].sort((x, y) => y[1] - x[1]).slice(0, top)) console.log(`${(b / 1e6).toFixed(2).padStart(9)} MB  ${name}`);
}

if (process.argv[1] !== undefined && import.meta.url.endsWith(process.argv[1].split('/').pop()) && process.argv[2] !== undefined) {
  summarize(process.argv[2], Number(process.argv[3] ?? 25));
} else if (isMainThread || process.env.ALLOC_SAMPLE_THREADS === 'all') {
  const out = process.env.ALLOC_SAMPLE_THREADS === 'all'
    ? `${(process.env.ALLOC_SAMPLE_OUT ?? 'alloc.heapprofile').replace(/\.heapprofile$/, '')}-${threadId}.heapprofile`
    : process.env.ALLOC_SAMPLE_OUT ?? 'alloc.heapprofile';
  const session = new Session();
  session.connect();
  session.post('HeapProfiler.enable');
  session.post('HeapProfiler.startSampling', {
    samplingInterval: SAMPLING_INTERVAL_BYTES, includeObjectsCollectedByMinorGC: true, includeObjectsCollectedByMajorGC: true,
  });
  process.on('exit', () => {
    // A session of the thread itself answers synchronously, so this runs before the process ends.
    session.post('HeapProfiler.stopSampling', (err, res) => {
      if (err) console.error(`alloc-sample: ${err.message}`);
      else writeFileSync(out, JSON.stringify(res.profile));
    });
  });
}
