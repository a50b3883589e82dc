/**
 * `--from latest` in a checkpoint directory several jobs share (one job file run per tenant):
 * the job of this run's name is resumed, never another job's checkpoint (before: the newest of
 * any job was taken, restored under that job's id, and its next checkpoint replaced that job's).
 */
import { describe, expect, it } from 'vitest';
import { chooseLatest } from '../../src/cluster/start-point.ts';
import type { CompletedCheckpointRef } from '../../src/checkpoint/storage.ts';

function ref(jobId: string, jobName: string, completedAt: number): CompletedCheckpointRef {
  return { path: `/chk/${jobId}/chk-1`, metadata: { jobId, jobName, completedAt, checkpointId: 1 } } as unknown as CompletedCheckpointRef;
}

describe('--from latest chooses the job of this name', () => {
  const a = ref('aaa', 'tenant-A', 100);
  const b = ref('bbb', 'tenant-B', 200);

  it('the job of the same name, even when another job checkpointed later', () => {
    expect(chooseLatest([a, b], 'tenant-A', '/chk')).toEqual({ pick: a });
    expect(chooseLatest([a, b], 'tenant-B', '/chk')).toEqual({ pick: b });
  });

  it('no job of that name among several: none picked, the others named (latest refuses, latest-or-empty starts fresh); several of it: refused, naming them', () => {
    expect(chooseLatest([a, b], 'tenant-C', '/chk')).toEqual({ pick: undefined, others: '"tenant-A" (job aaa), "tenant-B" (job bbb)' });
    const a2 = ref('ccc', 'tenant-A', 300);
    expect(chooseLatest([a, b, a2], 'tenant-A', '/chk')).toEqual({
      error: '--from latest: 2 jobs named "tenant-A" have checkpoints in /chk: "tenant-A" (job aaa), "tenant-A" (job ccc); name one with --from <its checkpoint directory>',
    });
  });

  it('a directory of only another job is not resumed (before: taken as this job renamed; a new tenant took over the one there, its checkpoints replaced); none is nothing', () => {
    expect(chooseLatest([a], 'tenant-B', '/chk')).toEqual({ pick: undefined, others: '"tenant-A" (job aaa)' });
    expect(chooseLatest([a], 'tenant-A', '/chk')).toEqual({ pick: a });
    expect(chooseLatest([], 'tenant-A', '/chk')).toEqual({ pick: undefined });
  });
});
