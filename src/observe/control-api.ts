/**
 * The REST control API as a job service: serves RestServer on the given address (127.0.0.1
 * unless told otherwise) and registers the job so `weir list` and friends find it by id.
 */
import type { JobControl, JobService } from '../cluster/job-control.ts';
import { register } from './registry.ts';
import { RestServer } from './rest-server.ts';
import { isLoopback } from './request-guard.ts';

export interface ControlApiOptions {
  /** 0 picks a free port. */
  readonly port: number;
  readonly address?: string;
  /** When the port is taken, serve on a free one instead (and say so in the job's log). */
  readonly fallback?: boolean;
  /** When given, every control request must carry it (Authorization: Bearer); reads stay open behind the Host check. Never logged. */
  readonly token?: string;
  /** Called once the API listens, with its port. */
  readonly onListening?: (port: number, jobId: string) => void;
}

/** How long stopping waits for requests in flight (a savepoint being answered) before closing. */
const DRAIN_TIMEOUT_MS = 10_000;

export function controlApi(options: ControlApiOptions): JobService {
  let stop: (() => Promise<void>) | undefined;
  return {
    async start(control: JobControl): Promise<void> {
      const address = options.address ?? '127.0.0.1';
      const server = new RestServer(control, options.token);
      let port: number;
      try {
        port = await server.listen(options.port, address);
      } catch (e) {
        if (!options.fallback) throw e;
        port = await server.listen(0, address);
        control.logLine(`weir: REST port ${options.port} is in use; serving on ${address}:${port} instead`);
      }
      // A registry that is not private is not written to (the job runs on; weir list will not show it).
      let unregister = (): void => {};
      try {
        unregister = register({ jobId: control.jobId, name: control.jobName, address, port, pid: process.pid, startedAt: control.startedAt, ...(options.token !== undefined ? { token: options.token } : {}) });
      } catch (e) {
        control.logLine(`weir: warning: the job is not registered for weir list and the control commands: ${(e as Error).message}`);
      }
      if (!isLoopback(address) && options.token === undefined) {
        control.logLine(`weir: warning: the control API on ${address}:${port} is reachable from the network without a token: anyone who reaches it can stop or cancel the job (give --rest-token-file)`);
      }
      options.onListening?.(port, control.jobId);
      stop = async () => {
        unregister();
        await server.drain(DRAIN_TIMEOUT_MS);
        await server.close();
      };
    },
    async stop(): Promise<void> {
      await stop?.();
      stop = undefined;
    },
  };
}
