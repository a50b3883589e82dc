/** The control API's request checks as pure functions: Host (DNS rebinding), JSON (CSRF), token. */
import { describe, expect, it } from 'vitest';
import { hostAllowed, jsonContentType, parseHost, tokenMatches } from '../../src/observe/request-guard.ts';

describe('hostAllowed', () => {
  it('loopback binding: the bound address, other loopback names, localhost; only with the bound port', () => {
    for (const h of ['127.0.0.1:8081', 'localhost:8081', 'LOCALHOST:8081', '[::1]:8081', '127.0.0.2:8081']) expect(hostAllowed(h, '127.0.0.1', 8081), h).toBe(true);
    for (const h of ['127.0.0.1:8082', '127.0.0.1', 'localhost', 'evil.example:8081', 'evil.example', '10.0.0.5:8081', '', 'a:b:c', '127.0.0.1:8081 x'])
      expect(hostAllowed(h, '127.0.0.1', 8081), h).toBe(false);
    expect(hostAllowed(undefined, '127.0.0.1', 8081)).toBe(false);
  });

  it('a named non-loopback address: only itself', () => {
    expect(hostAllowed('10.0.0.5:9000', '10.0.0.5', 9000)).toBe(true);
    expect(hostAllowed('127.0.0.1:9000', '10.0.0.5', 9000)).toBe(false);
    expect(hostAllowed('rebind.example:9000', '10.0.0.5', 9000)).toBe(false);
  });

  it('a wildcard binding: IP literals and localhost, never another DNS name', () => {
    for (const h of ['10.0.0.5:9000', '192.168.1.2:9000', '[fe80::1]:9000', 'localhost:9000']) expect(hostAllowed(h, '0.0.0.0', 9000), h).toBe(true);
    for (const h of ['rebind.example:9000', 'my-host:9000', '10.0.0.5:9001']) expect(hostAllowed(h, '0.0.0.0', 9000), h).toBe(false);
    expect(hostAllowed('[::1]:9000', '::', 9000)).toBe(true);
  });

  it('parseHost', () => {
    expect(parseHost('[::1]:80')).toEqual({ hostname: '::1', port: 80 });
    expect(parseHost('Example.COM')).toEqual({ hostname: 'example.com', port: undefined });
    expect(parseHost('a b:1')).toBeDefined(); // a space inside a name is not a valid host, but it is never equal to a bound address
    expect(parseHost('[::1')).toBeUndefined();
  });
});

describe('jsonContentType', () => {
  it('application/json (with parameters) only', () => {
    expect(jsonContentType('application/json')).toBe(true);
    expect(jsonContentType('Application/JSON; charset=utf-8')).toBe(true);
    for (const t of [undefined, '', 'text/plain', 'text/plain;charset=UTF-8', 'application/x-www-form-urlencoded', 'multipart/form-data', 'application/jsonp', 'application/json-seq'])
      expect(jsonContentType(t), String(t)).toBe(false);
  });
});

describe('tokenMatches', () => {
  it('Bearer with the exact token only', () => {
    expect(tokenMatches('Bearer s3cret-Token', 's3cret-Token')).toBe(true);
    expect(tokenMatches('bearer s3cret-Token', 's3cret-Token')).toBe(true);
    for (const a of [undefined, '', 's3cret-Token', 'Bearer', 'Bearer s3cret-token', 'Bearer s3cret-Token2', 'Basic czNjcmV0LVRva2Vu', 'Bearer s3cret-Token x'])
      expect(tokenMatches(a, 's3cret-Token'), String(a)).toBe(false);
  });
});
