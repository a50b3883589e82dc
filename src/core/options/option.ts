/** One option: every name it goes by, its value type, default and meaning. */
import type { CommandName } from './commands.ts';
import type { ValueType } from './value-type.ts';

/** Groups of run settings, in the order docs list them. */
export const SECTIONS = ['General', 'Execution', 'Checkpointing', 'Restart strategy', 'Savepoints and restore', 'Control API', 'Metrics', 'Job manager', 'Object storage (S3)'] as const;
export type Section = (typeof SECTIONS)[number];

export interface Option<T = unknown> {
  /** The flag without dashes ("checkpoint-interval"), and its one-letter alias ("p"). */
  readonly flag?: string;
  readonly short?: string;
  /** Placeholder in help when the type's (N, D, DIR) says too little. */
  readonly metavar?: string;
  /** Flink's configuration key, read from `weir run --config FILE`, and its older names. */
  readonly key?: string;
  readonly deprecatedKeys?: readonly string[];
  /**
   * Where the value goes in the job's settings, a dot path: "parallelism" (a runJob option),
   * "checkpoint.interval" (CheckpointSettings, as enableCheckpointing takes them), "restart.type"
   * (RestartStrategySettings, as setRestartStrategy and runJob's restartStrategy take them).
   * Options without one are read by their command only.
   */
  readonly field?: string;
  readonly type: ValueType<T>;
  /** The default, as the consumer applies it; `defaultText` when it is not one value. */
  readonly default?: NoInfer<T>;
  readonly defaultText?: string;
  /** The setting in words, in messages: "checkpoint interval must be ...". */
  readonly label: string;
  /** One line for help and docs. */
  readonly description: string;
  readonly commands: readonly CommandName[];
  /** Where docs list a run setting. */
  readonly section?: Section;
}

/** Identity, for inference: `option({ type: duration(), ... })` is an Option<Duration>. */
export function option<T>(o: Option<T>): Option<T> {
  return o;
}

/** What help and docs show as the default, if any. */
export function defaultShown(o: Option): string | undefined {
  if (o.defaultText !== undefined) return o.defaultText;
  return o.default === undefined ? undefined : o.type.show(o.default, 'cli');
}

/** As help lists it: "-p, --parallelism N", "--checkpoint-mode M", "--verbose". */
export function flagUsage(o: Option): string {
  if (o.flag === undefined) return '';
  const metavar = o.type.takesValue ? ` ${o.metavar ?? o.type.metavar}` : '';
  return `${o.short !== undefined ? `-${o.short}, ` : ''}--${o.flag}${metavar}`;
}

/** What follows a description in help: the choices of an enumeration and the default. */
export function hints(o: Option): string {
  const parts: string[] = [];
  const values = o.type.describe('cli').split(' | ');
  // An enumeration's values, unless the description already names each.
  if (values.length > 1 && !values.every((v) => o.description.includes(v))) parts.push(values.join(' | '));
  const d = defaultShown(o);
  if (d !== undefined) parts.push(`default ${d}`);
  return parts.length === 0 ? '' : ` (${parts.join('; ')})`;
}

/** The default of an option its consumer relies on; throws if the entry lost it (found at the consumer's first use). */
export function defaultOf<T>(o: Option<T>): T {
  if (o.default === undefined) throw new Error(`option "${o.label}" has no default`);
  return o.default;
}
