/**
 * What a completed checkpoint records, built from the job graph and the tasks' acks (pure):
 * per operator its identity and every subtask's state handle, per subtask its timings; and
 * the line of the job's checkpoint history for a stats entry.
 */
import { METADATA_VERSION, METADATA_VERSION_WITHOUT_CHAINS, type CheckpointMetadata, type OperatorStateMeta } from '../checkpoint/metadata.ts';
import { channelEdgesOf } from '../checkpoint/restore-plan.ts';
import type { CheckpointStatsEntry } from '../checkpoint/stats.ts';
import type { CheckpointType, TaskAck } from '../core/checkpoint-format.ts';
import { subtaskOf } from '../core/task-id.ts';
import type { JobGraph } from '../graph/job-graph.ts';

export interface MetadataFacts {
  readonly graph: JobGraph;
  readonly jobId: string;
  readonly checkpointId: number;
  readonly timestamp: number;
  readonly type: CheckpointType;
  readonly acks: readonly TaskAck[];
  readonly completedAt: number;
}

type MutableOperator = OperatorStateMeta & { subtasks: OperatorStateMeta['subtasks'][number][] };

function operatorsOf(graph: JobGraph): Map<string, MutableOperator> {
  const byOp = new Map<string, MutableOperator>();
  for (const v of graph.vertices) {
    for (const o of v.operators) {
      const t = o.node.transformation;
      const keyed = t.kind === 'one-input' ? t.keySelector !== undefined : t.kind === 'two-input' ? t.keySelectors.some((k) => k !== undefined) : false;
      byOp.set(o.node.id, { id: o.node.id, name: o.node.name, uid: t.uid, parallelism: o.node.parallelism, maxParallelism: o.node.maxParallelism, keyed, subtasks: [] });
    }
  }
  return byOp;
}

export function buildCheckpointMetadata(f: MetadataFacts): CheckpointMetadata {
  const byOp = operatorsOf(f.graph);
  let stateSize = 0;
  const subtaskStats: Record<string, TaskAck['stats']> = {};
  for (const a of f.acks) {
    subtaskStats[a.task] = a.stats;
    const subtask = subtaskOf(a.task);
    for (const h of a.operators) {
      const op = byOp.get(h.operatorId);
      if (!op) continue;
      stateSize += h.stateSize;
      op.subtasks.push({
        subtask,
        ...(h.file !== undefined ? { file: h.file, fileSize: h.fileSize!, keyGroupRange: h.keyGroupRange! } : {}),
        ...(h.fileInline !== undefined ? { fileInline: h.fileInline } : {}),
        ...(h.chain !== undefined ? { chain: h.chain, keyGroupRange: h.keyGroupRange! } : {}),
        ...(h.inline !== undefined ? { inline: h.inline } : {}),
        ...(h.watermark !== undefined ? { watermark: h.watermark } : {}),
        ...(h.channelState !== undefined ? { channelState: h.channelState } : {}),
        stateSize: h.stateSize,
      });
    }
  }
  for (const op of byOp.values()) op.subtasks.sort((a, b) => a.subtask - b.subtask);
  // Splits are all assigned at deployment, so no enumerator holds an unassigned one.
  const enumerators: Record<string, unknown[]> = {};
  for (const v of f.graph.vertices) if (v.isSource) enumerators[v.operators[0]!.node.id] = [];
  const chains = [...byOp.values()].some((o) => o.subtasks.some((s) => s.chain !== undefined));
  const inFlight = [...byOp.values()].some((o) => o.subtasks.some((s) => s.channelState !== undefined));
  return {
    format: 'weir-checkpoint', version: chains ? METADATA_VERSION : METADATA_VERSION_WITHOUT_CHAINS, jobId: f.jobId, jobName: f.graph.jobName, checkpointId: f.checkpointId, type: f.type,
    timestamp: f.timestamp, completedAt: f.completedAt, operators: [...byOp.values()], enumerators, stats: { stateSize, subtasks: subtaskStats },
    ...(inFlight ? { channelEdges: channelEdgesOf(f.graph.edges) } : {}),
  };
}

export function historyLine(e: CheckpointStatsEntry): unknown {
  return {
    id: e.id, status: e.status, type: e.type, triggerTimestamp: e.triggerTimestamp, latestAckTimestamp: e.latestAckTimestamp, endToEndDurationMs: e.endToEndDurationMs,
    stateSize: e.stateSize, checkpointedSize: e.checkpointedSize, numAcknowledged: e.numAcknowledged, numSubtasks: e.numSubtasks,
    subtasks: e.subtasks, failureReason: e.failureReason, failureMessage: e.failureMessage, externalPath: e.externalPath, attempt: e.attempt,
  };
}
