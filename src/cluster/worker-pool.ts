/**
 * Worker threads booted ahead of need. A worker thread costs hundreds of milliseconds before
 * it can run a task: it registers tsx, loads weir and imports the job module. Booted only at
 * deploy time, that cost comes after the job manager has loaded the job itself, in sequence;
 * booted here, it overlaps the job manager's own loading at start, and the previous attempt's
 * run before a restart (recovery time).
 *
 * A worker serves one attempt only: the job module it imported is that attempt's, so nothing a
 * failed attempt left in module state carries over (the same rule as before). A booted worker
 * only imported the module; it runs nothing until deployed. One whose preload failed is
 * dropped: the deploy then boots a fresh one, which reports the failure as it always did.
 *
 * Every worker it hands out gets a 'preload' message naming the job module, and the URL of the
 * job bundled as JavaScript when there is one (job-bundle.ts; its maker, runJob, deletes it).
 * Workers started in weir's first lines (early-workers.js) are adopted before new ones boot.
 */
import { Worker } from 'node:worker_threads';

/** The script every worker thread starts with (it loads worker-main from sources or dist/). */
export const WORKER_ENTRY = new URL('./worker-entry.js', import.meta.url);

/** A worker booted by the pool: `ok` once it has imported the job module (false: failed). */
interface Booted {
  readonly worker: Worker;
  ok: boolean | undefined;
  /** Removes the pool's listeners (at handover). */
  readonly detach: () => void;
}

/** Where bin/weir.js leaves the workers it started (early-workers.js; shared through globalThis). */
const EARLY = Symbol.for('weir.early-workers');
interface EarlyWorker { readonly worker: Worker; readonly entry: string; gone: boolean }

/** A worker started early for this entry and still alive, if any is left. */
function takeEarly(entry: URL): Worker | undefined {
  const early = (globalThis as { [EARLY]?: EarlyWorker[] })[EARLY] ?? [];
  for (let e = early.shift(); e !== undefined; e = early.shift()) {
    if (!e.gone && e.entry === entry.href) return e.worker;
    void e.worker.terminate().catch(() => 0);
  }
  return undefined;
}

export class WorkerPool {
  private idle: Booted[] = [];
  private closed = false;
  /**
   * `size`: workers per attempt; `modulePath`: the job module every worker imports; `moduleUrl`:
   * what they import instead (the job bundled: job-bundle.ts; undefined: the file itself).
   */
  constructor(
    private readonly modulePath: string,
    private readonly size: number,
    private readonly moduleUrl: Promise<string | undefined> = Promise.resolve(undefined),
    private readonly entry: URL = WORKER_ENTRY,
  ) {
    if (!(Number.isInteger(size) && size >= 1)) throw new RangeError(`worker pool size must be a positive integer, got ${size}`);
  }

  /** Boots workers until `size` are idle (nothing when closed). */
  prewarm(): void {
    while (!this.closed && this.idle.length < this.size) this.idle.push(this.boot());
  }

  /** An idle booted worker (its preload failed ones skipped), else a new one, booting. */
  take(): Worker {
    for (;;) {
      const b = this.idle.shift() ?? this.boot();
      if (b.ok === false) {
        void b.worker.terminate().catch(() => 0);
        continue;
      }
      // Handed over: the deployment listens from now on; the thread may hold the process open again.
      b.detach();
      b.worker.ref();
      return b.worker;
    }
  }

  /** Terminates the idle workers; later prewarm() calls do nothing. */
  async close(): Promise<void> {
    this.closed = true;
    const idle = this.idle;
    this.idle = [];
    await Promise.all(idle.map((b) => b.worker.terminate().catch(() => 0)));
  }

  private boot(): Booted {
    const worker = takeEarly(this.entry) ?? new Worker(this.entry, { stdout: false, stderr: false });
    const onMessage = (m: { type?: string; ok?: boolean }) => {
      if (m.type === 'preloaded') b.ok = m.ok === true;
    };
    const onGone = () => void (b.ok = false);
    const b: Booted = {
      worker, ok: undefined,
      detach: () => {
        worker.off('message', onMessage);
        worker.off('error', onGone);
        worker.off('exit', onGone);
      },
    };
    // Idle, it never keeps the process alive, and its failure is only a reason not to use it.
    worker.unref();
    worker.on('message', onMessage);
    worker.on('error', onGone);
    worker.on('exit', onGone);
    // Sent once the bundle is there; a worker's deploy waits for it (worker-main.ts).
    void this.moduleUrl.then((moduleUrl) => worker.postMessage({ type: 'preload', modulePath: this.modulePath, moduleUrl }));
    return b;
  }
}
