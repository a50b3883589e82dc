/**
 * The declarative application spec (issue 13 point 1), read from JSON or YAML and validated
 * field by field: every problem is one line naming the field ("spec orders.yaml: field
 * "job.parallelism": expected a positive integer, got 0"). Durations take the project's one
 * syntax ("30s", "5 min", or milliseconds). The manager owns the checkpoint and savepoint
 * directories and the REST port of the jobs it runs, so `configuration` may not set them.
 */
import { isMap, isScalar, isSeq, parseDocument, type Document } from 'yaml';
import { readDuration } from '../core/duration.ts';
import { WeirError } from '../core/errors.ts';
import { JsonTextError, parseJsonText } from '../core/json-text.ts';
import { byKey } from '../core/options/lookup.ts';
import { suggest } from '../core/options/suggest.ts';
import { path } from '../core/options/text.ts';
import { FileValues, readValue, settingsTree } from '../core/options/values.ts';
import type { RestartStrategySettings } from '../core/restart-settings.ts';
import { resolveRestartStrategy } from '../cluster/restart-strategy.ts';
import type { CheckpointSettings } from '../checkpoint/config.ts';
import type { S3Settings } from '../checkpoint/s3/settings.ts';
import { settingsConflict } from '../checkpoint/settings-conflict.ts';

export type DesiredState = 'running' | 'suspended';
export type UpgradeMode = 'stateless' | 'savepoint' | 'last-state';

export interface AppSpec {
  readonly name: string;
  readonly job: {
    /** Absolute path of the job module (resolved against the spec file's folder when read). */
    readonly module: string;
    /** A label of the job's code version: changing it (or anything else under job) is an upgrade. */
    readonly version: string;
    readonly args: readonly string[];
    readonly parallelism?: number;
  };
  /** Flink configuration keys passed to `weir run --config`. */
  readonly configuration: Readonly<Record<string, string | number | boolean>>;
  readonly state: DesiredState;
  readonly upgradeMode: UpgradeMode;
  readonly initialSavepointPath?: string;
  readonly allowNonRestoredState: boolean;
  /** A new value triggers a manual savepoint. */
  readonly savepointTriggerNonce?: number | string;
  readonly savepoints: {
    /** Periodic savepoints every intervalMs; none when absent. */
    readonly intervalMs?: number;
    readonly maxAgeMs: number;
    readonly maxCount: number;
    /** How long a savepoint (or stop-with-savepoint) may take before it counts as failed. */
    readonly timeoutMs: number;
  };
  readonly lastState: {
    /** A last-state upgrade whose latest checkpoint is older than this takes a savepoint instead. */
    readonly maxCheckpointAgeMs?: number;
  };
  readonly rollback: { readonly enabled: boolean; readonly readinessTimeoutMs: number };
  readonly health: {
    readonly restartsThreshold: number;
    readonly restartsWindowMs: number;
    /** No completed checkpoint for this long restarts the job; off when absent. */
    readonly checkpointProgressWindowMs?: number;
  };
}

/** Keys the manager sets for every job it runs: the spec may not override them. */
export const MANAGED_KEYS: ReadonlySet<string> = new Set([
  'execution.checkpointing.dir', 'state.checkpoints.dir',
  'execution.checkpointing.savepoint-dir', 'state.savepoints.dir',
  'execution.checkpointing.externalized-checkpoint-retention',
]);

