/**
 * A task waiting for the final checkpoint polls no input, while each finished producer sends
 * it an unaligned barrier per checkpoint after its end of data. Queued in the ended channels,
 * they piled up until the whole job finished (one per checkpoint per channel: 137 after 137
 * checkpoints; with 1 s checkpoints and 1,024 channels, gigabytes a day). Found by a read-only
 * audit; fails before.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { defineJob, runJob } from '../../src/index.ts';
import { InputChannel } from '../../src/runtime/channels/channel.ts';

const dirs: string[] = [];
afterAll(() => { for (const d of dirs) rmSync(d, { recursive: true, force: true }); });

describe('barriers after the end of a channel', () => {
  for (const unaligned of [true, false]) {
    it(`are not queued in a finished part of a running job (${unaligned ? 'unaligned' : 'aligned'} checkpoints)`, async () => {
      // Observed, not changed: the queue length of every ended channel after each arrival.
      const queuedAfterEnd = new Map<InputChannel, number>();
      const push = InputChannel.prototype.push;
      InputChannel.prototype.push = function (this: InputChannel, el) {
        push.call(this, el);
        if (this.ended) queuedAfterEnd.set(this, this.size());
      };
      const dir = mkdtempSync(join(tmpdir(), 'weir-ended-barriers-'));
      dirs.push(dir);
      try {
        // A bounded pipeline of three tasks beside an unbounded one that runs 4 s.
        const r = await runJob(defineJob((env) => {
          env.fromElements(1, 2, 3).rebalance().map((x) => x * 2).rebalance().addSink(() => {});
          env.fromGenerator((i) => i, { count: 4000, ratePerSecond: 1000 }).rebalance().addSink(() => {});
        }), { workers: 1, parallelism: 1, stdout: () => {}, log: () => {}, checkpoint: { dir, interval: 20, unaligned } });
        expect(r.status, r.error?.message).toBe('FINISHED');
        expect(r.checkpoints.counts.completed).toBeGreaterThan(20);
        expect(Math.max(0, ...queuedAfterEnd.values())).toBe(0);
      } finally {
        InputChannel.prototype.push = push;
      }
    }, 60_000);
  }
});
