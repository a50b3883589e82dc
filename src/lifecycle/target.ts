/**
 * The deployment target seam (issue 13 point 9): where jobs run. The reconciler never talks to
 * processes or clusters; the shell hands the target idempotent actions and asks it what it sees.
 * This issue ships the local-process target (./local/); a Kubernetes target (a custom resource
 * with this spec and a controller) implements the same two methods (docs/lifecycle.md).
 */
import type { Action } from './actions.ts';
import type { Observation } from './status.ts';

export interface DeploymentTarget {
  /**
   * What the target sees of these deployments and of the outcomes of these operation keys.
   * A deployment it has never heard of is absent; one that ended is reported with its end state.
   * An operation it was given reports an outcome (in-progress at least) from the next observe on;
   * one it has no outcome for is one it does not know (a restarted manager), and the reconciler
   * issues it again (a stop with savepoint, a savepoint, a dispose: all idempotent).
   * For each of `stopSavepointIds` (savepoint record ids), the verified savepoint in its folder, if any.
   */
  observe(app: string, deploymentIds: readonly string[], operationKeys: readonly string[], stopSavepointIds?: readonly string[]): Promise<Observation>;
  /**
   * Begins an action and returns once it is under way (its outcome shows in a later observe).
   * Idempotent: a start of a deployment that exists, a stop of one that ended, a dispose of a
   * folder that is gone do nothing more.
   */
  act(app: string, action: Action): Promise<void>;
}
