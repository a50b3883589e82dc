/**
 * The job manager of a local run: builds the job graph, plans subtasks over workers, plans
 * source splits, deploys task executors (worker threads, or the main thread with one
 * worker), and follows the job to its end. Checkpointing and restarts plug in here next.
 */
import { availableParallelism } from 'node:os';
import { resolve } from 'node:path';
import { MessageChannel, Worker, type MessagePort } from 'node:worker_threads';
import type { JobDefinition } from '../api/job.ts';
import { assignSplits, type SourceSplit } from '../api/source.ts';
import { planExecution } from '../graph/execution-plan.ts';
import type { JobGraph } from '../graph/job-graph.ts';
import { DEFAULT_CHANNEL_CREDITS } from '../runtime/channels/channel.ts';
import { systemClock, type Clock } from '../state/clock.ts';
import { buildJob, loadJobModule } from './job-loader.ts';
import { serializeError, type FromExecutor, type SerializedError, type TaskMetrics, type ToExecutor } from './messages.ts';
import { TaskExecutor } from './task-executor.ts';

export interface RunOptions {
  /** Default parallelism of operators (the job's own settings win). Default: number of workers. */
  readonly parallelism?: number;
  /** Worker threads; 1 runs everything in the calling thread. Default: number of cores. */
  readonly workers?: number;
  readonly args?: readonly string[];
  /** Processing-time clock; only for runs in one thread (workers: 1). */
  readonly clock?: Clock;
  /** Receives print() output; default process.stdout. */
  readonly stdout?: (text: string) => void;
  /** Called about once a second with progress. */
  readonly onProgress?: (p: Progress) => void;
  /** Buffer credits per channel (backpressure bound). */
  readonly credits?: number;
}

export interface Progress {
  readonly elapsedMs: number;
  /** Records emitted by sources so far. */
  readonly recordsIn: number;
  /** Records taken by sinks so far. */
  readonly recordsOut: number;
  readonly heapUsed: number;
}

export type JobStatus = 'FINISHED' | 'FAILED' | 'CANCELED';

export class JobResult {
  constructor(
    readonly status: JobStatus,
    readonly error: SerializedError | undefined,
    private readonly collectedBySink: ReadonlyMap<string, unknown[]>,
    readonly durationMs: number,
    readonly progress: Progress,
    readonly graph: JobGraph,
  ) {}
  /** Records a collect(name) sink received, in arrival order. */
  collected<T = unknown>(sink = 'collect'): T[] {
    return (this.collectedBySink.get(sink) ?? []) as T[];
  }
  sinks(): string[] {
    return [...this.collectedBySink.keys()];
  }
}

interface ExecutorHandle {
  send(m: ToExecutor, transfer?: MessagePort[]): void;
  terminate(): Promise<void>;
}

