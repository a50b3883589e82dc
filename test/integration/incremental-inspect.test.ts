/**
 * Inspection of an incremental chain shows what a restore of it holds (state/heap/restore.ts),
 * not the union of its files: a delta's timers replace its key groups' timers (the timers the
 * base held have fired since), and a state a delta lists as dropped (a fired window's) is gone,
 * keys and all. Fixture: jobs/incremental-inspect.ts (event-time timers for an early key only;
 * 100 ms tumbling windows), failed at record 700 to keep its checkpoints; on the heap and the disk
 * backend (whose deltas have the same layout).
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { LocalCheckpointStorage } from '../../src/checkpoint/storage.ts';
import { lookupValue, summarize } from '../../src/checkpoint/inspect.ts';
import { openStateFile, StateFileReader } from '../../src/checkpoint/state-file.ts';
import { storageResolver } from '../../src/checkpoint/storage-resolver.ts';
import { parseBlockName, sharedStateReference } from '../../src/checkpoint/names.ts';
import type { KeyedSnapshotMeta } from '../../src/state/heap/format.ts';
import { runJob } from '../../src/index.ts';

const JOB = join(dirname(fileURLToPath(import.meta.url)), '..', 'fixtures', 'jobs', 'incremental-inspect.ts');

let work: string;
beforeAll(() => {
  work = mkdtempSync(join(tmpdir(), 'weir-incremental-inspect-'));
});
afterAll(() => rmSync(work, { recursive: true, force: true }));

/** A chain file's recorded states and how many timer blocks it holds. */
async function fileFacts(checkpoint: string, name: string, size: number): Promise<{ states: string[]; timerBlocks: number }> {
  const input = await openStateFile(storageResolver().workerView, sharedStateReference(checkpoint, name), size);
  try {
    const reader = await StateFileReader.open(input);
    const meta = reader.index.meta as KeyedSnapshotMeta;
    return { states: meta.states.map((s) => s.name), timerBlocks: reader.index.blocks.filter((b) => parseBlockName(b.name).kind === 'timers').length };
  } finally {
    await input.close();
  }
}

describe('weir state inspect on an incremental chain', () => {
  it.each(['heap', 'disk'])('counts only the timers and window states a restore of the chain would hold (%s backend)', async (backend) => {
    const chk = join(work, `chk-${backend}`);
    const result = await runJob(JOB, {
      workers: 1,
      parallelism: 1,
      stdout: () => {},
      log: () => {},
      args: ['2000', '250'],
      restartStrategy: { type: 'none' },
      stateBackend: backend,
      ...(backend === 'disk' ? { stateBackendOptions: { disk: { dir: join(work, 'disk') } } } : {}),
      checkpoint: { interval: 20, dir: chk, incremental: true, retention: 'retain-on-cancel', numRetained: 3, incrementalMaxDeltas: 1000, incrementalMaxDeltaRatio: 1000 },
    });
    expect(result.status).toBe('FAILED');
    const kept = await new LocalCheckpointStorage(chk).completed(result.jobId);
    const last = kept.at(-1)!;
    const timersOp = last.metadata.operators.find((o) => o.uid === 'timers')!;
    const windowsOp = last.metadata.operators.find((o) => o.uid === 'windows')!;

    const timerChain = timersOp.subtasks[0]!.chain!;
    const windowChain = windowsOp.subtasks[0]!.chain!;
    expect(timerChain.length).toBeGreaterThan(2);
    // The premise: the chains' bases were taken while the early key's timers were pending and
    // the first windows open (the job runs 2.8 s; its first checkpoint comes within 0.6 s).
    const timerBase = await fileFacts(last.path, timerChain[0]!.name, timerChain[0]!.size);
    expect(timerBase.timerBlocks).toBeGreaterThan(0);
    const windowBase = await fileFacts(last.path, windowChain[0]!.name, windowChain[0]!.size);
    const windowLast = await fileFacts(last.path, windowChain.at(-1)!.name, windowChain.at(-1)!.size);
    const fired = windowBase.states.filter((s) => !windowLast.states.includes(s));
    expect(fired.length).toBeGreaterThan(0);

    const summary = await summarize(last.path);
    const timers = summary.operators.find((o) => o.uid === 'timers')!;
    expect(timers.ranges[0]!.timers).toBe(0); // record 700 is far past the early key's last timer (1,540 ms)
    const windows = summary.operators.find((o) => o.uid === 'windows')!;
    expect(windows.states.map((s) => s.name).sort()).toEqual([...windowLast.states].sort());
    // The windows the last file records (the watermark trails the records by up to its interval),
    // each with at most the 4 keys; none the chain's base held and a delta dropped.
    for (const st of windows.states) expect(st.keys, st.name).toBeLessThanOrEqual(4);
    expect(windows.ranges[0]!.keys).toBe(windows.states.reduce((a, s) => a + s.keys, 0));
    // A fired window's state is not found, for its key or any other.
    await expect(lookupValue(last.path, 'windows', fired[0]!, 'early')).rejects.toThrow(/has no state/);
  });
});
