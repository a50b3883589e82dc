/**
 * A job module's default export: defineJob((env, args) => { ...build the pipeline... }).
 * Every worker imports the same module and runs the same builder, so building must be
 * deterministic: same operators, in the same order, with the same settings.
 */
import type { StreamExecutionEnvironment } from './environment.ts';

const JOB_MARK = Symbol.for('weir.job');

export type JobBuilder = (env: StreamExecutionEnvironment, args: readonly string[]) => void | Promise<void>;

export interface JobDefinition {
  readonly [JOB_MARK]: true;
  readonly build: JobBuilder;
}

export function defineJob(build: JobBuilder): JobDefinition {
  if (typeof build !== 'function') throw new TypeError('defineJob needs a function (env, args) => { ... }');
  return { [JOB_MARK]: true, build };
}

export function isJobDefinition(x: unknown): x is JobDefinition {
  return typeof x === 'object' && x !== null && (x as Record<symbol, unknown>)[JOB_MARK] === true && typeof (x as JobDefinition).build === 'function';
}