export async function runJob(job: string | JobDefinition, options: RunOptions = {}): Promise<JobResult> {
  const workers = options.workers ?? availableParallelism();
  if (!Number.isInteger(workers) || workers < 1) throw new RangeError(`workers must be a positive integer, got ${String(options.workers)}`);
  const parallelism = options.parallelism ?? workers;
  if (!Number.isInteger(parallelism) || parallelism < 1) throw new RangeError(`parallelism must be a positive integer, got ${String(options.parallelism)}`);
  if (options.clock !== undefined && workers > 1) throw new RangeError('a custom clock needs workers: 1 (it cannot cross threads)');
  const args = options.args ?? [];
  const modulePath = typeof job === 'string' ? resolve(job) : undefined;
  const def = typeof job === 'string' ? await loadJobModule(job) : job;
  if (modulePath === undefined && workers > 1) throw new RangeError('a job given as a definition runs with workers: 1; pass the module path to use worker threads');
  const { graph } = await buildJob(def, args, parallelism);
  const plan = planExecution(graph, workers);

  const splits: Record<string, SourceSplit[]> = {};
  for (const v of graph.vertices) {
    const t = v.operators[0]!.node.transformation;
    if (t.kind !== 'source') continue;
    const all = await t.source.planSplits(v.parallelism);
    assignSplits(all, v.parallelism).forEach((s, i) => (splits[`${v.index}:${i}`] = s));
  }

  const clock = options.clock ?? systemClock;
  const stdout = options.stdout ?? ((t: string) => void process.stdout.write(t));
  const started = Date.now();
  const collected = new Map<string, unknown[]>();
  const totalTasks = plan.subtasks.length;
  const sourceVertices = new Set(graph.vertices.filter((v) => v.isSource).map((v) => v.index));
  const sinkOps = graph.vertices.flatMap((v) => v.operators.filter((o) => o.node.transformation.kind === 'one-input' && (o.node.transformation as { isSink: boolean }).isSink).map((o) => [v.index, o.index] as const));
  const metrics = new Map<string, TaskMetrics>();
  const heap = new Map<number, number>();
  let finishedTasks = 0;
  let deployed = 0;
  let settle: (r: JobResult) => void = () => {};
  const done = new Promise<JobResult>((r) => (settle = r));
  let ended = false;
  const executors: ExecutorHandle[] = [];
  let local: TaskExecutor | undefined;

  const progress = (): Progress => {
    if (local) for (const m of local.metrics()) metrics.set(`${m.vertex}:${m.subtask}`, m);
    let recordsIn = 0;
    let recordsOut = 0;
    for (const m of metrics.values()) {
      if (sourceVertices.has(m.vertex)) recordsIn += m.recordsIn[0] ?? 0;
      for (const [v, o] of sinkOps) if (m.vertex === v) recordsOut += m.recordsIn[o] ?? 0;
    }
    const heapUsed = local ? process.memoryUsage().heapUsed : [...heap.values()].reduce((a, b) => a + b, 0);
    return { elapsedMs: Date.now() - started, recordsIn, recordsOut, heapUsed };
  };

  const end = (status: JobStatus, error?: SerializedError) => {
    if (ended) return;
    ended = true;
    for (const e of executors) e.send({ type: 'cancel' });
    clearInterval(ticker);
    const p = progress();
    void Promise.all(executors.map((e) => e.terminate())).then(() => settle(new JobResult(status, error, collected, Date.now() - started, p, graph)));
  };

  const onMessage = (m: FromExecutor) => {
    if (ended) return;
    switch (m.type) {
      case 'deployed':
        if (++deployed === executors.length) for (const e of executors) e.send({ type: 'start' });
        return;
      case 'executor-failed':
        end('FAILED', m.error);
        return;
      case 'task-finished':
        metrics.set(`${m.vertex}:${m.subtask}`, m.metrics);
        if (++finishedTasks === totalTasks) end('FINISHED');
        return;
      case 'task-failed':
        end('FAILED', m.error);
        return;
      case 'collect': {
        let list = collected.get(m.sink);
        if (list === undefined) collected.set(m.sink, (list = []));
        for (const v of m.values) list.push(v);
        return;
      }
      case 'metrics':
        for (const t of m.tasks) metrics.set(`${t.vertex}:${t.subtask}`, t);
        heap.set(m.workerIndex, m.heapUsed);
        return;
      case 'stdout':
        stdout(m.text);
        return;
    }
  };

  const ticker = setInterval(() => options.onProgress?.(progress()), 1000);
  ticker.unref();

  if (workers === 1) {
    // Everything in this thread: batches pass by reference, nothing is serialized.
    local = new TaskExecutor({
      workerIndex: 0, graph, plan, splits, attempt: 0, credits: options.credits ?? DEFAULT_CHANNEL_CREDITS,
      clock, send: (m) => queueMicrotask(() => onMessage(m)), dataPlane: undefined, writeStdout: stdout,
    });
    const ex = local;
    executors.push({
      send: (m) => {
        if (m.type === 'start') ex.start();
        else if (m.type === 'cancel') ex.cancel();
      },
      terminate: async () => {},
    });
    queueMicrotask(() => onMessage({ type: 'deployed', workerIndex: 0 }));
    return done;
  }

  // Worker threads, each pair joined by its own data port.
  const peerPorts: Record<number, MessagePort>[] = Array.from({ length: workers }, () => ({}));
  for (let i = 0; i < workers; i++) {
    for (let j = i + 1; j < workers; j++) {
      const { port1, port2 } = new MessageChannel();
      peerPorts[i]![j] = port1;
      peerPorts[j]![i] = port2;
    }
  }
  for (let w = 0; w < workers; w++) {
    const worker = new Worker(new URL('./worker-entry.js', import.meta.url), { stdout: false, stderr: false });
    let exited = false;
    worker.on('message', onMessage);
    worker.on('error', (e) => end('FAILED', serializeError(e)));
    worker.on('exit', (code) => {
      exited = true;
      if (!ended) end('FAILED', { name: 'WorkerExit', message: `worker thread ${w} exited unexpectedly (code ${code})`, stack: undefined, user: false });
    });
    executors.push({
      send: (m, transfer) => worker.postMessage(m, transfer ?? []),
      terminate: async () => {
        if (!exited) await worker.terminate();
      },
    });
    const peers = peerPorts[w]!;
    const msg: ToExecutor & { peers: Record<number, MessagePort> } = {
      type: 'deploy',
      job: { modulePath, args, defaultParallelism: parallelism },
      workerIndex: w,
      plan,
      fingerprint: graph.fingerprint,
      splits,
      attempt: 0,
      credits: options.credits ?? DEFAULT_CHANNEL_CREDITS,
      peers,
    };
    worker.postMessage(msg, Object.values(peers));
  }
  return done;
}
