/**
 * weir checkpoints DIR [--json]: the checkpoint history of the job(s) in a checkpoint
 * directory, read offline from each job's checkpoint-history.jsonl and its retained chk-<n>
 * folders: status, trigger time, duration, size, per-subtask sync/async/alignment/start-delay
 * maxima, failure reasons; a summary (min/avg/max) like Flink's checkpoint tab.
 */
import { LocalCheckpointStorage, isDirectory, type CheckpointStorage } from '../checkpoint/storage.ts';
import { S3CheckpointStorage } from '../checkpoint/s3/s3-storage.ts';
import { isS3Reference, resolveS3Config } from '../checkpoint/s3/settings.ts';
import { parseEntry } from '../checkpoint/history.ts';
import { checkpointDirName } from '../checkpoint/names.ts';
import { summarize } from '../checkpoint/stats.ts';
import { OPTIONS } from '../core/options/registry.ts';
import { valueOf, type OptionValues } from '../core/options/values.ts';
import { CliError } from './args.ts';
import { commandLine } from './command-line.ts';
import { fmtBytes } from './run.ts';
import { sparkline } from './sparkline.ts';
import { escapeControls, logger } from '../core/log.ts';

interface HistoryEntry {
  id: number;
  status: string;
  type: string;
  triggerTimestamp: number;
  endToEndDurationMs?: number;
  stateSize: number;
  checkpointedSize: number;
  numAcknowledged: number;
  numSubtasks: number;
  subtasks: Record<string, { syncMs: number; asyncMs: number; alignmentMs: number; startDelayMs: number; stateSize: number }>;
  failureReason?: string;
  failureMessage?: string;
  externalPath?: string;
  attempt: number;
}

export async function checkpointsCommand(argv: string[]): Promise<number> {
  const line = commandLine(argv, 'checkpoints');
  if (line === undefined) return 0;
  const { values, positionals } = line;
  if (positionals.length !== 1) throw new CliError('checkpoints: give one checkpoint directory, e.g. weir checkpoints /tmp/chk');
  const dir = positionals[0]!;
  const storage = storageAt(dir, values);
  try {
    return await printCheckpoints(storage, dir, values);
  } finally {
    if (storage instanceof S3CheckpointStorage) await storage.close();
  }
}

/** A local directory, or an s3://bucket/prefix with the S3 flags (and the SDK's environment). */
function storageAt(dir: string, values: OptionValues): CheckpointStorage {
  if (isS3Reference(dir)) {
    const s3 = resolveS3Config({ endpoint: valueOf(values, OPTIONS.s3Endpoint), pathStyleAccess: valueOf(values, OPTIONS.s3PathStyleAccess) }, 'checkpoints');
    return S3CheckpointStorage.create(dir, s3);
  }
  if (!isDirectory(dir)) throw new CliError(`checkpoints: ${dir} is not a directory`);
  return new LocalCheckpointStorage(dir);
}

