/**
 * The checkpoint shell with incremental chains, on in-memory storage and a manual clock: the
 * shared-state registry decides, the shell deletes. A base shared by a retained checkpoint
 * outlives the checkpoint that wrote it; a chain replaced by a new base is deleted once its
 * last checkpoint is subsumed; and the known race: a task that has not heard of the newer
 * completion acks a checkpoint built on the deleted chain, which is declined (its own new file
 * deleted with it), never completed with a file missing. A late ack's unreferenced file goes.
 */
import { describe, expect, it } from 'vitest';
import { DEFAULT_CHECKPOINT_CONFIG } from '../../src/checkpoint/config.ts';
import { MemoryCheckpointStorage } from '../../src/checkpoint/memory/memory-storage.ts';
import { sharedDirOfCheckpoint } from '../../src/checkpoint/names.ts';
import { CheckpointStatsTracker } from '../../src/checkpoint/stats.ts';
import { storageResolver } from '../../src/checkpoint/storage-resolver.ts';
import type { ChainFileRef, TaskAck } from '../../src/core/checkpoint-format.ts';
import { ManualClock } from '../../src/core/clock.ts';
import { taskId } from '../../src/core/task-id.ts';
import type { JobGraph } from '../../src/graph/job-graph.ts';
import { CheckpointShell } from '../../src/cluster/checkpoint-shell.ts';
import type { ToExecutor } from '../../src/cluster/messages.ts';

const JOB = 'job1';
const T = taskId(0, 0);
const turn = () => new Promise((r) => setImmediate(r));

async function setup() {
  const storage = new MemoryCheckpointStorage();
  await storage.initJob(JOB);
  const clock = new ManualClock(1000);
  const stats = new CheckpointStatsTracker(100);
  const sent: ToExecutor[] = [];
  const logs: string[] = [];
  const shell = new CheckpointShell({
    jobId: JOB, graph: { vertices: [], jobName: 'shell test' } as unknown as JobGraph, clock, storage, snapshots: storageResolver(storage), stats, attempt: 0,
    log: (l) => logs.push(l), broadcast: (m) => sent.push(m),
    requestPlacement: () => ({ savepointTarget: undefined, suspendSourcesAfter: false }),
    onRequestCompleted: () => {}, onRequestFailed: () => {}, onCheckpointCompleted: () => {}, onSavepointCommitted: () => {}, failJob: (m) => { throw new Error(m); },
  }, { ...DEFAULT_CHECKPOINT_CONFIG, numRetained: 1 }, [{ id: T, isSource: true }], 1, []);
  shell.handle({ type: 'task-status', now: clock.now(), task: T, status: 'running' });

  const shared = async (): Promise<string[]> => (await storage.files.list(`${storage.jobDir(JOB)}/shared`)).map((e) => e.name).sort();
  /** A checkpoint: triggered, its new chain file written by the task, acked with `chain`; resolves with its stats status. */
  async function checkpoint(id: number, chain: ChainFileRef[]): Promise<string> {
    shell.handle({ type: 'request', now: clock.now(), checkpointType: 'checkpoint', requestId: `r${id}` });
    await turn();
    await turn();
    const trigger = sent.find((m) => m.type === 'trigger' && m.req.checkpointId === id);
    if (trigger === undefined || trigger.type !== 'trigger') throw new Error(`checkpoint ${id} not triggered`);
    const own = chain.at(-1)!;
    if (own.checkpointId === id) {
      const out = await storage.workerView.resolveLocation(sharedDirOfCheckpoint(trigger.req.location)).createStateStream(own.name);
      await out.write([new Uint8Array(own.size)]);
      await out.close();
    }
    const ack: TaskAck = { task: T, operators: [{ operatorId: 'op', chain, keyGroupRange: { start: 0, end: 127 }, stateSize: own.size }], stats: { syncMs: 0, asyncMs: 0, alignmentMs: 0, startDelayMs: 0, stateSize: own.size } };
    shell.handle({ type: 'ack', now: clock.now(), id, ack });
    for (let i = 0; i < 20; i++) await turn();
    await shell.quiesce();
    return stats.entries().find((e) => e.id === id)!.status;
  }
  return { shell, storage, stats, shared, checkpoint, logs };
}

const file = (name: string, checkpointId: number, kind: 'base' | 'delta', size = 10): ChainFileRef => ({ name, size, checkpointId, kind });

describe('checkpoint shell: shared files of incremental checkpoints', () => {
  it('keeps a shared base, deletes a replaced chain, declines an ack built on a deleted chain', async () => {
    const { shared, checkpoint, stats, storage, shell } = await setup();
    const b1 = file('b1', 1, 'base');
    const d2 = file('d2', 2, 'delta');
    expect(await checkpoint(1, [b1])).toBe('COMPLETED');
    expect(await checkpoint(2, [b1, d2])).toBe('COMPLETED');
    // Checkpoint 1 is subsumed (1 retained); its base is checkpoint 2's too.
    expect(await shared()).toEqual(['b1', 'd2']);
    expect(await checkpoint(3, [file('b3', 3, 'base')])).toBe('COMPLETED');
    // Checkpoint 2 subsumed: its chain is no one's any more.
    expect(await shared()).toEqual(['b3']);
    // A task that did not hear of 3 builds 4 on 2's chain: declined, its own delta deleted.
    expect(await checkpoint(4, [b1, d2, file('d4', 4, 'delta')])).toBe('FAILED');
    const failed = stats.entries().find((e) => e.id === 4)!;
    expect(failed.failureReason).toBe('CHECKPOINT_DECLINED_SUBSUMED'); // not counted: the job goes on (tolerable failures are 0 here)
    expect(failed.failureMessage).toMatch(/shared files that were already deleted \(b1, d2\)/);
    expect(await shared()).toEqual(['b3']);
    // The next one builds on 3 and completes.
    expect(await checkpoint(5, [file('b3', 3, 'base'), file('d5', 5, 'delta')])).toBe('COMPLETED');
    expect(await shared()).toEqual(['b3', 'd5']);
    // A late ack of the declined checkpoint 4 (built on 3 this time): its own file is garbage, 3's base is not.
    const out = await storage.workerView.resolveLocation(sharedDirOfCheckpoint(storage.checkpointDir(JOB, 4))).createStateStream('d4x');
    await out.write([new Uint8Array(3)]);
    await out.close();
    const late: TaskAck = { task: T, operators: [{ operatorId: 'op', chain: [file('b3', 3, 'base'), file('d4x', 4, 'delta', 3)], keyGroupRange: { start: 0, end: 127 }, stateSize: 3 }], stats: { syncMs: 0, asyncMs: 0, alignmentMs: 0, startDelayMs: 0, stateSize: 3 } };
    shell.handle({ type: 'ack', now: 2000, id: 4, ack: late });
    await shell.quiesce();
    expect(await shared()).toEqual(['b3', 'd5']);
  });
});
