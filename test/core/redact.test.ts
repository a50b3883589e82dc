import { describe, expect, it } from 'vitest';
import { describeRecord } from '../../src/core/errors.ts';
import { hasUserinfo, quoteRaw, redactUserinfo } from '../../src/core/redact.ts';

describe('credential redaction', () => {
  it('blanks the user info of URLs, up to the last @ of the authority, keeping the scheme', () => {
    expect(redactUserinfo('postgres://app:Tr0ub4dor@3@db:5432/orders and http://h/x@y')).toBe('postgres://***@db:5432/orders and http://h/x@y');
    expect(redactUserinfo('REDIS://:pw@cache:6379')).toBe('REDIS://***@cache:6379');
    expect(hasUserinfo('s3://AKIA:secret@bucket/x')).toBe(true);
    expect(hasUserinfo('/data//backups@2024/sp')).toBe(false);
  });

  it('stays within one URL: another JSON field and a path with // are left alone (before: an owner field vanished, a path was blanked)', () => {
    expect(describeRecord({ site: 'https://shop.example.com', owner: 'alice@example.org', qty: 3 })).toBe('{"site":"https://shop.example.com","owner":"alice@example.org","qty":3}');
    expect(redactUserinfo('/data//backups@2024/savepoint-abc')).toBe('/data//backups@2024/savepoint-abc');
    expect(describeRecord({ dsn: 'postgres://app:s3cr3t@db/prod', n: 1 })).toBe('{"dsn":"postgres://***@db/prod","n":1}');
  });

  it('a raw line is redacted before it is cut: a password whose @ falls past the cut stays out', () => {
    const raw = `{oops ${'x'.repeat(80)},"dsn":"postgres://app:S3CRETpw${'y'.repeat(40)}@db/prod"}`;
    const quoted = quoteRaw(raw, 120);
    expect(quoted).not.toContain('S3CRET');
    expect(quoted.length).toBeLessThanOrEqual(120);
    expect(quoteRaw('short', 120)).toBe('short');
  });
});
