/**
 * ExecutionPlan: every vertex expanded into subtasks with their key-group ranges and their
 * worker, and every channel between producer and consumer subtasks numbered. Subtask i of
 * every vertex goes to worker i mod W (Flink's slot sharing): a pipeline slice stays in one
 * thread, and only repartitioning edges cross threads.
 */
import { keyGroupRangeForSubtask } from '../state/key-groups.ts';
import { consumersOf, type JobGraph } from './job-graph.ts';
import type { KeyGroupRange } from '../core/checkpoint-format.ts';
import { WeirError } from '../core/errors.ts';

export interface SubtaskPlacement {
  readonly vertex: number;
  readonly index: number;
  readonly worker: number;
  readonly keyGroupRange: KeyGroupRange;
}

export interface ChannelPlan {
  readonly id: number;
  readonly edge: number;
  readonly producer: number;
  readonly consumer: number;
  readonly producerWorker: number;
  readonly consumerWorker: number;
}

export interface ExecutionPlan {
  readonly numWorkers: number;
  readonly subtasks: SubtaskPlacement[];
  readonly channels: ChannelPlan[];
}

export function workerOf(subtaskIndex: number, numWorkers: number): number {
  return subtaskIndex % numWorkers;
}

/** Channels of one edge: every producer subtask times the consumers it sends to. */
function channelCount(kind: Parameters<typeof consumersOf>[0], producers: number, consumers: number): number {
  if (kind === 'forward' || kind === 'global') return producers;
  if (kind === 'rescale') return Math.max(producers, consumers);
  return producers * consumers;
}

/**
 * Refuses a plan with more channels than `maxChannels` before anything is built: an all-to-all
 * edge has p x p channels, and at -p 1000 the million of them took workers past the deploy
 * timeout (a two-minute hang, then a failure that did not say why).
 */
export function checkChannelCount(graph: JobGraph, maxChannels: number): void {
  let total = 0;
  let widest: { edge: JobGraph['edges'][number]; n: number } | undefined;
  for (const e of graph.edges) {
    const n = channelCount(e.partition.kind, e.source.parallelism, e.target.parallelism);
    total += n;
    if (widest === undefined || n > widest.n) widest = { edge: e, n };
  }
  if (total <= maxChannels || widest === undefined) return;
  const e = widest.edge;
  throw new WeirError(
    'CONFIG',
    `the job needs ${total} channels between subtasks, more than the ${maxChannels} allowed (--max-channels); the ${e.partition.kind} edge from "${e.source.name}" (parallelism ${e.source.parallelism}) to "${e.target.name}" (parallelism ${e.target.parallelism}) alone has ${widest.n}: lower the parallelism, or raise --max-channels`,
  );
}

export function planExecution(graph: JobGraph, numWorkers: number, maxChannels = Infinity): ExecutionPlan {
  if (!Number.isInteger(numWorkers) || numWorkers < 1) throw new RangeError(`number of workers must be a positive integer, got ${numWorkers}`);
  checkChannelCount(graph, maxChannels);
  const subtasks: SubtaskPlacement[] = [];
  for (const v of graph.vertices) {
    for (let i = 0; i < v.parallelism; i++) {
      subtasks.push({ vertex: v.index, index: i, worker: workerOf(i, numWorkers), keyGroupRange: keyGroupRangeForSubtask(v.maxParallelism, v.parallelism, i) });
    }
  }
  const channels: ChannelPlan[] = [];
  for (const e of graph.edges) {
    const P = e.source.parallelism;
    const C = e.target.parallelism;
    for (let p = 0; p < P; p++) {
      for (const c of consumersOf(e.partition.kind, p, P, C)) {
        channels.push({ id: channels.length, edge: e.index, producer: p, consumer: c, producerWorker: workerOf(p, numWorkers), consumerWorker: workerOf(c, numWorkers) });
      }
    }
  }
  return { numWorkers, subtasks, channels };
}
