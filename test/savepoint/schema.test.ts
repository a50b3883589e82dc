/**
 * Schema evolution (issue point 5): a state's serializer declares a new version with a
 * migration from older versions, and state written by v1 is read through it after a
 * restore (at another parallelism); the savepoint records each state's serializer name and
 * version and holds values in the serializer's encoding. Restoring state written by an
 * unknown serializer, by a newer version, by an older version the job cannot migrate, or as
 * another kind of state fails with a message naming the operator and the state, and leaves
 * the savepoint as it was.
 *
 * Fixture: test/fixtures/jobs/savepoint-schema.ts.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { lookupValue, summarize } from '../../src/checkpoint/inspect.ts';
import { runJob } from '../../src/index.ts';
import type { Out } from '../fixtures/jobs/savepoint-schema.ts';
import { fingerprint, fixture, producedIn, sleep, start, stopWithSavepoint, tempDir, waitRunning } from './helpers.ts';

const JOB = fixture('savepoint-schema.ts');
const N = 3000;
const tmp = tempDir('sp-schema');
afterAll(() => tmp.cleanup());

/** Per key: [records, sum of i] over a set of indices (record i has key p(i mod 3)). */
function points(done: Set<number>): Map<string, [number, number]> {
  const m = new Map<string, [number, number]>();
  for (const i of done) {
    const k = `p${i % 3}`;
    const p = m.get(k) ?? [0, 0];
    m.set(k, [p[0] + 1, p[1] + i]);
  }
  return m;
}

async function stopped(variant: string, p: number, from?: string): Promise<{ path: string; out: Out[] }> {
  const h = await start(JOB, { workers: 1, parallelism: p, args: [variant, String(N), '1000'], ...(from ? { from } : {}) });
  await waitRunning(h);
  await sleep(150);
  const path = await stopWithSavepoint(h, tmp.fresh(`sp-${variant}`));
  const r = await h.result;
  expect(r.status, r.error?.message).toBe('FINISHED');
  return { path, out: r.collected<Out>('out') };
}

let sp1 = '';
beforeAll(async () => {
  sp1 = (await stopped('v1', 2)).path;
});

describe('schema evolution', () => {
  it('a savepoint records each state\'s serializer name and version, with values in that serializer\'s encoding', async () => {
    const op = (await summarize(sp1)).operators.find((o) => o.uid === 'points')!;
    expect(op.states.map((s) => [s.name, s.kind, s.serializer]).sort()).toEqual([
      ['point', 'value', { name: 'app.point', version: 1 }],
      ['seen', 'value', { name: 'weir.plain', version: 1 }],
    ]);
    const want = points(await producedIn(sp1));
    expect(want.size).toBe(3);
    for (const [key, [x, y]] of want) {
      expect((await lookupValue(sp1, 'points', 'point', key)).value).toEqual([x, y]); // v1 writes [x, y]
      expect((await lookupValue(sp1, 'points', 'seen', key)).value).toBe(x);
    }
  });

  it('a new serializer version migrates state written by the old one (restored at another parallelism)', async () => {
    const v1Done = await producedIn(sp1);
    const { path: sp2, out } = await stopped('v2', 3, sp1);
    const done = await producedIn(sp2);
    // Every record after the restore saw the migrated point: label "migrated", x counting on from v1.
    const before = points(v1Done);
    for (const o of out) {
      expect(o.point.label, `record ${o.i}`).toBe('migrated');
      expect(o.point.x).toBe(o.seen);
      expect(o.point.x).toBeGreaterThan(before.get(o.key)![0]);
    }
    const op = (await summarize(sp2)).operators.find((o) => o.uid === 'points')!;
    expect(op.states.find((s) => s.name === 'point')!.serializer).toEqual({ name: 'app.point', version: 2 });
    for (const [key, [x, y]] of points(done)) {
      expect((await lookupValue(sp2, 'points', 'point', key)).value).toEqual({ x, y, label: 'migrated' });
    }

    // And state written by v2 cannot go back to v1: refused, naming operator and state.
    const before2 = fingerprint(sp2);
    const r = await runJob(JOB, { workers: 1, parallelism: 1, args: ['v1', String(N), '0'], from: sp2, stdout: () => {}, log: () => {} });
    expect(r.status).toBe('FAILED');
    expect(r.error?.message).toContain('operator "points" (uid "points", subtask 1/1): state "point" was written by serializer "app.point" v2, newer than this job\'s v1; restore with the newer job version');
    expect(fingerprint(sp2)).toEqual(before2);
  });

  const refused: [string, string][] = [
    ['renamed', 'state "point" was written by serializer "app.point" v1 and the job now uses "other.point" v1; they are incompatible'],
    ['v2-no-decode', 'state "point" was written by serializer "app.point" v1; v2 declares no decode(data, writtenVersion) to migrate it'],
    ['list', 'state "point" was written as value state and is now declared as list state; a state\'s kind cannot change'],
  ];
  for (const [variant, message] of refused) {
    it(`refuses state it cannot read (${variant}), naming the operator and the state`, async () => {
      const before = fingerprint(sp1);
      const r = await runJob(JOB, { workers: 1, parallelism: 2, args: [variant, String(N), '0'], from: sp1, stdout: () => {}, log: () => {} });
      expect(r.status).toBe('FAILED');
      expect(r.error?.message).toMatch(/operator "points" \(uid "points", subtask [12]\/2\)/);
      expect(r.error?.message).toContain(message);
      expect(r.collected('out')).toEqual([]);
      expect(fingerprint(sp1)).toEqual(before);
    });
  }
});
