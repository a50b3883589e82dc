/**
 * Runs for tests whose injected failure waits for a completed checkpoint ("fail at the first
 * record after checkpoint K"), so that the restart restores mid-input. Whether a checkpoint
 * completes before the input runs out depends on the machine's pace: on a loaded machine (two
 * CPUs shared with other test files and benchmarks) a few hundred milliseconds of input can end
 * before one does, and then nothing fails and nothing is restored. Such a run did not test what
 * it was meant to, so it is run again with its input paced slower (a slowdown of 1, then 4, then
 * 16), each rerun logged; the assertions then apply to the run whose failure happened. When none
 * of the tries failed, the last run is returned and the test's own assertions report it.
 */

/** Slowdowns of the successive tries. */
export const PACE_SLOWDOWNS: readonly number[] = [1, 4, 16];

export async function runUntilFailedAfterCheckpoint<R>(
  label: string,
  run: (slowdown: number) => Promise<R>,
  failed: (r: R) => boolean,
): Promise<R> {
  let last: R | undefined;
  for (const slowdown of PACE_SLOWDOWNS) {
    if (slowdown > 1) console.log(`[${label}] no checkpoint completed before the input ended; running again ${slowdown}x slower`);
    last = await run(slowdown);
    if (failed(last)) return last;
  }
  return last!;
}
