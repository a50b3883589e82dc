/**
 * A client of one running job's control API (src/observe/rest-server.ts), as `weir savepoint`,
 * `stop` and `cancel` use it: every request has a timeout; savepoints and stops are asynchronous
 * operations polled by request id.
 */
import { WeirError } from '../../core/errors.ts';
import { errorOf, savepointOutcome } from '../../observe/rest-replies.ts';

const REQUEST_TIMEOUT_MS = 10_000;
const POLL_MS = 200;

export interface JobEndpoint {
  readonly base: string;
  readonly jobId: string;
  /** The control API's token (Authorization: Bearer), if it has one. */
  readonly token?: string;
}

export async function call(url: string, method = 'GET', body?: unknown, token?: string): Promise<{ status: number; body: Record<string, unknown> }> {
  let res: Response;
  try {
    res = await fetch(url, {
      method, signal: AbortSignal.timeout(REQUEST_TIMEOUT_MS), headers: { 'content-type': 'application/json', ...(token !== undefined ? { authorization: `Bearer ${token}` } : {}) },
      ...(body !== undefined ? { body: JSON.stringify(body) } : {}),
    });
  } catch (e) {
    const why = (e as Error).name === 'TimeoutError' ? `no answer within ${REQUEST_TIMEOUT_MS} ms` : (e as { cause?: Error }).cause?.message ?? (e as Error).message;
    throw new WeirError('CONTROL', `cannot reach the job's control API at ${new URL(url).host}: ${why}`);
  }
  let parsed: Record<string, unknown> = {};
  try {
    parsed = (await res.json()) as Record<string, unknown>;
  } catch {
    // an empty answer
  }
  return { status: res.status, body: parsed };
}

export async function overview(j: JobEndpoint): Promise<{ state: string; attempt: number }> {
  const { status, body } = await call(`${j.base}/jobs/${j.jobId}`);
  if (status !== 200) throw new WeirError('CONTROL', errorOf(body));
  return { state: String(body['state']), attempt: Number(body['attempt'] ?? 0) };
}

/** Stop with a savepoint (or take one, stop = false) into `dir`; resolves with its path. */
export async function savepointInto(j: JobEndpoint, dir: string, stop: boolean, timeoutMs: number): Promise<string> {
  const { status, body } = stop
    ? await call(`${j.base}/jobs/${j.jobId}/stop`, 'POST', { targetDirectory: dir, drain: false }, j.token)
    : await call(`${j.base}/jobs/${j.jobId}/savepoints`, 'POST', { 'target-directory': dir }, j.token);
  if (status !== 202) throw new WeirError('CONTROL', errorOf(body));
  const id = String(body['request-id']);
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const r = await call(`${j.base}/jobs/${j.jobId}/savepoints/${id}`);
    if (r.status !== 200) throw new WeirError('CONTROL', errorOf(r.body));
    const outcome = savepointOutcome(r.body);
    if (outcome !== undefined) {
      if ('location' in outcome) return outcome.location;
      throw new WeirError('CONTROL', outcome.failure);
    }
    if (Date.now() > deadline) throw new WeirError('TIMEOUT', `no savepoint within ${timeoutMs} ms`);
    await new Promise((r) => setTimeout(r, POLL_MS));
  }
}

export async function cancel(j: JobEndpoint): Promise<void> {
  const { status, body } = await call(`${j.base}/jobs/${j.jobId}?mode=cancel`, 'PATCH', undefined, j.token);
  if (status !== 202) throw new WeirError('CONTROL', errorOf(body));
}
