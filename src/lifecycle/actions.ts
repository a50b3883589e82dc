/**
 * What the shell asks the deployment target to do. Every action is idempotent: it is keyed
 * by a deployment or savepoint id chosen (and written to the status) before it was issued, so
 * issuing it again after a crash never starts a second copy of a job or a second savepoint folder.
 * `key` names the action's outcome in the next Observation.operations.
 */
import { opKey, type AppStatus, type Operation } from './status.ts';
import type { AppSpec } from './spec.ts';

export type Action =
  | { readonly kind: 'start'; readonly key: string; readonly deploymentId: string; readonly spec: AppSpec; readonly from?: string }
  /** Stop with a savepoint into the savepoint's folder, or cancel (no savepointId). */
  | { readonly kind: 'stop'; readonly key: string; readonly deploymentId: string; readonly savepointId?: string; readonly timeoutMs: number }
  | { readonly kind: 'savepoint'; readonly key: string; readonly deploymentId: string; readonly savepointId: string; readonly timeoutMs: number }
  | { readonly kind: 'dispose'; readonly key: string; readonly savepointId: string; readonly path: string };

/** The action that carries out an operation of the status (again, after a restart). */
export function actionOf(op: Operation, status: AppStatus): Action {
  const key = opKey(op);
  const timeoutMs = (status.deployment?.spec ?? status.lastReconciledSpec)?.savepoints.timeoutMs ?? 600_000;
  switch (op.kind) {
    case 'start': {
      const d = status.deployment;
      if (d === undefined || d.id !== op.deploymentId) throw new Error(`status inconsistent: start of ${op.deploymentId} without its deployment`);
      return { kind: 'start', key, deploymentId: d.id, spec: d.spec, ...(d.from !== undefined ? { from: d.from } : {}) };
    }
    case 'stop':
      return { kind: 'stop', key, deploymentId: op.deploymentId, ...(op.savepointId !== undefined ? { savepointId: op.savepointId } : {}), timeoutMs };
    case 'savepoint':
      return { kind: 'savepoint', key, deploymentId: op.deploymentId, savepointId: op.savepointId, timeoutMs };
    case 'dispose':
      return { kind: 'dispose', key, savepointId: op.savepointId, path: op.path };
  }
}
