/** Messages about S3 never carry the user:password part of a URL, however many URLs they hold. */
import { describe, expect, it } from 'vitest';
import { redactUrl } from '../../src/checkpoint/s3/settings.ts';

describe('redactUrl', () => {
  it('blanks every user:password part, and leaves URLs without one alone', () => {
    const text = 'PUT http://key:s3cret@127.0.0.1:9000/b failed; retried at https://other:t0ken@host.example/b; then http://127.0.0.1:9001/b';
    const out = redactUrl(text);
    expect(out).toBe('PUT http://***@127.0.0.1:9000/b failed; retried at https://***@host.example/b; then http://127.0.0.1:9001/b');
    expect(out).not.toMatch(/s3cret|t0ken/);
    expect(redactUrl('s3://bucket/key')).toBe('s3://bucket/key');
  });

  it('blanks a user:password part at the start of a text given without a scheme (before: echoed whole)', () => {
    expect(redactUrl('AKIAEXAMPLE:topsecret@minio:9000')).toBe('***@minio:9000');
    expect(redactUrl('minio:9000')).toBe('minio:9000');
    expect(redactUrl('host:9000/path@x')).toBe('host:9000/path@x');
  });
});
