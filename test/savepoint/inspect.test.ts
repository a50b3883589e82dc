/**
 * State inspection (issue point 7), offline, on a savepoint and on a checkpoint: the library
 * (summarize, lookupValue) and `weir state inspect` (text, --json, --operator, --state, --key;
 * exit codes and one-line errors). Every count is compared with what the snapshot's own source
 * positions imply, and inspecting never changes a file.
 *
 * Fixture: test/fixtures/jobs/savepoint-rescale.ts at parallelism 2 (keyed value, list and map
 * state, one event-time timer per key, split and union operator list state, 12 source lanes).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { cpSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { lookupValue, summarize, type SnapshotSummary } from '../../src/checkpoint/inspect.ts';
import { serializeMetadata, type CheckpointMetadata } from '../../src/checkpoint/metadata.ts';
import { runJob } from '../../src/index.ts';
import { keyGroupOf, keyGroupRangeForSubtask, normalizeKey } from '../../src/state/key-groups.ts';
import { KEYS } from '../fixtures/jobs/savepoint-rescale.ts';
import { api, checkpointNow, fingerprint, fixture, oneLineError, producedIn, savepoint, sleep, start, tempDir, waitRunning, weir } from './helpers.ts';

const JOB = fixture('savepoint-rescale.ts');
const tmp = tempDir('sp-inspect');
afterAll(() => tmp.cleanup());

interface Snap { path: string; done: Set<number>; jobId: string; print: Record<string, string> }
let sp: Snap;
let chk: Snap;

/** Per key (record i has key k(i mod 20)): [count, sum]. */
function perKey(done: Set<number>): Map<string, [number, number]> {
  const m = new Map<string, [number, number]>();
  for (const i of done) {
    const k = `k${i % KEYS}`;
    const c = m.get(k) ?? [0, 0];
    m.set(k, [c[0] + 1, c[1] + i]);
  }
  return m;
}

beforeAll(async () => {
  const dir = tmp.fresh('chk');
  const h = await start(JOB, { workers: 1, parallelism: 2, args: ['g0', '100000', '500'], checkpoint: { interval: '1 h', dir, retention: 'retain-on-cancel' } });
  await waitRunning(h);
  await sleep(150);
  const id = await checkpointNow(h);
  await sleep(50);
  const path = await savepoint(h, tmp.fresh('sp'));
  expect((await api(h.base, 'PATCH')).status).toBe(202);
  expect((await h.result).status).toBe('CANCELED');
  const chkPath = `${dir}/${h.jobId}/chk-${id}`;
  sp = { path, done: await producedIn(path), jobId: h.jobId, print: fingerprint(path) };
  chk = { path: chkPath, done: await producedIn(chkPath), jobId: h.jobId, print: fingerprint(chkPath) };
  expect(perKey(sp.done).size).toBe(KEYS);
});


function checkSummary(s: SnapshotSummary, snap: Snap, type: string): void {
  expect(s.type).toBe(type);
  expect(s.jobId).toBe(snap.jobId);
  expect(s.jobName).toBe('savepoint rescale');
  expect(s.formatVersion).toBe(1);
  const keyed = s.operators.find((o) => o.uid === 'keyed')!;
  expect([keyed.name, keyed.parallelism, keyed.maxParallelism, keyed.keyed]).toEqual(['keyed', 2, 128, true]);
  const keys = perKey(snap.done).size;
  expect(keyed.states.map((st) => [st.name, st.kind, st.serializer.name, st.serializer.version, st.keys]).sort()).toEqual([
    ['byLane', 'map', 'weir.plain', 1, keys], ['count', 'value', 'weir.plain', 1, keys], ['seen', 'list', 'weir.plain', 1, keys], ['sum', 'value', 'weir.plain', 1, keys],
  ]);
  for (const st of keyed.states) expect(st.bytes).toBeGreaterThan(0);
  // Per key-group range: the subtask's range, 4 entries and 1 timer per key in it, sizes that add up.
  expect(keyed.ranges.map((r) => [r.subtask, r.keyGroupRange])).toEqual([[0, keyGroupRangeForSubtask(128, 2, 0)], [1, keyGroupRangeForSubtask(128, 2, 1)]]);
  for (const r of keyed.ranges) {
    const mine = [...perKey(snap.done).keys()].filter((k) => {
      const kg = keyGroupOf(normalizeKey(k), 128);
      return kg >= r.keyGroupRange.start && kg <= r.keyGroupRange.end;
    }).length;
    expect([r.keys, r.timers]).toEqual([4 * mine, mine]);
    expect(r.bytes).toBeGreaterThan(0);
    expect(r.bytes).toBeLessThan(r.fileSize);
  }
  expect(keyed.ranges.reduce((a, r) => a + r.bytes, 0)).toBeGreaterThan(keyed.states.reduce((a, st) => a + st.bytes, 0)); // + timer blocks
  const ops = s.operators.find((o) => o.uid === 'ops')!;
  expect(ops.keyed).toBe(false);
  // Each with the serializer its items were written by (the default one: no serializer given).
  const plain = { name: 'weir.plain', version: 1 };
  expect(ops.operatorState).toEqual([{ name: 'tally', distribution: 'split', items: 2, serializer: plain }, { name: 'roster', distribution: 'union', items: 2, serializer: plain }]);
  // The kinds of keys the keyed operator's state is keyed by, as a restore checks them.
  expect(keyed.keyKinds).toEqual(['string']);
  expect(s.operators.find((o) => o.uid === 'src')!.sourceSplits).toBe(12);
}

