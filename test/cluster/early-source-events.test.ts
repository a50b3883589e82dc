/**
 * A source reader runs as soon as its task opens; the split enumerators start once every task
 * of the attempt runs. An event a reader sends before then (the Kinesis reader's one-time
 * "this shard is finished", from a shard read to its end at once) reaches its enumerator when it
 * starts, in order. Before, it was dropped, and with it the shard's children for the attempt.
 */
import { describe, expect, it } from 'vitest';
import { defineJob, runJob, type Source, type SourceSplit } from '../../src/index.ts';

interface Split extends SourceSplit { readonly n: number }

/** Each reader reports its splits as soon as it gets them (before its task runs), then at its end. */
function reportingSource(received: unknown[]): Source<number, Split> {
  return {
    name: 'reporting',
    bounded: true,
    planSplits: (p) => Array.from({ length: p }, (_, i) => ({ id: `s${i}`, n: 5 })),
    createReader: (ctx) => {
      const splits: Split[] = [];
      let at = 0;
      return {
        addSplits(s) {
          splits.push(...s);
          for (const x of s) ctx.sendSourceEvent?.({ got: x.id, subtask: ctx.subtaskIndex });
        },
        poll(out) {
          const total = splits.reduce((a, s) => a + s.n, 0);
          if (at >= total) {
            ctx.sendSourceEvent?.({ end: ctx.subtaskIndex });
            return 'end';
          }
          out.collect(at++);
          return 'more';
        },
        snapshotSplits: () => splits,
      };
    },
    createEnumerator: () => ({
      start() {
        received.push('started');
      },
      handleSourceEvent(subtask, event) {
        received.push({ subtask, event });
      },
      close() {},
    }),
  };
}

describe('source events sent before the enumerators start', () => {
  for (const [workers, p] of [[1, 1], [1, 2]] as const) {
    it(`reach the enumerator after its start, in order (${workers} worker(s), parallelism ${p})`, async () => {
      const received: unknown[] = [];
      const r = await runJob(defineJob((env) => void env.fromSource(reportingSource(received)).map((x) => x).collect('out')), {
        workers, parallelism: p, stdout: () => {}, log: () => {},
      });
      expect(r.status, r.error?.message).toBe('FINISHED');
      expect(received[0]).toBe('started');
      for (let i = 0; i < p; i++) {
        const mine = received.filter((x): x is { subtask: number; event: unknown } => typeof x === 'object' && (x as { subtask: number }).subtask === i);
        expect(mine.map((x) => x.event), `subtask ${i}`).toEqual([{ got: `s${i}`, subtask: i }, { end: i }]);
      }
    });
  }
});

describe('a split enumerator\'s scheduled callback that throws', () => {
  it('fails the job with its error (before: thrown from a bare timer, it crashed the whole process, no restart, no line)', async () => {
    const source: Source<number, Split> = {
      name: 'discovering',
      bounded: false,
      planSplits: () => [{ id: 's0', n: 0 }],
      createReader: () => ({
        addSplits() {},
        poll: () => 'wait',
        snapshotSplits: () => [],
      }),
      createEnumerator: (ctx) => ({
        start() {
          ctx.schedule(20, () => {
            throw new Error('discovery failed: connection reset');
          });
        },
        handleSourceEvent() {},
        close() {},
      }),
    };
    const r = await runJob(defineJob((env) => void env.fromSource(source).collect('out')), { workers: 1, stdout: () => {}, log: () => {} });
    expect(r.status).toBe('FAILED');
    expect(r.error?.message).toMatch(/discovery failed: connection reset/);
  });
});
