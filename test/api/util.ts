/** Helpers shared by the DataStream API tests (not a test file itself). */
import { defineJob, runJob, type JobResult, type RunOptions, type StreamExecutionEnvironment } from '../../src/index.ts';

/** Runs an inline pipeline in this thread and returns the result whatever its status. */
export async function runInlineResult(
  build: (env: StreamExecutionEnvironment, args: readonly string[]) => void,
  options: RunOptions = {},
): Promise<JobResult> {
  return runJob(defineJob(build), { workers: 1, parallelism: 1, stdout: () => {}, ...options });
}

/** Runs an inline pipeline that must fail; returns the one-line error message. */
export async function failureOf(
  build: (env: StreamExecutionEnvironment, args: readonly string[]) => void,
  options: RunOptions = {},
): Promise<string> {
  const r = await runInlineResult(build, options);
  if (r.status !== 'FAILED') throw new Error(`expected the job to fail, it ended ${r.status}`);
  const msg = r.error?.message ?? '';
  if (msg.includes('\n')) throw new Error(`error message is not one line: ${JSON.stringify(msg)}`);
  return msg;
}

/** A seed for a randomised test: WEIR_TEST_SEED replays a run; the seed is always printed. */
export function testSeed(name: string): number {
  const fromEnv = process.env.WEIR_TEST_SEED;
  const seed = fromEnv !== undefined ? Number(fromEnv) : Math.floor(Math.random() * 2 ** 31);
  console.log(`[${name}] seed ${seed} (replay with WEIR_TEST_SEED=${seed})`);
  return seed;
}

/** Groups values by a key function, keeping arrival order inside each group. */
export function groupBy<T, K>(xs: readonly T[], key: (x: T) => K): Map<K, T[]> {
  const m = new Map<K, T[]>();
  for (const x of xs) {
    const k = key(x);
    let l = m.get(k);
    if (l === undefined) m.set(k, (l = []));
    l.push(x);
  }
  return m;
}

export const byNumber = (a: number, b: number): number => a - b;
