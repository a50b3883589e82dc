/**
 * The settings `weir run` passes to runJob: flags over the config file, each value placed by
 * its option's field. runJob then puts them over the job's own enableCheckpointing (field by
 * field) and setRestartStrategy (as a whole).
 */
import type { CheckpointSettings } from '../checkpoint/config.ts';
import type { RunOptions } from '../cluster/job-manager.ts';
import type { RestartStrategySettings } from '../cluster/restart-strategy.ts';
import { defaultOf } from '../core/options/option.ts';
import { OPTIONS } from '../core/options/registry.ts';
import { mergeTrees, settingsTree, type OptionValues } from '../core/options/values.ts';

type Mut<T> = { -readonly [K in keyof T]: T[K] };

/**
 * The settings tree of the registry's fields: runJob's options, except that restart settings
 * sit under `restart` (runJob's restartStrategy) and the REST port and address may be missing.
 */
export type RunSettings = Partial<Omit<RunOptions, 'checkpoint' | 'restartStrategy' | 'services'>> & {
  checkpoint?: Mut<CheckpointSettings>;
  restart?: Mut<RestartStrategySettings>;
  rest?: { port?: number; address?: string; tokenFile?: string };
};

export function settingsOf(values: OptionValues): RunSettings {
  return settingsTree(values) as RunSettings;
}

/** Flags (`over`) win over the config file, field by field. */
export function mergeSettings(file: RunSettings | undefined, flags: RunSettings): RunSettings {
  const merged = mergeTrees(file ?? {}, flags) as RunSettings;
  const r = merged.restart;
  // Attempts or a delay without a strategy mean fixed-delay (the only strategy with attempts),
  // rather than being ignored by the exponential-delay default.
  if (r !== undefined && r.type === undefined && (r.attempts !== undefined || r.delay !== undefined)) merged.restart = { ...r, type: 'fixed-delay' };
  return merged;
}

/** Where `weir run` serves the control API: 127.0.0.1:8081 unless told otherwise. */
export interface RestSettings {
  readonly port: number;
  readonly address: string;
  /** A busy default port falls back to a free one; a port asked for must be had. */
  readonly fallback: boolean;
  /** A file holding the token the API requires (--rest-token-file). */
  readonly tokenFile?: string;
}

/** runJob's options from the settings, and where the control API goes (the entry point serves it). */
export function runOptionsOf(s: RunSettings): { run: Mut<RunOptions>; rest: RestSettings } {
  const { restart, rest, checkpoint, ...direct } = s;
  const run: Mut<RunOptions> = { ...direct, checkpoint: checkpoint ?? {} };
  if (restart !== undefined) run.restartStrategy = restart;
  const restSettings: RestSettings = {
    port: rest?.port ?? defaultOf(OPTIONS.restPort), address: rest?.address ?? defaultOf(OPTIONS.restAddress), fallback: rest?.port === undefined,
    ...(rest?.tokenFile !== undefined ? { tokenFile: rest.tokenFile } : {}),
  };
  return { run, rest: restSettings };
}
