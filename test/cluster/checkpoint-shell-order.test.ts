/**
 * Triggers reach the tasks in checkpoint id order, however long each one's storage location
 * takes to create. A task ignores a trigger older than one it has seen; before, a savepoint
 * whose directory was quicker to make than the periodic checkpoint's (local savepoints beside
 * checkpoints on S3) overtook it: checkpoint 1 was never acked, held back periodic checkpoints
 * and sink commits until its 10 min timeout, and then failed the job (found by a read-only audit).
 */
import { describe, expect, it } from 'vitest';
import { DEFAULT_CHECKPOINT_CONFIG } from '../../src/checkpoint/config.ts';
import { MemoryCheckpointStorage } from '../../src/checkpoint/memory/memory-storage.ts';
import { CheckpointStatsTracker } from '../../src/checkpoint/stats.ts';
import { storageResolver } from '../../src/checkpoint/storage-resolver.ts';
import { ManualClock } from '../../src/core/clock.ts';
import { taskId } from '../../src/core/task-id.ts';
import type { JobGraph } from '../../src/graph/job-graph.ts';
import { CheckpointShell } from '../../src/cluster/checkpoint-shell.ts';
import type { ToExecutor } from '../../src/cluster/messages.ts';

const JOB = 'job-order';
const T = taskId(0, 0);

describe('checkpoint shell', () => {
  it('sends triggers in id order when a later checkpoint\'s location is created sooner', async () => {
    const storage = new MemoryCheckpointStorage();
    await storage.initJob(JOB);
    const init = storage.initCheckpoint.bind(storage);
    // Checkpoint locations take 30 ms (an object store), the savepoint's none.
    storage.initCheckpoint = async (jobId, id) => {
      await new Promise((r) => setTimeout(r, 30));
      return init(jobId, id);
    };
    const clock = new ManualClock(0);
    const stats = new CheckpointStatsTracker(100);
    const order: number[] = [];
    const failures: string[] = [];
    let lastSeen = 0;
    const shell: CheckpointShell = new CheckpointShell({
      jobId: JOB, graph: { vertices: [], jobName: 'order' } as unknown as JobGraph, clock, storage, snapshots: storageResolver(storage), stats, attempt: 0,
      log: () => {},
      broadcast: (m: ToExecutor) => {
        if (m.type !== 'trigger') return;
        const id = m.req.checkpointId;
        order.push(id);
        if (id <= lastSeen) return; // the task's rule: a trigger older than one seen is stale
        lastSeen = id;
        queueMicrotask(() => shell.handle({ type: 'ack', now: clock.now(), id, ack: { task: T, operators: [{ operatorId: 'op', stateSize: 1 }], stats: { syncMs: 0, asyncMs: 0, alignmentMs: 0, startDelayMs: 0, stateSize: 1 } } }));
      },
      requestPlacement: (r) => ({ savepointTarget: r === 'sp' ? `${storage.root}/savepoints` : undefined, suspendSourcesAfter: false }),
      onRequestCompleted: () => {}, onRequestFailed: () => {}, onCheckpointCompleted: () => {}, onSavepointCommitted: () => {},
      failJob: (m) => void failures.push(m),
    }, { ...DEFAULT_CHECKPOINT_CONFIG, intervalMs: 1000, tolerableFailures: 0 }, [{ id: T, isSource: true }], 1, []);
    shell.handle({ type: 'task-status', now: 0, task: T, status: 'running' });
    shell.scheduleTick();
    clock.advanceTo(1000); // periodic checkpoint 1
    shell.handle({ type: 'request', now: 1001, checkpointType: 'savepoint', requestId: 'sp' }); // savepoint 2
    for (let i = 0; i < 100 && stats.entries().filter((e) => e.status === 'COMPLETED').length < 2; i++) await new Promise((r) => setTimeout(r, 10));
    expect(order).toEqual([1, 2]);
    expect(stats.entries().map((e) => `${e.id} ${e.type} ${e.status}`).sort()).toEqual(['1 checkpoint COMPLETED', '2 savepoint COMPLETED']);
    expect(failures).toEqual([]);
    shell.shutdown();
  });
});
