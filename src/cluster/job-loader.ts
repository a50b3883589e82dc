/**
 * Loads a job module and builds its job graph. Every worker does this for itself: user
 * functions are never serialized, operators are matched by id.
 */
import { existsSync, statSync } from 'node:fs';
import { relative, resolve, sep } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { StreamExecutionEnvironment } from '../api/environment.ts';
import { isJobDefinition, type JobDefinition } from '../api/job.ts';
import { buildJobGraph, type JobGraph } from '../graph/job-graph.ts';
import { JobDefinitionError, WeirError } from '../core/errors.ts';
import { typeScriptJobs } from './typescript-jobs.ts';
import { diagnoseJobModule } from './job-bundle.ts';

/** A job module that cannot be loaded: a job definition error, reported in one line. */
export class JobLoadError extends WeirError {
  constructor(message: string) {
    super('JOB_DEFINITION', message);
  }
}

/** `url`: what to import instead of the file (the job bundled for a worker: job-bundle.ts). */
export async function loadJobModule(path: string, url?: string): Promise<JobDefinition> {
  const abs = resolve(path);
  // A bundle holds the job's code: a restart still loads it when the file has been moved or
  // deleted since the start (a redeploy, a branch switch), which failed every restart before.
  if (url === undefined && !existsSync(abs)) throw new JobLoadError(`job file not found: ${path}`);
  if (url === undefined && !statSync(abs).isFile()) throw new JobLoadError(`job path is not a file: ${path}`);
  let mod: Record<string, unknown>;
  try {
    // A bundle's stacks point into the job's sources (its inline source map); a file may need tsx.
    if (url !== undefined) process.setSourceMapsEnabled(true);
    else await typeScriptJobs();
    mod = (await import(url ?? pathToFileURL(abs).href)) as Record<string, unknown>;
  } catch (e) {
    let why = e instanceof Error ? e.message : String(e);
    const bundling = await diagnoseJobModule(abs);
    if (bundling !== undefined) {
      // The bundler saw the fault itself (a syntax error, a missing import), with its place.
      why = bundling;
    } else if (/require\(\) ES Module|ERR_REQUIRE_(CYCLE_)?ESM/.test(why)) {
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

/**
 * Runs the job's builder. Whatever it throws is reported with the place in the job file where
 * it happened (the module's own line, found in the stack), so a user needs no --verbose to
 * find it; `modulePath` is the job file when the job came from one.
 */
export async function buildJob(def: JobDefinition, args: readonly string[], defaultParallelism: number, modulePath?: string, restoredMaxParallelism?: Readonly<Record<string, number>>): Promise<BuiltJob> {
  const env = new StreamExecutionEnvironment({ defaultParallelism, ...(restoredMaxParallelism !== undefined ? { restoredMaxParallelism } : {}) });
  try {
    await def.build(env, args);
  } catch (e) {
    if (e instanceof WeirError && !(e instanceof JobDefinitionError)) throw e;
    const where = e instanceof Error ? jobFrame(e.stack, modulePath) : undefined;
    const at = where === undefined ? '' : ` (at ${where})`;
    const message = e instanceof Error ? e.message : String(e);
    const api = e instanceof JobDefinitionError || e instanceof TypeError || e instanceof RangeError;
    const err = new JobDefinitionError(api ? `invalid job definition: ${message}${at}` : `building the job failed: ${message}${at}`);
    err.stack = e instanceof Error ? e.stack : undefined;
    throw err;
  }
  return { env, graph: buildJobGraph(env) };
}

/** weir's own source folder: frames in it are the API, not the job. */
const WEIR_SRC = resolve(fileURLToPath(new URL('..', import.meta.url)));

/**
 * The first stack frame in the job file (or, for a job defined inline, the first one outside
 * weir and Node), as path:line:column relative to the working directory when below it.
 */
export function jobFrame(stack: string | undefined, modulePath: string | undefined): string | undefined {
  const target = modulePath === undefined ? undefined : resolve(modulePath);
  for (const line of (stack ?? '').split('\n').slice(1)) {
    // The path may hold spaces ("my jobs/job.ts"): inside the parentheses, or after "at ".
    const m = /(?:\(|at )((?:file:\/\/)?[^()]+?):(\d+):(\d+)\)?\s*$/.exec(line.trim());
    if (!m) continue;
    let file = m[1]!;
    if (file.startsWith('file://')) {
      try {
        file = fileURLToPath(file);
      } catch {
        continue;
      }
    }
    if (file.startsWith('node:') || file.includes(`${sep}node_modules${sep}`)) continue;
    const abs = resolve(file);
    if (target !== undefined ? abs !== target : abs.startsWith(WEIR_SRC + sep)) continue;
    const rel = relative(process.cwd(), abs);
    return `${rel.startsWith('..') ? abs : rel}:${m[2]}:${m[3]}`;
  }
  return undefined;
}
