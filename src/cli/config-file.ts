/**
 * A JSON config file with Flink's configuration keys (execution.checkpointing.*,
 * restart-strategy.*), e.g.
 *   { "execution.checkpointing.interval": "1 s", "execution.checkpointing.mode": "EXACTLY_ONCE",
 *     "execution.checkpointing.dir": "/var/lib/weir/checkpoints", "restart-strategy.type": "fixed-delay" }
 * Flink's older key names are accepted too. Unknown keys are errors, naming the key and file.
 */
import { readFileSync } from 'node:fs';
import { applyCheckpointSettings, DEFAULT_CHECKPOINT_CONFIG, type CheckpointSettings } from '../checkpoint/config.ts';
import { resolveRestartStrategy, type RestartStrategySettings } from '../cluster/restart-strategy.ts';
import { CliError } from './args.ts';

type Mut<T> = { -readonly [K in keyof T]: T[K] };

export interface FileConfig {
  checkpoint: Mut<CheckpointSettings>;
  restart: Mut<RestartStrategySettings> | undefined;
  parallelism?: number;
}

const CP = 'execution.checkpointing.';
const RS = 'restart-strategy.';

export function readConfigFile(path: string): FileConfig {
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (e) {
    throw new CliError(`cannot read config file ${path}: ${(e as Error).message}`);
  }
  let raw: unknown;
  try {
    raw = JSON.parse(text);
  } catch (e) {
    throw new CliError(`config file ${path} is not valid JSON: ${(e as Error).message}`);
  }
  if (raw === null || typeof raw !== 'object' || Array.isArray(raw)) throw new CliError(`config file ${path} must hold a JSON object of "key": value`);
  return parseConfig(raw as Record<string, unknown>, path);
}

function str(v: unknown, key: string, path: string): string {
  if (typeof v === 'string') return v;
  if (typeof v === 'number') return String(v);
  throw new CliError(`${path}: "${key}" must be a string, got ${JSON.stringify(v)}`);
}

function intOf(v: unknown, key: string, path: string): number {
  const n = typeof v === 'string' && /^-?\d+$/.test(v) ? Number(v) : v;
  if (typeof n !== 'number' || !Number.isInteger(n)) throw new CliError(`${path}: "${key}" must be an integer, got ${JSON.stringify(v)}`);
  return n;
}

function duration(v: unknown, key: string, path: string): string | number {
  if (typeof v === 'number') return v;
  return str(v, key, path);
}

function numberOf(v: unknown, key: string, path: string): number {
  const n = typeof v === 'string' && v.trim() !== '' ? Number(v) : v;
  if (typeof n !== 'number' || Number.isNaN(n)) throw new CliError(`${path}: "${key}" must be a number, got ${JSON.stringify(v)}`);
  return n;
}

/**
 * Values are validated here, one key at a time, so that a bad value is reported with its key and
 * file (the same checks run again when the job starts, but by then the key and file are unknown).
 */
function validate(key: string, path: string, check: (where: string) => unknown): void {
  try {
    check(`${path}: "${key}"`);
  } catch (e) {
    throw new CliError(e instanceof Error ? e.message : String(e));
  }
}

