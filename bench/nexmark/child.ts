/**
 * One Nexmark measurement, in a fresh process:
 *   node bench/ts-entry.mjs bench/nexmark/child.ts <query|source> <variant> <events> <generator|events.jsonl>
 * (weir from dist/, as the suite runs it), or with `node --conditions=weir-source --import tsx`
 * instead of `node bench/ts-entry.mjs` (weir from its sources).
 * variant: weir-1 (one worker, parallelism 1), weir-2 (two worker threads, parallelism 2) or
 * plain (oracle.ts in this thread), or plain-2 (oracle.ts in two worker threads at once, half the
 * events each: the machine's ceiling for 2 ÷ 1, plain-threads.ts). Query `source` with variant plain only reads the events
 * (what the source alone costs). Times the processing only, from just before the job (or the
 * loop) starts until it has finished, and prints one RESULT_MARK line on stdout; weir sinks
 * report their digests on stderr.
 */
import { closeSync, openSync, readSync } from 'node:fs';
import { resolve } from 'node:path';
import { performance } from 'node:perf_hooks';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { runJob } from 'weir';
import { importedWeirRuntime, RESULT_MARK, type Result } from '../workloads.ts';
import { OutputDigest, QUERY_IDS, type QueryId } from './check.ts';
import { checkEventCount, forEachEvent } from './generator.ts';
import type { Event } from './model.ts';
import { plainQuery } from './oracle.ts';
import { runPlainThreads } from './plain-threads.ts';

export const NEXMARK_VARIANTS = ['weir-1', 'weir-2', 'plain', 'plain-2'] as const;
export type NexmarkVariant = (typeof NEXMARK_VARIANTS)[number];

export interface NexmarkChildReport {
  readonly query: QueryId | 'source';
  readonly variant: NexmarkVariant;
  readonly n: number;
  /** Wall time of the processing, ms. */
  readonly ms: number;
  /** CPU time of the process (all threads) over the same span, ms. */
  readonly cpuMs: number;
  /** CPU time of the whole process up to the report, ms. */
  readonly processCpuMs: number;
  /** plain: the digest; weir: undefined (on stderr). */
  readonly result: Result | undefined;
  /** weir: records the sources emitted. */
  readonly recordsIn?: number;
  /** weir: which weir this process imported, dist/ or the sources. */
  readonly runtime?: 'dist' | 'sources';
}

/** The events of a JSON-lines file, in file order, read 1 MiB at a time. */
function forEachLine(path: string, fn: (e: Event) => void): void {
  const fd = openSync(path, 'r');
  try {
    const buf = Buffer.allocUnsafe(1 << 20);
    let rest = '';
    for (;;) {
      const got = readSync(fd, buf, 0, buf.length, null);
      if (got === 0) break;
      const text = rest + buf.toString('utf8', 0, got);
      let from = 0;
      for (let nl = text.indexOf('\n'); nl >= 0; nl = text.indexOf('\n', from)) {
        if (nl > from) fn(JSON.parse(text.slice(from, nl)) as Event);
        from = nl + 1;
      }
      rest = text.slice(from);
    }
    if (rest.trim() !== '') fn(JSON.parse(rest) as Event);
  } finally {
    closeSync(fd);
  }
}

const cpuSince = (start?: NodeJS.CpuUsage) => {
  const d = process.cpuUsage(start);
  return (d.user + d.system) / 1000;
};

async function main(argv: string[]): Promise<void> {
  const [query, variant, nArg, source] = argv as [QueryId | 'source', NexmarkVariant, string, string];
  if (!(QUERY_IDS as readonly string[]).includes(query) && query !== 'source') throw new Error(`nexmark child: unknown query ${query}`);
  if (!NEXMARK_VARIANTS.includes(variant)) throw new Error(`nexmark child: unknown variant ${variant}; one of ${NEXMARK_VARIANTS.join(', ')}`);
  if (source === undefined) throw new Error('nexmark child: fourth argument: generator or the events file');
  const n = checkEventCount(Number(nArg), 'nexmark child, third argument');
  const file = source === 'generator' ? undefined : source;
  let report: Omit<NexmarkChildReport, 'processCpuMs'>;
  if (variant === 'plain-2') {
    if (query === 'source') throw new Error('nexmark child: plain-2 runs a query');
    const c0 = process.cpuUsage();
    const r = await runPlainThreads(query, n, 2, file);
    report = { query, variant, n, ms: r.ms, cpuMs: cpuSince(c0), result: r.result };
  } else if (variant === 'plain') {
    const d = query === 'source' ? undefined : new OutputDigest(query);
    let seen = 0;
    const c0 = process.cpuUsage();
    const t0 = performance.now();
    if (d === undefined) {
      const count = (e: Event) => {
        if (e.dateTime > 0) seen++;
      };
      if (file === undefined) forEachEvent(n, count);
      else forEachLine(file, count);
    } else {
      const q = plainQuery(query as QueryId, (o) => d.add(o));
      const add = (e: Event) => {
        seen++;
        q.add(e);
      };
      if (file === undefined) forEachEvent(n, add);
      else forEachLine(file, add);
      q.finish();
    }
    const ms = performance.now() - t0;
    if (seen !== n) throw new Error(`nexmark child: read ${seen} events, expected ${n}`);
    report = { query, variant, n, ms, cpuMs: cpuSince(c0), result: d?.result() ?? { events: seen } };
  } else {
    if (query === 'source') throw new Error('nexmark child: query "source" is plain only');
    const workers = variant === 'weir-1' ? 1 : 2;
    const modulePath = resolve(fileURLToPath(new URL('.', import.meta.url)), 'job.ts');
    // From the sources, loaded up front (runJob finds it in the module cache): transpiling it is
    // not timed. From dist/, runJob bundles the job (timed, as `npx weir run` does).
    if (importedWeirRuntime() === 'sources') await import(pathToFileURL(modulePath).href);
    const c0 = process.cpuUsage();
    const t0 = performance.now();
    const r = await runJob(modulePath, { workers, parallelism: workers, args: [query, nArg, file ?? '-'] });
    const ms = performance.now() - t0;
    if (r.status !== 'FINISHED') throw new Error(`weir nexmark ${query} ${r.status}: ${r.error?.message ?? 'unknown reason'}\n${r.error?.stack ?? ''}`);
    report = { query, variant, n, ms, cpuMs: cpuSince(c0), result: undefined, recordsIn: r.progress.recordsIn, runtime: importedWeirRuntime() };
  }
  const full: NexmarkChildReport = { ...report, processCpuMs: cpuSince() };
  process.stdout.write(RESULT_MARK + JSON.stringify(full) + '\n', () => process.exit(0));
}

main(process.argv.slice(2)).catch((e: unknown) => {
  process.stderr.write(`nexmark child failed: ${e instanceof Error ? (e.stack ?? e.message) : String(e)}\n`);
  process.exit(1);
});
