/**
 * What keeps a web page in the user's browser from driving the control API (issue 15.8):
 *   - DNS rebinding: a page on evil.example re-resolves its own name to 127.0.0.1 and calls
 *     the API "same-origin"; its requests still carry `Host: evil.example:<port>`. So only a
 *     Host naming the bound address (or, on loopback, localhost) and the bound port is served.
 *     On a wildcard binding (0.0.0.0, ::) any IP literal is accepted, never a DNS name (a
 *     rebinding attack needs one).
 *   - CSRF: a cross-origin page can send a "simple" POST (text/plain, a form, no body) without
 *     a CORS preflight, but not one with `Content-Type: application/json`. So state-changing
 *     requests must say application/json, with or without a body.
 *   - Optional token (meant for a non-loopback binding): `Authorization: Bearer <token>`,
 *     compared in constant time; the token is never echoed, logged or put in an error.
 * Pure functions: the server applies them before routing.
 */
import type { IncomingMessage, Server } from 'node:http';
import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';
import { isIP } from 'node:net';

export function isLoopback(address: string): boolean {
  return address === 'localhost' || address === '::1' || /^127\.\d+\.\d+\.\d+$/.test(address);
}

function isWildcard(address: string): boolean {
  return address === '0.0.0.0' || address === '::';
}

/** Splits a Host header into hostname (brackets of IPv6 removed, lower case) and port; undefined when malformed. */
export function parseHost(header: string): { hostname: string; port: number | undefined } | undefined {
  const m = /^(\[[0-9a-fA-F:.]+\]|[^:[\]]+)(?::(\d{1,5}))?$/.exec(header.trim());
  if (!m) return undefined;
  const hostname = m[1]!.replace(/^\[|\]$/g, '').toLowerCase();
  return { hostname, port: m[2] === undefined ? undefined : Number(m[2]) };
}

/** Whether a request with this Host header is meant for the API bound at `address`:`port`. */
export function hostAllowed(header: string | undefined, address: string, port: number): boolean {
  if (header === undefined) return false;
  const h = parseHost(header);
  if (h === undefined) return false;
  // Without a port the browser means 80: never the API's port in practice, and a rebinding page could use it.
  if (h.port !== port) return false;
  const bound = address.toLowerCase();
  if (h.hostname === bound) return true;
  if (isLoopback(bound) && isLoopback(h.hostname)) return true;
  if (isWildcard(bound)) return isIP(h.hostname) !== 0 || h.hostname === 'localhost';
  return false;
}

/** State-changing requests must be JSON (a cross-origin page cannot send that without a preflight). */
export function jsonContentType(header: string | undefined): boolean {
  return header !== undefined && /^application\/json\s*(;.*)?$/i.test(header.trim());
}

/** Whether `Authorization` carries the token (constant-time; both hashed so lengths do not leak). */
export function tokenMatches(authorization: string | undefined, token: string): boolean {
  const m = /^Bearer\s+(\S+)\s*$/i.exec(authorization ?? '');
  if (!m) return false;
  const a = createHash('sha256').update(m[1]!).digest();
  const b = createHash('sha256').update(token).digest();
  return timingSafeEqual(a, b);
}

/** How long one request may take to arrive (headers and body) at a server weir starts. */
export const REQUEST_TIMEOUT_MS = 30_000;

/**
 * Bounds every request to `server`: a client that stalls does not hold a socket (and a
 * half-read body) for Node's defaults (300 s for a request on Node 20).
 */
export function boundRequests(server: Server, timeoutMs = REQUEST_TIMEOUT_MS): void {
  server.requestTimeout = timeoutMs;
  server.headersTimeout = timeoutMs;
}

/** A fresh secret for a control API (256 bits, hex): the manager's, a job's, a managed deployment's. */
export function newToken(): string {
  return randomBytes(32).toString('hex');
}

export const TOO_LARGE = Symbol('request body too large');
const strictUtf8 = new TextDecoder('utf-8', { fatal: true });

/**
 * The request's JSON object; undefined when it is not one (or not UTF-8), TOO_LARGE past
 * `maxBytes`. The bytes are decoded once, whole: decoded chunk by chunk, a character split
 * between two chunks was garbled (and accepted so).
 */
export async function readJson(req: IncomingMessage, maxBytes: number): Promise<Record<string, unknown> | undefined | typeof TOO_LARGE> {
  const chunks: Buffer[] = [];
  let bytes = 0;
  for await (const chunk of req) {
    const b = typeof chunk === 'string' ? Buffer.from(chunk) : (chunk as Buffer);
    bytes += b.length;
    if (bytes > maxBytes) return TOO_LARGE;
    chunks.push(b);
  }
  let text: string;
  try {
    text = strictUtf8.decode(Buffer.concat(chunks));
  } catch {
    return undefined;
  }
  if (text.trim() === '') return {};
  try {
    const v = JSON.parse(text);
    return v !== null && typeof v === 'object' && !Array.isArray(v) ? (v as Record<string, unknown>) : undefined;
  } catch {
    return undefined;
  }
}
