import { describe, expect, it } from 'vitest';
import { statusText } from '../../src/cli/run.ts';
import { sparkline } from '../../src/cli/sparkline.ts';
import type { Progress } from '../../src/cluster/job-result.ts';
import type { CheckpointStatsEntry } from '../../src/checkpoint/stats.ts';

const p = (over: Partial<Progress>): Progress => ({ elapsedMs: 10_000, recordsIn: 50_000, recordsOut: 20_000, heapUsed: 64 * 2 ** 20, attempt: 0, lastCheckpoint: undefined, deadLetters: 0, ...over });

describe('the status line', () => {
  it('shows throughput since the last line, the most back-pressured subtask and the last checkpoint', () => {
    const cp = { id: 7, endToEndDurationMs: 120, stateSize: 3 * 1024 } as CheckpointStatsEntry;
    const line = statusText(p({ backPressure: { task: 'map (2)', msPerSecond: 634 }, lastCheckpoint: cp }), p({ elapsedMs: 5000, recordsIn: 0, recordsOut: 0 }));
    expect(line).toBe('weir: 10 s: 10.0k records/s in, 4.0k records/s out, heap 64 MiB, back pressure 63% at map (2), last checkpoint 7 (120 ms, 3.0 KiB)');
  });

  it('says back pressure is ok up to 10 % of the time, and leaves it out before any subtask reported', () => {
    expect(statusText(p({ backPressure: { task: 'x (1)', msPerSecond: 100 } }), undefined)).toMatch(/, heap 64 MiB, back pressure ok$/);
    expect(statusText(p({}), undefined)).toBe('weir: 10 s: 5.0k records/s in, 2.0k records/s out, heap 64 MiB');
  });
});

describe('sparkline', () => {
  it('draws values from lowest to highest block, oldest first', () => {
    expect(sparkline([1, 2, 3, 4, 5, 6, 7, 8])).toBe('▁▂▃▄▅▆▇█');
    expect(sparkline([5, 5, 5])).toBe('▁▁▁');
    expect(sparkline([])).toBe('');
  });

  it('folds a long history into the width by bucket maxima, so one spike stays visible', () => {
    const xs = Array.from({ length: 10_000 }, () => 3000);
    xs[7777] = 2_400_000; // the 40 min checkpoint among 3 s ones
    const s = sparkline(xs, 50);
    expect(s).toHaveLength(50);
    expect([...s].filter((c) => c === '█')).toHaveLength(1);
    expect(s.indexOf('█')).toBe(Math.floor((7777 * 50) / 10_000));
  });
});
