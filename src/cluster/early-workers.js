// Worker threads started in weir's first lines (bin/weir.js), before the CLI and the job load:
// a worker needs ~0.1 s (installed package) to ~1 s (checkout, through tsx) to load weir, and
// started here that overlaps the main thread's own loading instead of following it. How many
// is a guess from the command line (`weir run` with -w/--workers, else one per core, as the
// option's default); the job's WorkerPool adopts them (worker-pool.ts). A wrong guess costs
// only boot time: they are unref'd (never holding the process) and run nothing until deployed.
// Plain JavaScript: it runs before tsx is registered.
import { availableParallelism } from 'node:os';
import { parseArgs } from 'node:util';
import { Worker } from 'node:worker_threads';

/** The list WorkerPool takes them from (a global: the CLI's bundle has its own module instances). */
const EARLY = Symbol.for('weir.early-workers');

/** Starts the workers `weir <argv>` will likely use; none for other commands or one worker. */
export function startEarlyWorkers(argv) {
  if (argv[0] !== 'run') return;
  const end = argv.indexOf('--');
  const own = end < 0 ? argv.slice(1) : argv.slice(1, end);
  if (own.includes('--help') || own.includes('-h')) return;
  let given;
  try {
    given = parseArgs({ args: own, options: { workers: { type: 'string', short: 'w' } }, strict: false, allowPositionals: true }).values.workers;
  } catch {
    return; // the CLI reports the bad line
  }
  const n = given === undefined ? availableParallelism() : Number(given);
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
