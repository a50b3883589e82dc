// Worker threads started in weir's first lines (bin/weir.js), before the CLI and the job load:
// a worker needs ~0.1 s (installed package) to ~1 s (checkout, through tsx) to load weir, and
// started here that overlaps the main thread's own loading instead of following it. How many
// is a guess from the command line (`weir run` with -w/--workers, else one per core, as the
// option's default); the job's WorkerPool adopts them (worker-pool.ts). A wrong guess costs
// only boot time: they are unref'd (never holding the process) and run nothing until deployed.
// A guess is made only from a line that will likely run: a job file that exists and a worker
// count written as plain digits (what the CLI accepts), at most MAX_EARLY of them. Before, -w 256
// booted 256 threads (34 s, 3.2 GB) before "job file not found", and -w 1e2 booted 100 before
// the CLI refused "1e2"; the CLI validates the line, this file only avoids starting on a bad one.
// Plain JavaScript: it runs before tsx is registered.
import { statSync } from 'node:fs';
import { availableParallelism } from 'node:os';
import { parseArgs } from 'node:util';
import { Worker } from 'node:worker_threads';

/** The list WorkerPool takes them from (a global: the CLI's bundle has its own module instances). */
const EARLY = Symbol.for('weir.early-workers');

/** At most this many start early; a larger -w boots the rest when the job deploys (WorkerPool). */
export const MAX_EARLY = availableParallelism() * 4;

/** Starts the workers `weir <argv>` will likely use; none for other commands or one worker. */
export function startEarlyWorkers(argv) {
  if (argv[0] !== 'run') return;
  const end = argv.indexOf('--');
  const own = end < 0 ? argv.slice(1) : argv.slice(1, end);
  if (own.includes('--help') || own.includes('-h')) return;
  let given, positionals;
  try {
    ({ values: { workers: given }, positionals } = parseArgs({ args: own, options: { workers: { type: 'string', short: 'w' } }, strict: false, allowPositionals: true }));
  } catch {
    return; // the CLI reports the bad line
  }
  if (given !== undefined && (typeof given !== 'string' || !/^\d+$/.test(given))) return; // the CLI refuses it
  // The job file is a positional; other flags' values may be too (strict: false does not know
  // them), so any existing file will do: this only keeps a missing job from booting threads.
  if (!positionals.some(isFile)) return;
  const n = Math.min(given === undefined ? availableParallelism() : Number(given), MAX_EARLY);
  if (!(Number.isInteger(n) && n > 1)) return;
  const entry = new URL('./worker-entry.js', import.meta.url);
  globalThis[EARLY] = Array.from({ length: n }, () => {
    const worker = new Worker(entry, { stdout: false, stderr: false });
    worker.unref();
    const e = { worker, entry: entry.href, gone: false };
    const gone = () => void (e.gone = true);
    worker.once('error', gone);
    worker.once('exit', gone);
    return e;
  });
}

function isFile(path) {
  try {
    return statSync(path).isFile();
  } catch {
    return false;
  }
}
