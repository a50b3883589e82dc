/**
 * s3rver in a worker thread of the benchmark's process (bench/s3.ts, `--s3-server thread`): the
 * server's CPU (MD5 of every body, its files, its HTTP handling) on a thread of its own, as a
 * remote S3 would be, instead of on the thread of the client it serves. Test setup as in
 * test/helpers/s3rver.ts (the same server, its gaps covered the same way).
 */
import { isMainThread, parentPort, Worker, workerData } from 'node:worker_threads';
import type { S3Settings } from '../src/checkpoint/s3/settings.ts';
import { startS3Server, useS3Credentials } from '../test/helpers/s3rver.ts';

export interface ThreadS3Server {
  readonly bucket: string;
  readonly endpoint: string;
  readonly settings: S3Settings;
  close(): Promise<void>;
}

export async function startS3ServerThread(options: { bucket: string; settings: S3Settings }): Promise<ThreadS3Server> {
  useS3Credentials();
  const worker = new Worker(new URL('./s3-server-thread-entry.js', import.meta.url), { workerData: options });
  const started = await new Promise<{ endpoint: string; settings: S3Settings }>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error('s3rver thread: no answer in 30 s')), 30_000);
    worker.once('message', (m: { endpoint: string; settings: S3Settings }) => (clearTimeout(timer), resolve(m)));
    worker.once('error', (e) => (clearTimeout(timer), reject(e)));
  });
  return {
    bucket: options.bucket,
    endpoint: started.endpoint,
    settings: started.settings,
    async close() {
      const closed = new Promise<void>((resolve) => worker.once('exit', () => resolve()));
      worker.postMessage('close');
      const timer = setTimeout(() => void worker.terminate(), 10_000);
      await closed;
      clearTimeout(timer);
    },
  };
}

if (!isMainThread && (workerData as { bucket?: string } | undefined)?.bucket !== undefined) {
  const server = await startS3Server(workerData as { bucket: string; settings: S3Settings });
  parentPort!.once('message', () => void server.close().then(() => process.exit(0)));
  parentPort!.postMessage({ endpoint: server.endpoint, settings: server.settings });
}
