/**
 * Benchmark threads that start together: each worker thread loads, says it is ready and waits
 * for one go signal, so the time measured is the work alone, from a common start to the last
 * report, with no thread's start-up in it. Used by the ceilings that compare one thread with
 * two (bench/parallel-ceiling.ts, bench/nexmark/plain-threads.ts).
 */
import { performance } from 'node:perf_hooks';
import { resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { isMainThread, Worker, workerData } from 'node:worker_threads';

/** How long threads may take to load, and to see the go signal. */
const WAIT_MS = 60_000;

/** What every thread's workerData carries: an Int32Array over it holds [threads ready, go]. */
export interface Gated {
  readonly gate: SharedArrayBuffer;
}

/** In a worker: says it is ready, then waits for the go signal. */
export function arriveAndWait(d: Gated, what: string): void {
  const gate = new Int32Array(d.gate);
  Atomics.add(gate, 0, 1);
  Atomics.notify(gate, 0);
  if (Atomics.wait(gate, 1, 0, WAIT_MS) === 'timed-out') throw new Error(`${what}: no go signal within ${WAIT_MS / 1000} s`);
}

/**
 * Starts one worker thread per item of `data` on the TypeScript module `script` (bundled by
 * bench/ts-entry.mjs: a worker does not take `--import tsx` on Node 20), lets them go together
 * once all are ready, and returns each thread's one message with the time from the go signal to
 * the last message. A thread that fails or exits before its message fails the whole run.
 */
export async function runTogether<D extends object, R>(script: URL, data: readonly D[], what: string): Promise<{ ms: number; reports: R[] }> {
  const gate = new SharedArrayBuffer(8);
  const g = new Int32Array(gate);
  const entry = new URL('./ts-entry.mjs', import.meta.url);
  const workers = data.map((d) => new Worker(entry, { argv: [fileURLToPath(script)], workerData: { ...d, gate } satisfies Gated }));
  try {
    const reports = workers.map((w) => new Promise<R>((resolve, reject) => {
      w.once('message', resolve);
      w.once('error', reject);
      w.once('exit', (code) => reject(new Error(`${what}: a thread exited (${code}) before reporting`)));
    }));
    const deadline = Date.now() + WAIT_MS;
    while (Atomics.load(g, 0) < workers.length) {
      if (Date.now() > deadline) throw new Error(`${what}: threads not ready within ${WAIT_MS / 1000} s`);
      await new Promise((r) => setTimeout(r, 2));
    }
    const t0 = performance.now();
    Atomics.store(g, 1, 1);
    Atomics.notify(g, 1);
    const done = await Promise.all(reports);
    return { ms: performance.now() - t0, reports: done };
  } finally {
    await Promise.all(workers.map((w) => w.terminate()));
  }
}

/**
 * The entry of a module that is both a script and the gated threads' code (the ceilings): run as
 * `node .../script.ts`, it runs `main` (a failure: its stack, exit 1); in a worker thread started
 * by runTogether, `threadMain` with the thread's data; imported (bench/run.ts), nothing.
 */
export function runAsScriptOrThread<D>(moduleUrl: string, main: () => Promise<void>, threadMain: (d: D & Gated) => Promise<void>): void {
  if (isMainThread && process.argv[1] !== undefined && fileURLToPath(moduleUrl) === resolve(process.argv[1])) {
    main().catch((e: unknown) => {
      process.stderr.write(`${e instanceof Error ? e.stack : String(e)}\n`);
      process.exit(1);
    });
  } else if (!isMainThread) {
    threadMain(workerData as D & Gated).catch((e: unknown) => {
      throw e;
    });
  }
}