export function parseConfig(raw: Record<string, unknown>, path: string): FileConfig {
  const cp: Mut<CheckpointSettings> = {};
  let rs: Mut<RestartStrategySettings> | undefined;
  const out: FileConfig = { checkpoint: cp, restart: undefined };
  const restart = () => (rs ??= {});
  for (const [key, v] of Object.entries(raw)) {
    const before: CheckpointSettings = { ...cp };
    const restartBefore: RestartStrategySettings = { ...rs };
    switch (key) {
      case CP + 'interval':
        cp.interval = duration(v, key, path);
        break;
      case CP + 'mode': {
        const m = str(v, key, path).toUpperCase().replace(/-/g, '_');
        if (m !== 'EXACTLY_ONCE' && m !== 'AT_LEAST_ONCE') throw new CliError(`${path}: "${key}" must be EXACTLY_ONCE or AT_LEAST_ONCE, got ${JSON.stringify(v)}`);
        cp.mode = m === 'EXACTLY_ONCE' ? 'exactly-once' : 'at-least-once';
        break;
      }
      case CP + 'timeout':
        cp.timeout = duration(v, key, path);
        break;
      case CP + 'min-pause':
        cp.minPause = duration(v, key, path);
        break;
      case CP + 'max-concurrent-checkpoints':
        cp.maxConcurrent = intOf(v, key, path);
        break;
      case CP + 'tolerable-failed-checkpoints':
        cp.tolerableFailures = intOf(v, key, path);
        break;
      case CP + 'externalized-checkpoint-retention': {
        const r = str(v, key, path).toUpperCase();
        const map: Record<string, CheckpointSettings['retention']> = {
          NO_EXTERNALIZED_CHECKPOINTS: 'none', DELETE_ON_CANCELLATION: 'delete-on-cancel', RETAIN_ON_CANCELLATION: 'retain-on-cancel',
        };
        if (map[r] === undefined) throw new CliError(`${path}: "${key}" must be NO_EXTERNALIZED_CHECKPOINTS, DELETE_ON_CANCELLATION or RETAIN_ON_CANCELLATION, got ${JSON.stringify(v)}`);
        cp.retention = map[r];
        break;
      }
      case CP + 'num-retained':
      case 'state.checkpoints.num-retained':
        cp.numRetained = intOf(v, key, path);
        break;
      case CP + 'dir':
      case 'state.checkpoints.dir':
        // Flink writes local paths as URIs: file:///var/chk (or file:/var/chk).
        cp.dir = str(v, key, path).replace(/^file:(\/\/)?/, '');
        break;
      case CP + 'savepoint-dir':
      case 'state.savepoints.dir':
        cp.savepointDir = str(v, key, path).replace(/^file:(\/\/)?/, ''); // as for the checkpoint dir
        break;
      case 'parallelism.default':
        out.parallelism = intOf(v, key, path);
        if (out.parallelism < 1) throw new CliError(`${path}: "${key}" must be a positive integer, got ${JSON.stringify(v)}`);
        break;
      case RS + 'type':
      case 'restart-strategy': {
        const t = str(v, key, path).toLowerCase().replace(/_/g, '-');
        const norm = t === 'fixeddelay' ? 'fixed-delay' : t === 'failurerate' ? 'failure-rate' : t === 'exponentialdelay' ? 'exponential-delay' : t === 'disable' || t === 'off' || t === 'no-restart' ? 'none' : t;
        restart().type = norm as RestartStrategySettings['type'];
        break;
      }
      case RS + 'fixed-delay.attempts':
        restart().attempts = intOf(v, key, path);
        break;
      case RS + 'fixed-delay.delay':
      case RS + 'failure-rate.delay':
        restart().delay = duration(v, key, path);
        break;
      case RS + 'failure-rate.max-failures-per-interval':
        restart().maxFailuresPerInterval = intOf(v, key, path);
        break;
      case RS + 'failure-rate.failure-rate-interval':
        restart().failureRateInterval = duration(v, key, path);
        break;
      case RS + 'exponential-delay.initial-backoff':
        restart().initialBackoff = duration(v, key, path);
        break;
      case RS + 'exponential-delay.max-backoff':
        restart().maxBackoff = duration(v, key, path);
        break;
      case RS + 'exponential-delay.backoff-multiplier':
        restart().backoffMultiplier = numberOf(v, key, path);
        break;
      case RS + 'exponential-delay.reset-backoff-threshold':
        restart().resetBackoffThreshold = duration(v, key, path);
        break;
      case RS + 'exponential-delay.jitter-factor':
        restart().jitterFactor = numberOf(v, key, path);
        break;
      case RS + 'exponential-delay.attempts-before-reset-backoff':
        restart().attemptsBeforeResetBackoff = intOf(v, key, path);
        break;
      default:
        throw new CliError(`${path}: unknown configuration key "${key}"`);
    }
    // Check the value this key set (a field that is new or changed), naming the key and the file.
    for (const field of Object.keys(cp) as (keyof CheckpointSettings)[]) {
      if (before[field] === cp[field]) continue;
      validate(key, path, (where) => applyCheckpointSettings(DEFAULT_CHECKPOINT_CONFIG, { [field]: cp[field] }, where));
    }
    for (const field of Object.keys(rs ?? {}) as (keyof RestartStrategySettings)[]) {
      if (restartBefore[field] === rs![field]) continue;
      // Checked as a setting of the strategy its key belongs to; the backoff bounds are checked
      // against each other below, once both are known.
      const type = field === 'type' ? rs!.type : key.includes('.fixed-delay.') ? 'fixed-delay' : key.includes('.failure-rate.') ? 'failure-rate' : 'exponential-delay';
      const one: Mut<RestartStrategySettings> = { type, [field]: rs![field] };
      if (field === 'initialBackoff') one.maxBackoff = rs!.initialBackoff;
      if (field === 'maxBackoff') one.initialBackoff = 0;
      validate(key, path, (where) => resolveRestartStrategy(one, where));
    }
  }
  if (rs !== undefined) validate('restart-strategy', path, () => resolveRestartStrategy(rs!, path));
  out.restart = rs;
  return out;
}
