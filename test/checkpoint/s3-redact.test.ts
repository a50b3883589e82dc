/** Messages about S3 never carry the user:password part of a URL, however many URLs they hold. */
import { describe, expect, it } from 'vitest';
import { parseS3Reference, redactUrl } from '../../src/checkpoint/s3/settings.ts';
import { settingsConflict } from '../../src/checkpoint/settings-conflict.ts';
import { redactUserinfo } from '../../src/core/options/text.ts';

describe('redactUrl', () => {
  it('blanks every user:password part, and leaves URLs without one alone', () => {
    const text = 'PUT http://key:s3cret@127.0.0.1:9000/b failed; retried at https://other:t0ken@host.example/b; then http://127.0.0.1:9001/b';
    const out = redactUrl(text);
    expect(out).toBe('PUT http://***@127.0.0.1:9000/b failed; retried at https://***@host.example/b; then http://127.0.0.1:9001/b');
    expect(out).not.toMatch(/s3cret|t0ken/);
    expect(redactUrl('s3://bucket/key')).toBe('s3://bucket/key');
  });

  it('blanks a password that holds @ whole: URL parsers end the user info at the last @ (before: blanked up to the first, the rest shown)', () => {
    expect(redactUrl('s3://AKIA:wJalr@XUtnFEMI@mybucket/chk')).toBe('s3://***@mybucket/chk');
    expect(redactUrl('postgres://app:Tr0ub4dor@3@db:5432/orders and http://h/x@y')).toBe('postgres://***@db:5432/orders and http://h/x@y');
    expect(redactUserinfo('http://admin:pw@rd@127.0.0.1:1/')).toBe('http://***@127.0.0.1:1/');
    expect(redactUrl('AKIA:top@secret@minio:9000')).toBe('***@minio:9000');
  });

  it('blanks a user:password part at the start of a text given without a scheme (before: echoed whole)', () => {
    expect(redactUrl('AKIAEXAMPLE:topsecret@minio:9000')).toBe('***@minio:9000');
    expect(redactUrl('minio:9000')).toBe('minio:9000');
    expect(redactUrl('host:9000/path@x')).toBe('host:9000/path@x');
  });

  it('an S3 location with key:secret@ in it is refused without echoing the secret (before: named whole in the error, and so in a deployment\'s events)', () => {
    expect(() => parseS3Reference('s3://AKIAEXAMPLE:s3cr3t@my-bucket/out')).toThrow('s3://***@my-bucket/out: an S3 location must not carry credentials (use the AWS credential chain: AWS_ACCESS_KEY_ID, profiles)');
    expect(() => parseS3Reference('http://k:s3cr3t@host/x')).toThrow('not an S3 location (s3://bucket/prefix): "http://***@host/x"');
  });
});

describe('checkpoint and savepoint directories with credentials', () => {
  it('are refused wherever they are set, the secret never echoed (before: --savepoint-dir took one, and GET /jobs/:id showed it to anyone)', () => {
    const secret = 'wJalrXUtnFEMIK7MDENGbPxRfiCYEXAMPLEKEY';
    for (const field of ['dir', 'savepointDir'] as const) {
      const message = settingsConflict({ checkpoint: { [field]: `s3://AKIAEXAMPLE:${secret}@my-bucket/sp` } }, 'flags');
      expect(message).toMatch(/without credentials in it \(use the AWS credential chain/);
      expect(message).toContain('s3://***@my-bucket/sp');
      expect(message).not.toContain(secret);
    }
    expect(settingsConflict({ checkpoint: { savepointDir: 's3://my-bucket/sp' } }, 'flags')).toBeUndefined();
    expect(settingsConflict({ checkpoint: { savepointDir: '/var/sp/a@b' } }, 'flags')).toBeUndefined();
    expect(settingsConflict({ checkpoint: { savepointDir: `gs://k:${secret}@b/x` } }, 'flags')).not.toContain(secret);
  });
});