describe('inspect library', () => {
  it('summarizes a savepoint and a checkpoint: operators, states with serializers, key counts and sizes per key-group range, list state, splits', async () => {
    checkSummary(await summarize(sp.path), sp, 'savepoint');
    checkSummary(await summarize(chk.path), chk, 'checkpoint');
  });

  it('looks up one value by key, as stored; a numeric-looking key is tried as a number too', async () => {
    for (const snap of [sp, chk]) {
      for (const [key, [count, sum]] of perKey(snap.done)) {
        const c = await lookupValue(snap.path, 'keyed', 'count', key);
        expect([c.found, c.value, c.operator, c.keyGroup]).toEqual([true, count, 'keyed', keyGroupOf(normalizeKey(key), 128)]);
        expect((await lookupValue(snap.path, 'keyed', 'sum', key)).value).toBe(sum);
        const seen = (await lookupValue(snap.path, 'keyed', 'seen', key)).value as number[];
        expect(seen.slice().sort((a, b) => a - b)).toEqual([...snap.done].filter((i) => `k${i % KEYS}` === key).sort((a, b) => a - b));
      }
    }
    const missing = await lookupValue(sp.path, 'keyed', 'count', 'no-such-key');
    expect([missing.found, missing.value, missing.keyGroup]).toEqual([false, undefined, keyGroupOf('no-such-key', 128)]);
    // By uid, by name or by an id prefix.
    const id = (await summarize(sp.path)).operators.find((o) => o.uid === 'keyed')!.id;
    expect((await lookupValue(sp.path, id.slice(0, 8), 'count', 'k1')).found).toBe(true);
  });

  it('inline state that cannot be decoded is named (metadata file, operator, subtask) by inspect and by a restore (before: "Data read, but end of buffer not reached" alone)', async () => {
    const copy = tmp.fresh('bad-inline');
    cpSync(sp.path, copy, { recursive: true });
    const file = join(copy, '_metadata');
    const body = JSON.parse(readFileSync(file, 'utf8')).body as CheckpointMetadata;
    const op = body.operators.find((o) => o.subtasks.some((x) => x.inline !== undefined))!;
    const st = op.subtasks.find((x) => x.inline !== undefined)!;
    (st as { inline?: string }).inline = 'AAAA';
    writeFileSync(file, serializeMetadata(body));
    await expect(summarize(copy)).rejects.toThrow(new RegExp(`^${file.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}: operator "${op.name}" subtask ${st.subtask}: its inline state cannot be decoded \\(.*; corrupt metadata\\)$`));
    const refused = await runJob(JOB, { workers: 1, parallelism: 2, args: ['g0', '10', '0'], from: copy, stdout: () => {}, log: () => {} })
      .then((r) => `${r.status}: ${r.error?.message}`, (e: Error) => e.message);
    expect(refused).toMatch(new RegExp(`operator "${op.name}" subtask ${st.subtask}: its inline state cannot be decoded`));
  });

  it('names what exists when asked for an operator or a state that does not', async () => {
    await expect(lookupValue(sp.path, 'nope', 'count', 'k1')).rejects.toThrow(/^no operator "nope" in the snapshot\. Operators: "generator" \(uid src\) [0-9a-f]{8}, .*"keyed" \(uid keyed\)/);
    await expect(lookupValue(sp.path, 'keyed', 'nope', 'k1')).rejects.toThrow('operator "keyed" has no state "nope"; its states: count, sum, seen, byLane');
    await expect(lookupValue(sp.path, 'ops', 'tally', 'k1')).rejects.toThrow('operator "ops" has no keyed state');
  });
});

