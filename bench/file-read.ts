/**
 * Plain read of one JSON-lines file by weir's file source, timed, at the given workers and
 * parallelism (parallelism = workers unless given):
 *   node --conditions=weir-source --import tsx bench/file-read.ts <file.jsonl> <workers> [parallelism] [splitSize|Infinity]
 * Prints records, wall ms, records/s and the process's CPU ms over all threads for the job
 * (module loaded before timing): on a loaded machine wall time says little, CPU time more.
 * "Reading" is from the first record any subtask saw to the last end of input: the job's time
 * without the workers' start-up. splitSize
 * Infinity reads the file as one split (weir before block splitting).
 */
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { performance } from 'node:perf_hooks';
import { runJob } from 'weir';

const [file, wArg, pArg, splitArg] = process.argv.slice(2);
if (file === undefined) throw new Error('usage: file-read.ts <file.jsonl> <workers> [parallelism] [splitSize]');
const workers = Number(wArg ?? 1);
const parallelism = Number(pArg ?? workers);
const job = resolve(fileURLToPath(new URL('.', import.meta.url)), 'jobs', 'file-read.ts');
await import(pathToFileURL(job).href);
const c0 = process.cpuUsage();
const t0 = performance.now();
const dir = mkdtempSync(join(tmpdir(), 'weir-file-read-'));
const spans = join(dir, 'spans.jsonl');
const r = await runJob(job, { workers, parallelism, stdout: () => {}, args: [file, splitArg ?? '', spans] });
const ms = performance.now() - t0;
const cpu = process.cpuUsage(c0);
const cpuMs = (cpu.user + cpu.system) / 1000;
if (r.status !== 'FINISHED') throw new Error(`file-read: job ${r.status}: ${r.error?.message}`);
const n = r.progress.recordsIn;
const parts = readFileSync(spans, 'utf8').split('\n').filter((l) => l !== '').map((l) => JSON.parse(l) as { records: number; firstMs: number; endMs: number });
rmSync(dir, { recursive: true, force: true });
const busy = parts.filter((p) => p.records > 0);
const readMs = Math.max(...busy.map((p) => p.endMs)) - Math.min(...busy.map((p) => p.firstMs));
process.stdout.write(`file-read ${file}: ${workers} worker(s), parallelism ${parallelism}, splitSize ${splitArg ?? 'default'}: ${n} records in ${ms.toFixed(0)} ms = ${Math.round(n / (ms / 1000))} records/s, CPU ${cpuMs.toFixed(0)} ms (all threads); reading ${readMs.toFixed(0)} ms = ${Math.round(n / (readMs / 1000))} records/s over ${busy.length} subtask(s) [${busy.map((p) => p.records).join(', ')}]\n`);