async function printCheckpoints(storage: CheckpointStorage, dir: string, values: OptionValues): Promise<number> {
  const skipped: string[] = [];
  const jobs = [];
  for (const jobId of await storage.jobs()) {
    const read = await storage.readHistory(jobId);
    // Lines the job's own history loader would skip (valid JSON that is not an entry) are
    // skipped here too, with a line saying so, instead of failing the listing of every job.
    // The parsed entries, not the raw lines: a line's numbers given as strings were added as
    // strings (averages above the maxima), and a missing field failed the listing of every job.
    const history = read.entries.map(parseEntry).filter((e) => e !== undefined) as unknown as HistoryEntry[];
    const notEntries = read.entries.length - history.length;
    for (const line of read.unreadable) skipped.push(`${read.reference}:${line}: unreadable history line (torn write)`);
    if (notEntries > 0) skipped.push(`${read.reference}: ${notEntries} line(s) that are not checkpoint history entries (no id, status or trigger time)`);
    // Entries are appended as checkpoints end, which is not always in id order (a failed
    // trigger can end after a later checkpoint completes); readers want id order.
    history.sort((a, b) => a.id - b.id);
    const retained = await storage.completed(jobId, (l) => skipped.push(l.replace(/^weir: /, '')));
    if (history.length === 0 && retained.length === 0) continue;
    jobs.push({ jobId, jobName: retained[retained.length - 1]?.metadata.jobName, history, retained });
  }
  if (valueOf(values, OPTIONS.json) === true) {
    process.stdout.write(JSON.stringify({
      jobs: jobs.map((j) => ({
        jobId: j.jobId, jobName: j.jobName, history: j.history,
        retained: j.retained.map((r) => ({ id: r.metadata.checkpointId, path: r.path, type: r.metadata.type, completedAt: r.metadata.completedAt, stateSize: r.metadata.stats.stateSize })),
      })),
      warnings: skipped,
    }, null, 2) + '\n');
    return 0;
  }
  if (jobs.length === 0) {
    process.stdout.write(`no checkpoints in ${dir}\n`);
  }
  for (const j of jobs) {
    const completed = j.history.filter((h) => h.status === 'COMPLETED');
    const failed = j.history.filter((h) => h.status === 'FAILED');
    process.stdout.write(escapeControls(`job ${j.jobId}${j.jobName ? ` "${j.jobName}"` : ''}: ${completed.length} completed, ${failed.length} failed`) + '\n'); // the name is the job's: no terminal controls
    for (const r of j.retained) {
      process.stdout.write(`  retained: ${checkpointDirName(r.metadata.checkpointId)} (${new Date(r.metadata.completedAt).toISOString()}, ${fmtBytes(r.metadata.stats.stateSize)}) ${escapeControls(r.path)}\n`);
    }
    const d = summarize(completed.map((h) => h.endToEndDurationMs ?? 0));
    const s = summarize(completed.map((h) => h.stateSize));
    if (d && s) {
      process.stdout.write(`  summary: duration min ${d.min} / avg ${d.avg.toFixed(0)} / max ${d.max} ms; size min ${fmtBytes(s.min)} / avg ${fmtBytes(Math.round(s.avg))} / max ${fmtBytes(s.max)}\n`);
      // The whole history, oldest to newest: growth shows at a glance (the history is in id order).
      process.stdout.write(`  trend over ${completed.length} completed (oldest → newest):\n`);
      process.stdout.write(`    duration ${sparkline(completed.map((h) => h.endToEndDurationMs ?? 0))}  (min ${d.min} ms, max ${d.max} ms)\n`);
      process.stdout.write(`    size     ${sparkline(completed.map((h) => h.stateSize))}  (min ${fmtBytes(s.min)}, max ${fmtBytes(s.max)})\n`);
    }
    const rows = [['ID', 'STATUS', 'TYPE', 'TRIGGERED', 'DURATION', 'SIZE', 'ACKS', 'SYNC', 'ASYNC', 'ALIGN', 'DELAY', 'REASON']];
    for (const h of [...j.history].sort((a, b) => b.id - a.id)) {
      const st = Object.values(h.subtasks ?? {});
      const max = (f: (x: (typeof st)[number]) => number) => {
        // Over the numbers only (a foreign line's subtasks may hold anything), without spreading.
        const m = st.reduce((a, x) => (x !== null && typeof x === 'object' && Number.isFinite(f(x)) ? Math.max(a, f(x)) : a), Number.NEGATIVE_INFINITY);
        return m === Number.NEGATIVE_INFINITY ? '-' : m.toFixed(1);
      };
      rows.push([
        String(h.id), h.status, h.type, new Date(h.triggerTimestamp).toISOString().replace('T', ' ').replace('Z', ''),
        h.endToEndDurationMs !== undefined ? `${h.endToEndDurationMs} ms` : '-', fmtBytes(h.stateSize), `${h.numAcknowledged}/${h.numSubtasks}`,
        max((x) => x.syncMs), max((x) => x.asyncMs), max((x) => x.alignmentMs), max((x) => x.startDelayMs),
        h.failureReason ? `${h.failureReason}: ${h.failureMessage ?? ''}` : '',
      ]);
    }
    const widths = rows[0]!.map((_, c) => rows.reduce((w, r) => Math.max(w, r[c]!.length), 0));
    for (const r of rows) process.stdout.write('  ' + r.map((x, c) => (c === r.length - 1 ? x : x.padEnd(widths[c]!))).join('  ').trimEnd() + '\n');
    process.stdout.write('  (SYNC, ASYNC, ALIGN, DELAY: maximum over subtasks, ms)\n');
  }
  for (const w of skipped) logger().warn(w);
  return 0;
}