describe.concurrent('weir state inspect', () => {
  const home = tmp.fresh('home');

  it('prints the savepoint: a header, and per operator its states, key-group ranges, list state and splits', async () => {
    const r = await weir(home, 'state', 'inspect', sp.path);
    expect(r.stderr).toBe('');
    expect(r.code).toBe(0);
    const lines = r.stdout.trimEnd().split('\n');
    const s = await summarize(sp.path);
    expect(lines[0]).toMatch(new RegExp(`^savepoint ${s.checkpointId} of job ${sp.jobId} "savepoint rescale", taken \\d{4}-\\d\\d-\\d\\dT[0-9:.]+Z, format v1, [0-9.]+ (B|KiB)$`));
    const keyed = s.operators.find((o) => o.uid === 'keyed')!;
    const at = lines.findIndex((l) => l.startsWith('operator "keyed" uid=keyed '));
    expect(lines[at]).toBe(`operator "keyed" uid=keyed id=${keyed.id.slice(0, 16)} parallelism=2 maxParallelism=128 keyed`);
    expect(lines.slice(at + 1, at + 7).map((l) => l.replace(/[0-9.]+ (B|KiB)/g, 'SIZE'))).toEqual([
      ...keyed.states.map((st) => `  state "${st.name}" ${st.kind} serializer weir.plain v1: ${st.keys} keys, SIZE`),
      ...keyed.ranges.map((g) => `  key groups ${g.keyGroupRange.start}-${g.keyGroupRange.end} (subtask ${g.subtask}): ${g.keys} entries, ${g.timers} timers, SIZE in ${g.file}`),
    ]);
    expect(lines[at + 7]).toBe('  keyed by string keys');
    expect(lines).toContain('  operator state "tally" (split list) serializer weir.plain v1: 2 items');
    expect(lines).toContain('  operator state "roster" (union list) serializer weir.plain v1: 2 items');
    expect(lines).toContain('  source splits: 12');
  });

  it('--json is the summary; works on a checkpoint too', async () => {
    for (const snap of [sp, chk]) {
      const r = await weir(home, 'state', 'inspect', snap.path, '--json');
      expect(r.code).toBe(0);
      expect(JSON.parse(r.stdout)).toEqual(JSON.parse(JSON.stringify(await summarize(snap.path))));
    }
  });

  it('--operator narrows to one operator, --state to one state', async () => {
    const r = await weir(home, 'state', 'inspect', sp.path, '--operator', 'keyed', '--state', 'byLane', '--json');
    expect(r.code).toBe(0);
    const s = JSON.parse(r.stdout) as SnapshotSummary;
    expect(s.operators.map((o) => o.uid)).toEqual(['keyed']);
    expect(s.operators[0]!.states.map((st) => st.name)).toEqual(['byLane']);
    const t = await weir(home, 'state', 'inspect', chk.path, '--operator', 'ops');
    expect(t.code).toBe(0);
    expect(t.stdout.split('\n').filter((l) => l.startsWith('operator '))).toHaveLength(1);
  });

  it('--key prints one value (exit 0), or says there is none (exit 1)', async () => {
    const [key, [count]] = [...perKey(sp.done)][3]!;
    const r = await weir(home, 'state', 'inspect', sp.path, '--operator', 'keyed', '--state', 'count', '--key', key);
    expect([r.code, r.stdout, r.stderr]).toEqual([0, `${count}\n`, '']);
    const m = await weir(home, 'state', 'inspect', chk.path, '--operator', 'keyed', '--state', 'byLane', '--key', key);
    expect(m.code).toBe(0);
    const lanes = new Map<number, number>();
    for (const i of chk.done) if (`k${i % KEYS}` === key) lanes.set(i % 12, (lanes.get(i % 12) ?? 0) + 1);
    expect(new Map(JSON.parse(m.stdout) as [number, number][])).toEqual(lanes);
    const none = await weir(home, 'state', 'inspect', sp.path, '--operator', 'keyed', '--state', 'count', '--key', 'zz');
    expect(none.code).toBe(1);
    expect(none.stdout).toBe(`no value for key "zz" in state "count" of operator "keyed" (key group ${keyGroupOf('zz', 128)})\n`);
  });

  const errors: [string, string[], string | RegExp][] = [
    ['--key without --state', ['--operator', 'keyed', '--key', 'k1'], 'state inspect: --key needs --state'],
    ['an unknown operator', ['--operator', 'nope'], /^state inspect: no operator "nope" in the snapshot\. Operators: /],
    ['an unknown state', ['--operator', 'keyed', '--state', 'nope'], 'state inspect: operator "keyed" has no keyed state "nope"; its states: count, sum, seen, byLane'],
  ];
  for (const [what, args, message] of errors) {
    it(`${what}: one line, exit 2`, async () => {
      const r = await weir(home, 'state', 'inspect', sp.path, ...args);
      expect(r.code).toBe(2);
      expect(r.stdout).toBe('');
      const msg = oneLineError(r);
      if (typeof message === 'string') expect(msg).toBe(message);
      else expect(msg).toMatch(message);
    });
  }
});

describe('offline and read-only', () => {
  it('inspecting (library and CLI, above) changed no file of the savepoint or the checkpoint', () => {
    expect(fingerprint(sp.path)).toEqual(sp.print);
    expect(fingerprint(chk.path)).toEqual(chk.print);
  });
});
