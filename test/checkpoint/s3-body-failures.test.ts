/**
 * An S3 GET whose body stalls or is cut short, from a server on loopback that answers the
 * headers and then sends only part of the body: retried, then a storage failure (STORAGE),
 * never "corrupt state". Before, the body's timeout was taken for a corrupt state file: a good
 * checkpoint was given up for an older one, or the restore refused (found by a read-only audit).
 */
import { createServer, type Server } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { S3FileSystem } from '../../src/checkpoint/s3/s3-file-system.ts';
import { resolveS3Config } from '../../src/checkpoint/s3/settings.ts';
import { openStateFile, StateFileReader } from '../../src/checkpoint/state-file.ts';
import { FsWorkerView } from '../../src/checkpoint/storage-on-fs.ts';

let server: Server;
let port = 0;
let gets = 0;
let mode: 'stall' | 'cut' = 'stall';

beforeAll(async () => {
  server = createServer((sock) => {
    sock.on('error', () => {});
    sock.on('data', (d) => {
      const head = `HTTP/1.1 200 OK\r\nContent-Length: 1000\r\nETag: "abc"\r\n\r\n`;
      if (d.toString().startsWith('HEAD')) {
        sock.write(head);
        return;
      }
      gets++;
      sock.write(head + 'W'.repeat(100)); // 100 of 1000 bytes
      if (mode === 'cut') setTimeout(() => sock.destroy(), 50);
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  port = (server.address() as { port: number }).port;
});
afterAll(() => new Promise<void>((r) => server.close(() => r())));

describe('S3 reads whose body fails', () => {
  it.each(['stall', 'cut'] as const)('a body that is %s is retried, then a STORAGE failure naming the object', async (m) => {
    mode = m;
    gets = 0;
    const env = { ...process.env };
    process.env.AWS_ACCESS_KEY_ID = 'AKIAEXAMPLEEXAMPLE00';
    process.env.AWS_SECRET_ACCESS_KEY = 'example-secret';
    process.env.AWS_EC2_METADATA_DISABLED = 'true';
    const fs = new S3FileSystem(resolveS3Config({ endpoint: `http://127.0.0.1:${port}`, pathStyleAccess: true, region: 'us-east-1', requestTimeout: '300 ms', retryMaxAttempts: 2 }, 'test'));
    try {
      const input = await openStateFile(new FsWorkerView(fs), 's3://bucket/job/chk-5/abcd-0.state', 1000);
      const e = await StateFileReader.open(input).then(() => undefined, (x: unknown) => x as Error & { code?: string });
      expect(e?.code, e?.message).toBe('STORAGE');
      expect(e?.message).toMatch(/s3 get s3:\/\/bucket\/job\/chk-5\/abcd-0\.state failed while reading the body: .* \(after 2 attempt\(s\)\)/);
      expect(e?.message).not.toContain('example-secret');
      expect(gets).toBe(2);
    } finally {
      await fs.close();
      process.env = env;
    }
  });
});
