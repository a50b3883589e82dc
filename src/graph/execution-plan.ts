/**
 * ExecutionPlan: every vertex expanded into subtasks with their key-group ranges and their
 * worker, and every channel between producer and consumer subtasks numbered. Subtask i of
 * every vertex goes to worker i mod W (Flink's slot sharing): a pipeline slice stays in one
 * thread, and only repartitioning edges cross threads.
 */
import { keyGroupRangeForSubtask } from '../state/key-groups.ts';
import { consumersOf, type JobGraph } from './job-graph.ts';
import type { KeyGroupRange } from '../core/checkpoint-format.ts';

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

export function planExecution(graph: JobGraph, numWorkers: number): ExecutionPlan {
  if (!Number.isInteger(numWorkers) || numWorkers < 1) throw new RangeError(`number of workers must be a positive integer, got ${numWorkers}`);
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
