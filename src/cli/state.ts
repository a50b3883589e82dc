/**
 * weir state inspect <checkpoint-or-savepoint> [--json] [--operator X [--state S [--key K]]]:
 * what a snapshot holds, offline. Goes beyond Flink's CLI, which has no such command.
 */
import { findOperator, lookupValue, openSnapshot, summarize, InspectError, type SnapshotSummary } from '../checkpoint/inspect.ts';
import { OPTIONS } from '../core/options/registry.ts';
import { storageResolver } from '../checkpoint/storage-resolver.ts';
import { resolveS3Config } from '../checkpoint/s3/settings.ts';
import { valueOf } from '../core/options/values.ts';
import { CliError } from './args.ts';
import { commandLine, wantsHelp } from './command-line.ts';
import { commandHelp } from './help.ts';
import { fmtBytes } from './run.ts';
import { errorCode } from '../core/errors.ts';
import { escapeControls } from '../core/log.ts';

export async function stateCommand(argv: string[]): Promise<number> {
  const [sub, ...rest] = argv;
  if (sub !== 'inspect' && wantsHelp(argv)) {
    process.stdout.write(commandHelp('state inspect'));
    return 0;
  }
  if (sub !== 'inspect') throw new CliError(`state: unknown subcommand "${sub ?? ''}"; use: weir state inspect <path>`);
  const line = commandLine(rest, 'state inspect');
  if (line === undefined) return 0;
  const { values, positionals } = line;
  const json = valueOf(values, OPTIONS.json) === true;
  if (positionals.length !== 1) throw new CliError('state inspect: give one checkpoint or savepoint directory');
  const path = positionals[0]!;
  const op = valueOf(values, OPTIONS.operator);
  const state = valueOf(values, OPTIONS.state);
  const key = valueOf(values, OPTIONS.key);
  if ((state !== undefined || key !== undefined) && op === undefined) throw new CliError('state inspect: --state and --key need --operator');
  if (key !== undefined && state === undefined) throw new CliError('state inspect: --key needs --state');
  // An s3:// snapshot is read with the S3 flags (and the SDK's environment), as weir checkpoints reads one.
  const storages = storageResolver(undefined, resolveS3Config({ endpoint: valueOf(values, OPTIONS.s3Endpoint), pathStyleAccess: valueOf(values, OPTIONS.s3PathStyleAccess) }, 'state inspect'));
  try {
    if (key !== undefined) {
      const r = await lookupValue(path, op!, state!, key, storages);
      if (json) process.stdout.write(JSON.stringify(r, jsonReplacer, 2) + '\n');
      else process.stdout.write(r.found ? `${JSON.stringify(r.value, jsonReplacer)}\n` : `no value for key ${JSON.stringify(key)} in state "${state}" of operator "${r.operator}" (key group ${r.keyGroup})\n`);
      return r.found ? 0 : 1;
    }
    const summary = await summarize(path, storages);
    if (op !== undefined) {
      const meta = await openSnapshot(path, storages);
      const target = findOperator(meta, op);
      const operators = summary.operators.filter((o) => o.id === target.id);
      if (state !== undefined && !operators[0]!.states.some((s) => s.name === state)) {
        throw new InspectError(`operator "${target.name}" has no keyed state "${state}"; its states: ${operators[0]!.states.map((s) => s.name).join(', ') || '(none)'}`);
      }
      const narrowed = { ...summary, operators: operators.map((o) => (state ? { ...o, states: o.states.filter((s) => s.name === state) } : o)) };
      print(narrowed, json);
      return 0;
    }
    print(summary, json);
    return 0;
  } catch (e) {
    if (e instanceof InspectError || errorCode(e) === 'CORRUPT_STATE') throw new CliError(`state inspect: ${(e as Error).message}`);
    throw e;
  }
}

function jsonReplacer(_k: string, v: unknown): unknown {
  if (typeof v === 'bigint') return `${v}n`;
  if (v instanceof Map) return Object.fromEntries(v);
  return v;
}

/** The serializer a state was written with, as the keyed states show it; raw values say so. */
function serializerText(r: { readonly name: string; readonly version: number } | undefined): string {
  return r === undefined ? ' (raw values)' : ` serializer ${r.name} v${r.version}`;
}

function print(s: SnapshotSummary, json: boolean): void {
  if (json) {
    process.stdout.write(JSON.stringify(s, jsonReplacer, 2) + '\n');
    return;
  }
  const out: string[] = [];
  out.push(`${s.type} ${s.checkpointId} of job ${s.jobId} "${s.jobName}", taken ${new Date(s.timestamp).toISOString()}, format v${s.formatVersion}, ${fmtBytes(s.stateSize)}`);
  for (const o of s.operators) {
    out.push(`operator "${o.name}"${o.uid ? ` uid=${o.uid}` : ''} id=${o.id.slice(0, 16)} parallelism=${o.parallelism} maxParallelism=${o.maxParallelism}${o.keyed ? ' keyed' : ''}`);
    for (const st of o.states) out.push(`  state "${st.name}" ${st.kind}${st.ttl ? ' (ttl)' : ''} serializer ${st.serializer.name} v${st.serializer.version}: ${st.keys} keys, ${fmtBytes(st.bytes)}`);
    for (const r of o.ranges) out.push(`  key groups ${r.keyGroupRange.start}-${r.keyGroupRange.end} (subtask ${r.subtask}): ${r.keys} entries, ${r.timers} timers, ${fmtBytes(r.bytes)} in ${r.file}`);
    if (o.keyKinds !== undefined) out.push(`  keyed by ${o.keyKinds.join(' and ')} keys`);
    if (o.stateLayout !== undefined) out.push(`  windows: ${o.stateLayout}`);
    for (const l of o.operatorState) out.push(`  operator state "${l.name}" (${l.distribution} list)${serializerText(l.serializer)}: ${l.items} items`);
    for (const b of o.broadcastState) out.push(`  broadcast state "${b.name}"${serializerText(b.serializer)}: ${b.entries} entries`);
    if (o.sourceSplits > 0) out.push(`  source splits: ${o.sourceSplits}`);
    if (o.committables > 0) out.push(`  pending sink commits: ${o.committables}`);
  }
  // Names come from the snapshot (job, operators, states): no terminal controls from them.
  process.stdout.write(escapeControls(out.join('\n')) + '\n');
}
