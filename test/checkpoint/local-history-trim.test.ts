/**
 * The local checkpoint history (an appended file) is trimmed as S3's is folded: past twice
 * MAX_APPENDED_BYTES (16 MiB) it keeps its newest 16 MiB from a line start. It grew for good, and
 * past 256 MiB a resume could not read it and `weir checkpoints` listed nothing.
 */
import { mkdtempSync, readFileSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { localFileSystem } from '../../src/checkpoint/local/local-file-system.ts';

const dir = mkdtempSync(join(tmpdir(), 'weir-history-trim-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe('local appended files', () => {
  it('keep their newest 16 MiB of whole lines once past 32 MiB; appends in flight together all land, in order', async () => {
    const file = join(dir, 'checkpoint-history.jsonl');
    const line = (i: number) => `${JSON.stringify({ id: i, pad: 'x'.repeat(64 * 1024) })}\n`;
    const n = 600; // ~38 MiB
    // Several appends at once, as a busy job master could issue them.
    for (let i = 0; i < n; i += 10) await Promise.all(Array.from({ length: 10 }, (_, k) => localFileSystem.append(file, Buffer.from(line(i + k)))));
    const size = statSync(file).size;
    expect(size).toBeLessThanOrEqual(32 * 2 ** 20);
    const ids = readFileSync(file, 'utf8').split('\n').filter((l) => l !== '').map((l) => (JSON.parse(l) as { id: number }).id);
    expect(ids.at(-1)).toBe(n - 1);
    expect(ids).toEqual(Array.from({ length: ids.length }, (_, k) => ids[0]! + k)); // whole lines, consecutive
    expect(ids[0]).toBeGreaterThan(0); // the oldest were dropped
  });
});
