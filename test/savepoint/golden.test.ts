/**
 * A savepoint written by an earlier weir stays readable (issue points 1 and 8): the canonical
 * format is a contract, not whatever the current code happens to write.
 * test/fixtures/savepoints/app-v1 was taken by weir at commit c04d184 (metadata version 1):
 * savepoint-app.ts v1 at parallelism 2, stopped after records 0..145 (lane 0 at 146, lane 1 at
 * 147). A later weir must inspect it and restore it exactly; if the format ever changes
 * incompatibly, METADATA_VERSION goes up and older versions are still read (or refused with
 * a clear message, never misread).
 *
 * The fixture is copied before use, so nothing in the repository is touched.
 */
import { cpSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { lookupValue, summarize } from '../../src/checkpoint/inspect.ts';
import { runJob } from '../../src/index.ts';
import type { Out } from '../fixtures/jobs/savepoint-app.ts';
import { fingerprint, fixture, producedIn, ROOT, tempDir } from './helpers.ts';

const GOLDEN = join(ROOT, 'test', 'fixtures', 'savepoints', 'app-v1');
const tmp = tempDir('sp-golden');
afterAll(() => tmp.cleanup());

const DONE = Array.from({ length: 146 }, (_, i) => i);

describe('a savepoint from an earlier weir (format version 1)', () => {
  it('is inspected: job, operators, serializers, positions and every key\'s value', async () => {
    const sp = tmp.fresh('golden');
    cpSync(GOLDEN, sp, { recursive: true });
    const s = await summarize(sp);
    expect([s.type, s.jobName, s.formatVersion, s.checkpointId]).toEqual(['savepoint', 'savepoint app v1', 1, 1]);
    expect(s.operators.map((o) => [o.uid, o.name, o.parallelism, o.maxParallelism, o.keyed])).toEqual([
      ['src', 'generator', 2, 128, false], ['audit', 'audit', 2, 128, false], ['counts', 'counts', 2, 128, true],
      [undefined, 'Collect out', 2, 128, false],
    ]);
    const counts = s.operators.find((o) => o.uid === 'counts')!;
    expect(counts.states.map((st) => [st.name, st.kind, st.serializer, st.keys])).toEqual([['count', 'value', { name: 'app.count', version: 1 }, 4]]);
    expect([...(await producedIn(sp))].sort((a, b) => a - b)).toEqual(DONE);
    for (let k = 0; k < 4; k++) {
      const v = await lookupValue(sp, 'counts', 'count', `k${k}`);
      expect(v.value, `k${k}`).toEqual({ n: DONE.filter((i) => i % 4 === k).length });
    }
    expect(fingerprint(sp)).toEqual(fingerprint(GOLDEN));
  });

  for (const stateBackend of ['heap', 'disk']) {
    it(`is restored exactly (at another parallelism, ${stateBackend} backend): counts continue, every later record once`, async () => {
      const sp = tmp.fresh('golden');
      cpSync(GOLDEN, sp, { recursive: true });
      const r = await runJob(fixture('savepoint-app.ts'), { workers: 1, parallelism: 3, stateBackend, args: ['v1', '400', '0'], from: sp, stdout: () => {}, log: () => {} });
      expect(r.status, r.error?.message).toBe('FINISHED');
      expect(r.collected<Out>('out').sort((a, b) => a.i - b.i)).toEqual(
        Array.from({ length: 400 - 146 }, (_, j) => j + 146).map((i) => ({ i, key: `k${i % 4}`, n: Math.floor(i / 4) + 1, v: 'v1' })),
      );
    });
  }
});
