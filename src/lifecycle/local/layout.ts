/**
 * Where the local-process target keeps things, in one place. Under the manager's directory:
 *   apps/<app>/desired.json, status.json          (the store)
 *   apps/<app>/checkpoints/<job-id>/chk-<n>/      (every deployment of the app checkpoints here)
 *   apps/<app>/savepoints/<sp-id>/savepoint-...   (one folder per savepoint record)
 *   apps/<app>/deployments/<deployment-id>/       config.json, pid, stdout.log, stderr.log, exit, home/
 * home/ is the deployment's WEIR_HOME, so its job registers its control API there and nowhere else.
 */
import { join } from 'node:path';

export class Layout {
  constructor(readonly root: string) {}

  app(app: string): string {
    return join(this.root, 'apps', app);
  }
  checkpoints(app: string): string {
    return join(this.app(app), 'checkpoints');
  }
  savepoints(app: string): string {
    return join(this.app(app), 'savepoints');
  }
  savepoint(app: string, savepointId: string): string {
    return join(this.savepoints(app), savepointId);
  }
  deployment(app: string, id: string): string {
    return join(this.app(app), 'deployments', id);
  }
  config(app: string, id: string): string {
    return join(this.deployment(app, id), 'config.json');
  }
  pidFile(app: string, id: string): string {
    return join(this.deployment(app, id), 'pid');
  }
  exitFile(app: string, id: string): string {
    return join(this.deployment(app, id), 'exit');
  }
  stderr(app: string, id: string): string {
    return join(this.deployment(app, id), 'stderr.log');
  }
  stdout(app: string, id: string): string {
    return join(this.deployment(app, id), 'stdout.log');
  }
  home(app: string, id: string): string {
    return join(this.deployment(app, id), 'home');
  }
  /** The spec's job arguments (owner-only), given to the deployment's `weir run` by --args-file, not in its command line. */
  args(app: string, id: string): string {
    return join(this.deployment(app, id), 'args.json');
  }
  /** The deployment's control API token (owner-only), given to its `weir run` and sent by the manager. */
  restToken(app: string, id: string): string {
    return join(this.deployment(app, id), 'rest-token');
  }
}
