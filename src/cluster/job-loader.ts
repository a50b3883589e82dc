/**
 * Loads a job module and builds its job graph. Every worker does this for itself: user
 * functions are never serialized, operators are matched by id.
 */
import { existsSync, statSync } from 'node:fs';
import { resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { StreamExecutionEnvironment } from '../api/environment.ts';
import { isJobDefinition, type JobDefinition } from '../api/job.ts';
import { buildJobGraph, type JobGraph } from '../graph/job-graph.ts';
import { JobDefinitionError, WeirError } from '../core/errors.ts';

/** A job module that cannot be loaded: a job definition error, reported in one line. */
export class JobLoadError extends WeirError {
  constructor(message: string) {
    super('JOB_DEFINITION', message);
  }
}

export async function loadJobModule(path: string): Promise<JobDefinition> {
  const abs = resolve(path);
  if (!existsSync(abs)) throw new JobLoadError(`job file not found: ${path}`);
  if (!statSync(abs).isFile()) throw new JobLoadError(`job path is not a file: ${path}`);
  let mod: Record<string, unknown>;
  try {
    mod = (await import(pathToFileURL(abs).href)) as Record<string, unknown>;
  } catch (e) {
    let why = e instanceof Error ? e.message : String(e);
    if (/require\(\) ES Module|ERR_REQUIRE_(CYCLE_)?ESM/.test(why)) {
      why = 'it was loaded as CommonJS; name it .mts, or put it in a package whose package.json has "type": "module"';
    }
    const err = new JobLoadError(`cannot load job module ${path}: ${why}`);
    err.stack = e instanceof Error ? e.stack : undefined;
    throw err;
  }
  const def = mod.default;
  if (def === undefined) throw new JobLoadError(`${path} has no default export; export default defineJob((env, args) => { ... })`);
  if (!isJobDefinition(def)) throw new JobLoadError(`the default export of ${path} is not a job; wrap the builder: export default defineJob((env, args) => { ... })`);
  return def;
}

export interface BuiltJob {
  readonly env: StreamExecutionEnvironment;
  readonly graph: JobGraph;
}

export async function buildJob(def: JobDefinition, args: readonly string[], defaultParallelism: number): Promise<BuiltJob> {
  const env = new StreamExecutionEnvironment({ defaultParallelism });
  try {
    await def.build(env, args);
  } catch (e) {
    if (e instanceof JobDefinitionError || e instanceof TypeError || e instanceof RangeError) {
      const err = new JobDefinitionError(`invalid job definition: ${e.message}`);
      err.stack = e.stack;
      throw err;
    }
    throw e;
  }
  return { env, graph: buildJobGraph(env) };
}
