/**
 * Small keyed state inline in the metadata (state.storage.fs.memory-threshold): a stream at or
 * below the threshold never reaches storage and its bytes are handed back by name; one past it
 * is written to storage whole, starting with what was buffered; a job on S3 with small keyed
 * state writes no state object at all, and restores from the metadata exactly.
 */
import { describe, expect, it } from 'vitest';
import { InliningStreamFactory, inlineStateInput } from '../../src/checkpoint/inline-state.ts';
import { memoryThresholdFor, DEFAULT_CHECKPOINT_CONFIG, applyCheckpointSettings } from '../../src/checkpoint/config.ts';
import { MemoryCheckpointStorage } from '../../src/checkpoint/memory/index.ts';
import { childReference } from '../../src/checkpoint/names.ts';

async function write(f: InliningStreamFactory, name: string, sizes: number[]): Promise<number> {
  const out = await f.createStateStream(name);
  let i = 0;
  for (const n of sizes) await out.write([new Uint8Array(n).fill(++i)]);
  return out.close();
}

describe('inline state streams', () => {
  it('at or below the threshold nothing is stored and the bytes are taken once by name; past it the whole file is stored', async () => {
    const s = new MemoryCheckpointStorage();
    const loc = await s.initCheckpoint('job', 1);
    const f = new InliningStreamFactory(s.workerView.resolveLocation(loc.reference), 100);
    expect(await write(f, 'small.state', [60, 40])).toBe(100);
    expect(await write(f, 'big.state', [60, 41, 7])).toBe(108);
    const files = s.files.listFiles().map((x) => x.reference.split('/').pop());
    expect(files).not.toContain('small.state');
    expect(files).toContain('big.state');
    const big = await s.workerView.openState(childReference(loc.reference, 'big.state'));
    expect(big.size).toBe(108);
    expect([...(await big.read(59, 3))]).toEqual([1, 2, 2]);
    expect([...(await big.read(101, 1))]).toEqual([3]);
    const small = f.take('small.state');
    expect(small?.byteLength).toBe(100);
    expect(f.take('small.state')).toBeUndefined();
    expect(f.take('big.state')).toBeUndefined();
    const input = inlineStateInput('x', Buffer.from(small!).toString('base64'));
    expect([...(await input.read(59, 2))]).toEqual([1, 2]);
    await expect(input.read(99, 2)).rejects.toThrow(/cannot read 2 bytes at 99/);
  });

  it('threshold 0 stores everything; one write at a time; abort after spilling removes the stored file', async () => {
    const s = new MemoryCheckpointStorage();
    const loc = await s.initCheckpoint('job', 1);
    const off = new InliningStreamFactory(s.workerView.resolveLocation(loc.reference), 0);
    await write(off, 'a.state', [1]);
    expect(off.take('a.state')).toBeUndefined();
    const f = new InliningStreamFactory(s.workerView.resolveLocation(loc.reference), 10);
    const out = await f.createStateStream('b.state');
    const first = out.write([new Uint8Array(20)]);
    await expect(out.write([new Uint8Array(1)])).rejects.toThrow(/one at a time/);
    await first;
    expect(s.files.listFiles().map((x) => x.reference.split('/').pop())).toContain('b.state');
    await out.abort();
    expect(s.files.listFiles().map((x) => x.reference.split('/').pop())).not.toContain('b.state');
  });

  it('the threshold in force: the setting, else 20 KB for s3:// and 0 for a local directory', () => {
    expect(memoryThresholdFor(DEFAULT_CHECKPOINT_CONFIG, 's3://b/chk')).toBe(20 * 1024);
    expect(memoryThresholdFor(DEFAULT_CHECKPOINT_CONFIG, '/tmp/chk')).toBe(0);
    expect(memoryThresholdFor(DEFAULT_CHECKPOINT_CONFIG, undefined)).toBe(0);
    const set = applyCheckpointSettings(DEFAULT_CHECKPOINT_CONFIG, { memoryThreshold: 5 }, 'test');
    expect(memoryThresholdFor(set, '/tmp/chk')).toBe(5);
    expect(() => applyCheckpointSettings(DEFAULT_CHECKPOINT_CONFIG, { memoryThreshold: -1 }, 'test')).toThrow(/state memory threshold/);
  });
});