const NAME = /^[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?$/;
/** What initialSavepointPath may be: a local path or an s3:// URL without credentials (as --from). */
const SNAPSHOT_PATH = path('DIR', ['s3']);

/** Whether `name` is a valid application name (also what keeps a name given over REST inside the store). */
export function isAppName(name: string): boolean {
  return NAME.test(name);
}

export class SpecError extends WeirError {
  constructor(where: string, field: string, problem: string) {
    super('CONFIG', `${where}: field "${field}": ${problem}`);
  }
}

type Raw = Record<string, unknown>;

/** Parses spec text (JSON or YAML by the file's extension, or by content) and validates it. */
export function parseSpecText(text: string, where: string, baseDir: string): AppSpec {
  return validateSpec(readSpecText(text, where), where, baseDir);
}

/** The spec text as data, unvalidated (what `weir apps apply` sends to the manager). */
export function readSpecText(text: string, where: string): unknown {
  try {
    // A key twice is refused (JSON.parse kept the last silently), a fault told by its place only.
    // prettyErrors: the first line of a YAML error then says where (", at line 3, column 1").
    if (/\.json$/i.test(where)) {
      const value = parseJsonText(text);
      // Valid JSON is YAML: the same document, read for its numbers' text.
      const doc = parseDocument(text);
      return doc.errors.length === 0 ? withSourceText(doc) : value;
    }
    const doc = parseDocument(text, { prettyErrors: true });
    if (doc.errors.length > 0) throw doc.errors[0]!;
    return withSourceText(doc);
  } catch (e) {
    if (e instanceof JsonTextError && e.duplicateKey !== undefined) throw new WeirError('CONFIG', `${where}: ${e.message}`);
    throw new WeirError('CONFIG', `${where}: not valid ${/\.json$/i.test(where) ? 'JSON' : 'YAML'}: ${(e as Error).message.split('\n')[0]!.replace(/:$/, '')}`);
  }
}

/** Fields that hold a string whatever it looks like (with job.args, a list): version 1.10 is "1.10". */
const TEXT_FIELDS: readonly (readonly string[])[] = [['name'], ['job', 'module'], ['job', 'version'], ['initialSavepointPath']];

/**
 * The document as data, where a string field written as a number or boolean keeps its text as
 * written: String(1.10) is "1.1" (an upgrade from version 1.1 to 1.10 was taken for no change),
 * args [01234, 1.10, 0x1F] were passed as 1234, 1.1 and 31.
 */
function withSourceText(doc: Document): unknown {
  const keep = (node: unknown): void => {
    if (isScalar(node) && (typeof node.value === 'number' || typeof node.value === 'boolean') && typeof node.source === 'string') node.value = node.source;
  };
  if (isMap(doc.contents)) {
    for (const path of TEXT_FIELDS) keep(doc.getIn(path, true));
    const args = doc.getIn(['job', 'args'], true);
    if (isSeq(args)) args.items.forEach(keep);
  }
  return doc.toJS();
}

/** Checks a parsed spec; `where` names it in errors, `baseDir` resolves a relative job module. */
export function validateSpec(raw: unknown, where: string, baseDir: string): AppSpec {
  const r = new Reader(where);
  const top = r.object(raw, '');
  r.only(top, '', ['name', 'job', 'configuration', 'state', 'upgradeMode', 'initialSavepointPath', 'allowNonRestoredState', 'savepointTriggerNonce', 'savepoints', 'lastState', 'rollback', 'health']);
  const name = r.string(top, 'name');
  if (!NAME.test(name)) r.fail('name', `expected lower-case letters, digits and "-" (at most 63, starting and ending with a letter or digit), got ${JSON.stringify(name)}`);
  const job = r.object(top['job'], 'job');
  r.only(job, 'job', ['module', 'version', 'args', 'parallelism']);
  const module = r.string(job, 'module', 'job.');
  const args = job['args'] === undefined ? [] : r.stringArray(job['args'], 'job.args');
  const parallelism = r.optInt(job, 'parallelism', 'job.', 1);
  const configuration = readConfiguration(r, top['configuration']);
  const state = r.choice(top, 'state', ['running', 'suspended'] as const, 'running');
  const upgradeMode = r.choice(top, 'upgradeMode', ['stateless', 'savepoint', 'last-state'] as const, 'savepoint');
  const sp = r.object(top['savepoints'] ?? {}, 'savepoints');
  r.only(sp, 'savepoints', ['interval', 'maxAge', 'maxCount', 'timeout']);
  const ls = r.object(top['lastState'] ?? {}, 'lastState');
  r.only(ls, 'lastState', ['maxCheckpointAge']);
  const rb = r.object(top['rollback'] ?? {}, 'rollback');
  r.only(rb, 'rollback', ['enabled', 'readinessTimeout']);
  const h = r.object(top['health'] ?? {}, 'health');
  r.only(h, 'health', ['restartsThreshold', 'restartsWindow', 'checkpointProgressWindow']);
  const nonce = top['savepointTriggerNonce'];
  if (nonce !== undefined && nonce !== null && typeof nonce !== 'string' && !(typeof nonce === 'number' && Number.isFinite(nonce))) r.fail('savepointTriggerNonce', `expected a number or a string, got ${typeof nonce}`);
  const initial = top['initialSavepointPath'] === undefined ? undefined : r.string(top, 'initialSavepointPath');
  // As --from: a key and secret in an s3:// URL would be in the manager's log, the deployment's
  // command line and every error about it; refused, and not echoed.
  const badInitial = initial === undefined ? undefined : SNAPSHOT_PATH.check(initial);
  if (badInitial !== undefined) r.fail('initialSavepointPath', 'reason' in badInitial ? badInitial.reason : `expected ${badInitial.expected}, got ${badInitial.got}`);
  const spec: AppSpec = {
    name,
    job: { module: absolute(module, baseDir), version: r.string(job, 'version', 'job.'), args, ...(parallelism !== undefined ? { parallelism } : {}) },
    configuration,
    state,
    upgradeMode,
    ...(initial !== undefined ? { initialSavepointPath: absolute(initial, baseDir) } : {}),
    allowNonRestoredState: r.bool(top, 'allowNonRestoredState', false),
    ...(nonce !== undefined && nonce !== null ? { savepointTriggerNonce: nonce as number | string } : {}),
    savepoints: {
      ...optional('intervalMs', r.optDuration(sp, 'interval', 'savepoints.', 1000)),
      maxAgeMs: r.optDuration(sp, 'maxAge', 'savepoints.', 1) ?? 86_400_000,
      maxCount: r.optInt(sp, 'maxCount', 'savepoints.', 1) ?? 10,
      timeoutMs: r.optDuration(sp, 'timeout', 'savepoints.', 100) ?? 600_000,
    },
    lastState: { ...optional('maxCheckpointAgeMs', r.optDuration(ls, 'maxCheckpointAge', 'lastState.', 1)) },
    rollback: { enabled: r.bool(rb, 'enabled', false, 'rollback.'), readinessTimeoutMs: r.optDuration(rb, 'readinessTimeout', 'rollback.', 100) ?? 300_000 },
    health: {
      restartsThreshold: r.optInt(h, 'restartsThreshold', 'health.', 1) ?? 64,
      restartsWindowMs: r.optDuration(h, 'restartsWindow', 'health.', 1) ?? 120_000,
      ...optional('checkpointProgressWindowMs', r.optDuration(h, 'checkpointProgressWindow', 'health.', 1)),
    },
  };
  if (upgradeMode === 'last-state' && spec.configuration['execution.checkpointing.interval'] === undefined) {
    r.fail('upgradeMode', 'last-state needs checkpoints: set configuration "execution.checkpointing.interval"');
  }
  if (spec.health.checkpointProgressWindowMs !== undefined && spec.configuration['execution.checkpointing.interval'] === undefined) {
    r.fail('health.checkpointProgressWindow', 'needs checkpoints: set configuration "execution.checkpointing.interval"');
  }
  checkWindowsAgainstInterval(r, spec);
  return spec;
}

/**
 * Windows that a healthy job cannot meet are refused: a progress window shorter than two
 * checkpoint intervals restarted every deployment before its first checkpoint (a restart loop),
 * and a readiness timeout not longer than one rolled every upgrade back.
 */
function checkWindowsAgainstInterval(r: Reader, spec: AppSpec): void {
  const raw = spec.configuration['execution.checkpointing.interval'];
  const read = raw === undefined ? undefined : readDuration(raw);
  if (read === undefined || !('ms' in read)) return; // none, or reported by the configuration's own check
  const intervalMs = read.ms;
  const window = spec.health.checkpointProgressWindowMs;
  if (window !== undefined && window < 2 * intervalMs) {
    r.fail('health.checkpointProgressWindow', `${window} ms is shorter than two checkpoint intervals (${2 * intervalMs} ms): a healthy job would be restarted before it completes a checkpoint`);
  }
  if (spec.rollback.enabled && spec.rollback.readinessTimeoutMs <= intervalMs) {
    r.fail('rollback.readinessTimeout', `${spec.rollback.readinessTimeoutMs} ms is not longer than the checkpoint interval (${intervalMs} ms): an upgrade is stable only once it completed a checkpoint, so every upgrade would roll back`);
  }
}

function optional<K extends string, V>(key: K, v: V | undefined): { [k in K]?: V } {
  return (v === undefined ? {} : { [key]: v }) as { [k in K]?: V };
}

function absolute(p: string, baseDir: string): string {
  if (p.includes('://') || p.startsWith('/')) return p;
  return `${baseDir.replace(/\/$/, '')}/${p.replace(/^\.\//, '')}`;
}

function readConfiguration(r: Reader, raw: unknown): Record<string, string | number | boolean> {
  const obj = r.object(raw ?? {}, 'configuration');
  const out: Record<string, string | number | boolean> = {};
  const values = new FileValues();
  for (const [key, v] of Object.entries(obj)) {
    const field = `configuration.${key}`;
    if (MANAGED_KEYS.has(key)) r.fail(field, 'the manager sets this key itself (one directory per application)');
    const option = byKey(key);
    if (option === undefined) r.fail(field, 'not a configuration key weir knows (see docs/configuration.md)');
    if (typeof v !== 'string' && typeof v !== 'number' && typeof v !== 'boolean') r.fail(field, `expected a string, number or boolean, got ${v === null ? 'null' : typeof v}`);
    const read = readValue(option!, v, { kind: 'file', path: r.where, key });
    if (!read.ok) r.fail(field, read.message.slice(`${r.where}: "${key}": `.length));
    const twice = values.add(option!, key, read.value);
    if (twice !== undefined) r.fail(field, twice);
    out[key] = v as string | number | boolean;
  }
  // Settings that must agree with each other (the restart backoff bounds, unaligned checkpoints
  // and the mode, an S3 endpoint without credentials), as `weir run --config` checks them:
  // refused at apply, not at the deployment's start (which wrote them to its files first).
  const tree = settingsTree(values.values) as { restart?: RestartStrategySettings; checkpoint?: CheckpointSettings; s3?: S3Settings };
  const conflict = settingsConflict(tree, 'configuration');
  if (conflict !== undefined) r.fail('configuration', conflict.replace(/^configuration( \(S3\))?: /, ''));
  const restart = tree.restart;
  if (restart !== undefined) {
    try {
      resolveRestartStrategy(restart, 'restart strategy');
    } catch (e) {
      r.fail('configuration', (e as Error).message.replace(/^restart strategy: /, ''));
    }
  }
  return out;
}

/** Field readers that fail with the field's dotted name. */
class Reader {
  constructor(readonly where: string) {}

  fail(field: string, problem: string): never {
    throw new SpecError(this.where, field, problem);
  }

  object(v: unknown, field: string): Raw {
    if (v === null || typeof v !== 'object' || Array.isArray(v)) {
      if (field === '') throw new WeirError('CONFIG', `${this.where}: expected an object (a mapping of fields), got ${describe(v)}`);
      this.fail(field, `expected an object, got ${describe(v)}`);
    }
    return v as Raw;
  }

  only(obj: Raw, prefix: string, known: readonly string[]): void {
    for (const k of Object.keys(obj)) {
      if (known.includes(k)) continue;
      const near = suggest(k, known.map((n) => ({ name: n, offer: n })));
      this.fail(prefix === '' ? k : `${prefix}.${k}`, `unknown field${near !== undefined ? ` (did you mean "${near}"?)` : ''}`);
    }
  }

  string(obj: Raw, key: string, prefix = ''): string {
    const v = obj[key];
    if (v === undefined || v === null) this.fail(prefix + key, 'required');
    if (typeof v === 'number') return this.numberAsText(v, prefix + key);
    if (typeof v !== 'string' || v.trim() === '') this.fail(prefix + key, `expected a non-empty string, got ${describe(v)}`);
    return v;
  }

  stringArray(v: unknown, field: string): string[] {
    if (!Array.isArray(v)) this.fail(field, `expected a list of strings, got ${describe(v)}`);
    return v.map((x, i) => {
      if (typeof x === 'number') return this.numberAsText(x, `${field}[${i}]`);
      if (typeof x === 'boolean') return String(x);
      if (typeof x !== 'string') this.fail(`${field}[${i}]`, `expected a string, got ${describe(x)}`);
      return x;
    });
  }

  /**
   * A number where a string is meant (spec data as JSON, e.g. over REST; a spec file keeps the
   * text: withSourceText): an integer reads as its digits (a version label of 2 means "2"), any
   * other is refused, since it no longer says how it was written (1.10 arrives as 1.1).
   */
  numberAsText(v: number, field: string): string {
    if (Number.isSafeInteger(v)) return String(v);
    return this.fail(field, `got the number ${String(v)}, which may have been written otherwise (1.10 reads as 1.1); write it in quotes, as "1.10"`);
  }

  optInt(obj: Raw, key: string, prefix: string, min: number): number | undefined {
    const v = obj[key];
    if (v === undefined || v === null) return undefined;
    if (typeof v !== 'number' || !Number.isInteger(v) || v < min) this.fail(prefix + key, `expected an integer >= ${min}, got ${describe(v)}`);
    return v;
  }

  optDuration(obj: Raw, key: string, prefix: string, minMs: number): number | undefined {
    const v = obj[key];
    if (v === undefined || v === null) return undefined;
    const d = readDuration(v);
    if (!('ms' in d)) return this.fail(prefix + key, d.problem);
    if (d.ms < minMs) this.fail(prefix + key, `expected at least ${minMs} ms, got ${d.ms} ms`);
    return d.ms;
  }

  bool(obj: Raw, key: string, dflt: boolean, prefix = ''): boolean {
    const v = obj[key];
    if (v === undefined || v === null) return dflt;
    if (typeof v !== 'boolean') this.fail(prefix + key, `expected true or false, got ${describe(v)}`);
    return v;
  }

  choice<T extends string>(obj: Raw, key: string, values: readonly T[], dflt: T): T {
    const v = obj[key];
    if (v === undefined || v === null) return dflt;
    if (typeof v !== 'string' || !(values as readonly string[]).includes(v)) this.fail(key, `expected one of ${values.join(', ')}, got ${describe(v)}`);
    return v as T;
  }
}

function describe(v: unknown): string {
  if (v === null) return 'null';
  if (Array.isArray(v)) return 'a list';
  if (typeof v === 'object') return 'an object';
  return JSON.stringify(v);
}

/** The fields whose change redeploys the job (an upgrade); policy fields take effect in place. */
export function deploymentKey(spec: AppSpec): string {
  return JSON.stringify({ job: spec.job, configuration: spec.configuration, allowNonRestoredState: spec.allowNonRestoredState });
}
