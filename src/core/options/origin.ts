/** Where a value came from, and a refused value's message worded for that place. */
import type { Option } from './option.ts';
import { redactUserinfo } from './text.ts';
import type { Dialect, Problem } from './value-type.ts';

export type Origin =
  /** A command-line flag, as typed ("--checkpoint-interval", "-p"), and its text. */
  | { readonly kind: 'flag'; readonly flag: string; readonly text: string }
  /** A key of a --config file. */
  | { readonly kind: 'file'; readonly path: string; readonly key: string }
  /** Job code or runJob options; `where` names them ("job code (enableCheckpointing)"). */
  | { readonly kind: 'code'; readonly where: string };

export function dialectOf(origin: Origin): Dialect {
  return origin.kind === 'file' ? 'flink' : 'cli';
}

/**
 * One line naming the option and its origin:
 *   --checkpoint-max-concurrent expects an integer >= 1, got "0"
 *   /etc/weir.json: "execution.checkpointing.mode": checkpoint mode must be EXACTLY_ONCE or AT_LEAST_ONCE, got "x"
 *   job code (enableCheckpointing): checkpoint interval must be a duration of at least 10 ms, got 5 ms
 */
export function refusal(o: Option, origin: Origin, p: Problem): string {
  if (origin.kind === 'flag') {
    return 'reason' in p ? `${origin.flag}: ${p.reason}` : `${origin.flag} expects ${p.expected}, got ${JSON.stringify(redactUserinfo(origin.text))}`;
  }
  const subject = origin.kind === 'file' ? `${origin.path}: "${origin.key}": ${o.label}` : `${origin.where}: ${o.label}`;
  return 'reason' in p ? `${subject}: ${p.reason}` : `${subject} must be ${p.expected}, got ${p.got}`;
}
