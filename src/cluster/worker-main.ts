/**
 * The body of a worker thread: receives its deployment, loads the job module and builds the
 * same graph as the job manager, checks that it is the same, and runs its subtasks.
 */
import { parentPort, type MessagePort } from 'node:worker_threads';
import { planExecution } from '../graph/execution-plan.ts';
import { systemClock, type Cancellable } from '../core/clock.ts';
import { storageResolver } from '../checkpoint/storage-resolver.ts';
import { preloadS3Sdk } from '../checkpoint/s3/object-store.ts';
import { setJobS3Config } from '../checkpoint/s3/settings.ts';
import { every } from './clock-timers.ts';
import { DataPlane } from './data-plane.ts';
import { buildJob, loadJobModule } from './job-loader.ts';
import { serializeError, type DeployMessage, type FromExecutor, type ToExecutor } from './messages.ts';
import { TaskExecutor } from './task-executor.ts';
import { endSnapshotReader } from '../state/disk/reader-thread.ts';

const port = parentPort!;
const send = (m: FromExecutor) => port.postMessage(m);
let executor: TaskExecutor | undefined;
let dataPlane: DataPlane | undefined;
let metricsTimer: Cancellable | undefined;

/**
 * What this worker imports as the job module, from the pool's 'preload' message (every pooled
 * worker gets one, maybe after its deploy message: the pool sends it once the job's bundle is
 * ready). Without a bundle, the job file itself (through tsx: typescript-jobs.ts).
 */
let jobUrlFound: (url: Promise<string | undefined>) => void = () => {};
const jobUrl = new Promise<string | undefined>((found) => (jobUrlFound = found));


/** KiB of print() output a worker may have in flight to the main thread before print blocks. */
const STDOUT_WINDOW_KIB = 4096;
const STDOUT_WAIT_MS = 60_000;
/** How often a worker reports its tasks' metrics to the job manager. */
const METRICS_INTERVAL_MS = 1000;

/**
 * print() from a worker thread: the text goes to the main thread, which writes it to stdout.
 * The bytes in flight are bounded: when the main thread (or a slow reader of stdout) falls
 * behind, the printing task waits here, so output cannot pile up in memory. The wait is
 * bounded too: after a minute the window is ignored rather than stalling the job forever.
 */
function writeStdout(text: string, worker: number, credit: Int32Array | undefined): void {
  const kib = Math.ceil((text.length * 2) / 1024);
  if (credit !== undefined) {
    // A worker thread's clock is the system clock (a custom clock cannot cross threads).
    const deadline = systemClock.now() + STDOUT_WAIT_MS;
    for (;;) {
      const cur = Atomics.load(credit, 0);
      if (cur + kib <= STDOUT_WINDOW_KIB || cur === 0 || systemClock.now() > deadline) break;
      Atomics.wait(credit, 0, cur, 1000);
    }
    Atomics.add(credit, 0, kib);
  }
  send({ type: 'stdout', text, worker, kib: credit === undefined ? 0 : kib });
}

async function deploy(m: DeployMessage & { peers: Record<number, MessagePort>; stdoutCredit?: Int32Array }): Promise<void> {
  if (m.job.modulePath === undefined) throw new Error('a worker thread needs the job module path');
  if (m.preloadS3 === true) preloadS3Sdk();
  setJobS3Config(m.s3);
  const def = await loadJobModule(m.job.modulePath, await jobUrl);
  const { graph } = await buildJob(def, m.job.args, m.job.defaultParallelism, m.job.modulePath, m.job.restoredMaxParallelism);
  if (graph.fingerprint !== m.fingerprint) {
    throw new Error('the job graph built in this worker differs from the job manager\'s: building the job must be deterministic (same operators, order and settings every time)');
  }
  const plan = planExecution(graph, m.plan.numWorkers);
  dataPlane = new DataPlane();
  for (const [w, p] of Object.entries(m.peers)) dataPlane.addPeer(Number(w), p);
  executor = new TaskExecutor({
    workerIndex: m.workerIndex,
    graph,
    plan,
    splits: m.splits,
    attempt: m.attempt,
    credits: m.credits,
    clock: systemClock,
    send,
    dataPlane,
    writeStdout: (text) => writeStdout(text, m.workerIndex, m.stdoutCredit),
    checkpointing: m.checkpointing,
    stateBackend: m.stateBackend,
    stateBackendOptions: m.stateBackendOptions,
    deadLetterDir: m.deadLetterDir,
    recordCounters: m.recordCounters,
    firstCheckpointId: m.firstCheckpointId,
    restore: m.restore,
    // Local paths and S3 (with the job's settings) resolve in any thread; in-memory storage does not.
    storage: storageResolver(undefined, m.s3).workerView,
  });
  metricsTimer = every(systemClock, METRICS_INTERVAL_MS, () => {
    if (executor) send({ type: 'metrics', workerIndex: m.workerIndex, tasks: executor.metrics(), heapUsed: process.memoryUsage().heapUsed });
  });
  send({ type: 'deployed', workerIndex: m.workerIndex });
}

port.on('message', (m: ToExecutor & { peers?: Record<number, MessagePort> }) => {
  switch (m.type) {
    case 'preload': {
      // Booted ahead of its deploy (worker-pool.ts): the deploy's own import then finds the module loaded.
      const url = Promise.resolve(m.moduleUrl);
      jobUrlFound(url);
      url.then((u) => loadJobModule(m.modulePath, u)).then(() => send({ type: 'preloaded', ok: true }), () => send({ type: 'preloaded', ok: false }));
      return;
    }
    case 'deploy':
      deploy(m as DeployMessage & { peers: Record<number, MessagePort>; stdoutCredit?: Int32Array }).catch((e) =>
        send({ type: 'executor-failed', workerIndex: m.workerIndex, error: serializeError(e) }),
      );
      return;
    case 'start':
    case 'proceed':
    case 'trigger':
    case 'notify-complete':
    case 'notify-abort':
    case 'finish-tasks':
    case 'end-sources':
    case 'resume-sources':
    case 'add-splits':
    case 'reader-event':
      executor?.handle(m);
      return;
    case 'cancel': {
      // The tasks' commits and uploads under way end first (bounded, TaskExecutor.cancel).
      const ioEnded = executor?.cancel();
      metricsTimer?.cancel();
      dataPlane?.close();
      // The disk backend's snapshot reader ends by itself before this thread does (see
      // endSnapshotReader); then the port closes and the thread ends, which the deployment waits
      // for before it would terminate it (deployment.ts).
      void Promise.all([ioEnded, endSnapshotReader()]).then(() => port.close());
      return;
    }
    default: {
      // Every message type is handled above: a new one must be added here (compile error).
      const unhandled: never = m;
      throw new Error(`worker: unknown message ${JSON.stringify((unhandled as { type?: unknown }).type)}`);
    }
  }
});
