/**
 * Reading the control API's replies (rest-server.ts writes them), for its clients: the CLI's
 * control commands and the lifecycle manager. Replies are network input: a server of another
 * kind or version on the port may answer anything, so every field is checked before use.
 */

/** The error a reply carries (Flink's `{errors: [...]}`), or the reply itself when it has none. */
export function errorOf(body: Record<string, unknown>): string {
  const errs = body['errors'];
  return Array.isArray(errs) ? errs.join('; ') : JSON.stringify(body);
}

/**
 * A GET savepoints/<id> reply: undefined while the request is in progress; once completed, the
 * savepoint's location or why it failed (also when the reply holds neither).
 */
export function savepointOutcome(body: Record<string, unknown>): { readonly location: string } | { readonly failure: string } | undefined {
  if ((body['status'] as { id?: unknown } | undefined)?.id !== 'COMPLETED') return undefined;
  const op = body['operation'] as { location?: unknown; 'failure-cause'?: { message?: unknown } } | undefined;
  if (typeof op?.location === 'string') return { location: op.location };
  const cause = op?.['failure-cause']?.message;
  return { failure: typeof cause === 'string' ? cause : `no location or failure cause in the reply ${JSON.stringify(body).slice(0, 200)}` };
}
