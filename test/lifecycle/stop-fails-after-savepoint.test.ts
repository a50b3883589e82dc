/**
 * An upgrade whose stop fails after its savepoint (the sink's close throws), with real `weir run`
 * processes behind the local-process target: the job restarts from the stop's savepoint, runs on
 * and completes checkpoints past it, then fails for good. The new version must start from the
 * newest of those checkpoints. Before, the target found the savepoint on disk once the process
 * was gone and reported the stop completed, and v2 started from it: state rewound, the output of
 * every checkpoint after it written again.
 */
import { existsSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { afterAll, expect, it } from 'vitest';
import { verifyCheckpoint } from '../../src/checkpoint/local/index.ts';
import { LocalProcessTarget } from '../../src/lifecycle/local/target.ts';
import { Manager } from '../../src/lifecycle/manager.ts';
import { AppShell } from '../../src/lifecycle/shell.ts';
import { validateSpec } from '../../src/lifecycle/spec.ts';
import { FileAppStore } from '../../src/lifecycle/store.ts';
import { fixture, ROOT, tempDir } from '../savepoint/helpers.ts';
import { eventsText, livePids } from './helpers.ts';

const tmp = tempDir('stop-fails-after-savepoint');
const dir = join(tmp.dir, 'manager');
afterAll(() => {
  for (const pid of livePids(dir)) process.kill(pid, 'SIGKILL');
  tmp.cleanup();
});

it('an upgrade whose stop failed after its savepoint, the job running on past it, starts from the job\'s newest checkpoint', async () => {
  const marker = join(tmp.dir, 'marker');
  const spec = (version: string) => validateSpec({
    name: 'app',
    job: { module: fixture('stop-close-fails.ts'), version, args: [marker, '2500'], parallelism: 1 },
    configuration: { 'execution.checkpointing.interval': '300ms', 'restart-strategy.type': 'fixed-delay', 'restart-strategy.fixed-delay.attempts': 1, 'restart-strategy.fixed-delay.delay': '100ms' },
  }, 'spec', '/');
  const store = new FileAppStore(dir);
  const target = new LocalProcessTarget({ root: dir, weirBin: resolve(ROOT, 'bin/weir.js'), log: () => {} });
  const manager = new Manager({ store, target });
  const shell = new AppShell('app', store, target, Date.now);
  const until = async (what: string, ok: () => boolean, timeoutMs = 120_000): Promise<void> => {
    for (const end = Date.now() + timeoutMs; !ok(); ) {
      if (Date.now() > end) throw new Error(`${what} not within ${timeoutMs} ms:\n${eventsText(store.loadStatus('app')!)}`);
      await shell.step();
      await new Promise((r) => setTimeout(r, 200));
    }
  };
  manager.apply(spec('v1'));
  await until('v1 stable', () => store.loadStatus('app')?.lifecycle === 'STABLE');
  writeFileSync(marker, '');
  manager.apply(spec('v2'));
  await until('v2 started', () => store.loadStatus('app')?.deployment?.spec.job.version === 'v2');
  const status = store.loadStatus('app')!;
  expect(existsSync(marker), 'the stop\'s close failed').toBe(false);
  const from = await verifyCheckpoint(status.deployment!.from!);
  const stopSavepoint = status.savepoints.find((r) => r.trigger === 'UPGRADE');
  expect(stopSavepoint, eventsText(status)).toMatchObject({ state: 'COMPLETED', error: expect.stringMatching(/^superseded/) });
  // v2 starts from a checkpoint v1 completed after its stop's savepoint.
  expect(from.ok && from.metadata.type).toBe('checkpoint');
  expect(eventsText(status)).toMatch(/SavepointSuperseded/);
}, 240_000);
