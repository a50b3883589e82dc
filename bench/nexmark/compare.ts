/**
 * Debugging aid: one query's weir output, record by record, against the plain implementation.
 *   node --conditions=weir-source --import tsx bench/nexmark/compare.ts <query> <events> <workers> <parallelism> [<events.jsonl>]
 * Prints the records weir missed and the records it produced that the plain implementation did not.
 */
import { fileURLToPath } from 'node:url';
import { runJob } from 'weir';
import { QUERY_IDS, type QueryId } from './check.ts';
import { checkEventCount, forEachEvent } from './generator.ts';
import { plainQuery } from './oracle.ts';

const [qArg, nArg, wArg, pArg, file] = process.argv.slice(2);
const q = qArg as QueryId;
if (!QUERY_IDS.includes(q)) throw new Error(`compare: query must be one of ${QUERY_IDS.join(', ')}, got ${String(qArg)}`);
const n = checkEventCount(Number(nArg), 'compare, second argument');
const workers = Number(wArg ?? 2);
const parallelism = Number(pArg ?? 2);
const want: string[] = [];
const plain = plainQuery(q, (o) => want.push(JSON.stringify(o)));
forEachEvent(n, (e) => plain.add(e));
plain.finish();
const job = fileURLToPath(new URL('./job.ts', import.meta.url));
const r = await runJob(job, { workers, parallelism, args: [q, String(n), file ?? '-', 'collect'], stdout: () => {} });
if (r.status !== 'FINISHED') throw new Error(`compare: job ${r.status}: ${r.error?.message}`);
const got = r.collected(q).map((o) => JSON.stringify(o));
const wanted = new Set(want);
const gotSet = new Set(got);
const missing = want.filter((x) => !gotSet.has(x));
const extra = got.filter((x) => !wanted.has(x));
process.stdout.write(`${q}, ${n} events, ${workers} worker(s), parallelism ${parallelism}: weir ${got.length} records, plain ${want.length}; ${missing.length} missing, ${extra.length} extra\n`);
for (const x of missing) process.stdout.write(`  missing ${x}\n`);
for (const x of extra) process.stdout.write(`  extra   ${x}\n`);
process.exit(missing.length + extra.length === 0 ? 0 : 1);
