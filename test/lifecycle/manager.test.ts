/**
 * The manager's desired-state calls (what `weir apps ...` and the REST API write): while an
 * application is being deleted, no call gives it a new spec. Before, suspend and resume wrote
 * one without the deletion: it was dropped, both answered 202, and the deleted application
 * started again (found by a read-only audit).
 */
import { mkdtempSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { Manager } from '../../src/lifecycle/manager.ts';
import { FileAppStore } from '../../src/lifecycle/store.ts';
import { validateSpec } from '../../src/lifecycle/spec.ts';

const dir = mkdtempSync(join(tmpdir(), 'weir-manager-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe('Manager', () => {
  it('refuses apply, suspend and resume of an application being deleted; the deletion stays', () => {
    const m = new Manager({ store: new FileAppStore(dir), target: { observe: async () => ({ deployments: {}, operations: {} }), act: async () => {} } } as never);
    const spec = (version: string) => validateSpec({ name: 'app', job: { module: '/j.ts', version }, configuration: { 'execution.checkpointing.interval': '1s' } }, 'test', '/');
    m.apply(spec('v1'));
    const deleting = m.delete('app', true);
    expect(deleting.deletion).toEqual({ savepoint: true });
    const refused = 'application app is being deleted; apply it again once it is gone';
    expect(() => m.apply(spec('v2'))).toThrow(refused);
    expect(() => m.resume('app')).toThrow(refused);
    expect(() => m.suspend('app')).toThrow(refused);
    expect(m.desired('app')).toEqual(deleting);
  });
});

describe('FileAppStore', () => {
  it('writes specs and statuses for its user only: a spec\'s configuration may hold credentials (before: mode 644 under umask 022)', () => {
    const store = new FileAppStore(join(dir, 'modes'));
    const spec = validateSpec({ name: 'leaky', job: { module: '/j.ts', version: 'v1' }, configuration: { 'execution.checkpointing.interval': '1s' } }, 'test', '/');
    store.saveDesired('leaky', { spec, generation: 1 } as never);
    store.saveStatus('leaky', { state: 'DEPLOYING' } as never);
    for (const f of ['desired.json', 'status.json']) expect(statSync(join(store.appDir('leaky'), f)).mode & 0o077, f).toBe(0);
  });
});
