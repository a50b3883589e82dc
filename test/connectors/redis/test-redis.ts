/**
 * The local Redis of the tests (127.0.0.1:6379), one connection per test file, and key names
 * of this run that are deleted after the file's tests.
 */
import { afterAll, beforeAll } from 'vitest';
import { Redis } from 'ioredis';

export const URL = 'redis://127.0.0.1:6379';

/** Registers the file's connect and clean-up hooks; `redis()` is the connection once they ran. */
export function useTestRedis(): { redis(): Redis; key(name: string): string } {
  let client: Redis | undefined;
  const keys: string[] = [];
  let n = 0;
  beforeAll(async () => {
    client = new Redis(URL, { lazyConnect: true, connectTimeout: 5000, commandTimeout: 10_000 });
    await client.connect();
  });
  afterAll(async () => {
    if (keys.length > 0) await client?.del(...keys);
    client?.disconnect();
  });
  return {
    redis: () => client!,
    key(name: string): string {
      const k = `weir-test:${process.pid}:${Date.now()}:${n++}:${name}`;
      keys.push(k);
      return k;
    },
  };
}
