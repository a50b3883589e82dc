/**
 * Transformations: what the DataStream API records as the user builds a pipeline. Physical
 * ones become operators; virtual ones (union, partitioning, side output selection) only
 * shape the edges between them.
 */
import { findSourceMap } from 'node:module';
import { fileURLToPath } from 'node:url';
import type { Source, SourceSplit } from '../core/source.ts';
import type { TwoPhaseCommitSink } from '../core/sink.ts';
import type { KeySelectorFn, PartitionSpec } from '../core/partitioning.ts';
import type { StreamOperator } from '../runtime/operators/operator.ts';
import type { MalformedPolicy, SourceWatermarkSettings } from '../runtime/operators/source.ts';

export type ChainingStrategy = 'always' | 'head' | 'never';

export type OperatorFactory = () => StreamOperator;

interface Common {
  readonly id: number;
  name: string;
  uid: string | undefined;
  parallelism: number | undefined;
  maxParallelism: number | undefined;
  chaining: ChainingStrategy;
  /** Where in the job module the operator was declared, for error messages. */
  readonly declaredAt: string | undefined;
}

export interface SourceTransformation extends Common {
  readonly kind: 'source';
  readonly source: Source<unknown, SourceSplit>;
  readonly malformedPolicy: MalformedPolicy;
  /** Records per second over all subtasks of the source (Flink's RateLimiterStrategy), or undefined. */
  readonly ratePerSecond: number | undefined;
  /** Event time kept per split by the source (fromSource's `watermarks`), or undefined. */
  readonly watermarks?: SourceWatermarkSettings | undefined;
}

export interface OneInputTransformation extends Common {
  readonly kind: 'one-input';
  readonly input: Transformation;
  readonly factory: OperatorFactory;
  /** Set when the operator runs on a keyed stream. */
  readonly keySelector: KeySelectorFn | undefined;
  readonly isSink: boolean;
  readonly operatorKind: string;
  /**
   * A check the job manager runs once before the job's first attempt (not in workers, not on
   * restarts): a sink refusing to overwrite earlier output, say. It throws to refuse the start.
   */
  preflight?: (() => void) | undefined;
  /** A sink writing files: the directory they go to (the job's dead letters go beside it). */
  outputDir?: string | undefined;
  /** A window over the whole stream (windowAll): parallelism 1, which setParallelism may not change. */
  nonParallel?: boolean;
  /** The two-phase-commit sink of a sinkTo() operator: the job manager asks it what it committed last. */
  readonly commitSink?: TwoPhaseCommitSink<unknown, unknown>;
}

export interface TwoInputTransformation extends Common {
  readonly kind: 'two-input';
  readonly input1: Transformation;
  readonly input2: Transformation;
  readonly factory: OperatorFactory;
  readonly keySelectors: readonly [KeySelectorFn | undefined, KeySelectorFn | undefined];
  readonly operatorKind: string;
}

export interface UnionTransformation extends Common {
  readonly kind: 'union';
  readonly inputs: readonly Transformation[];
}

export interface PartitionTransformation extends Common {
  readonly kind: 'partition';
  readonly input: Transformation;
  readonly partition: PartitionSpec;
}

export interface SideOutputTransformation extends Common {
  readonly kind: 'side-output';
  readonly input: Transformation;
  readonly tagId: string;
}

export type Transformation =
  | SourceTransformation
  | OneInputTransformation
  | TwoInputTransformation
  | UnionTransformation
  | PartitionTransformation
  | SideOutputTransformation;

export type PhysicalTransformation = SourceTransformation | OneInputTransformation | TwoInputTransformation;

export function isPhysical(t: Transformation): t is PhysicalTransformation {
  return t.kind === 'source' || t.kind === 'one-input' || t.kind === 'two-input';
}

/**
 * weir's own code, as a file URL prefix: src/ in a checkout, dist/ when built (the bundle keeps
 * each module's own import.meta.url, scripts/build.ts), so the API's frames are skipped wherever
 * weir runs from; a chunk of dist/ sits at its top, beside the folders.
 */
const OWN_CODE = new URL('..', import.meta.url).href;

/**
 * The first frame of the stack outside weir itself and Node: where the user declared an
 * operator, as `path:line:column` of the code that ran (in a bundled job, the bundle's
 * position: `sourcePosition` maps it to the job's source when a message shows it).
 *
 * Why not `new Error().stack`: with source maps on (every bundled job), Node maps each frame as
 * it formats a stack, and the first time parses the bundle's whole map, ~4 ms in every thread
 * that builds the job, for a location read only when a job is rejected. The raw call sites
 * cost nothing of that. A test runner or source-map-support that installed its own
 * Error.prepareStackTrace rewrites positions its own way, which findSourceMap cannot repeat:
 * then the formatted stack is read, as before.
 */
export function callerLocation(): string | undefined {
  const formatter = Error.prepareStackTrace;
  if (formatter !== undefined && formatter.name !== NODE_FORMATTER) return locationFromFormattedStack();
  let sites: NodeJS.CallSite[] = [];
  Error.prepareStackTrace = (_e, callSites) => callSites;
  try {
    sites = new Error().stack as unknown as NodeJS.CallSite[];
  } finally {
    if (formatter === undefined) Reflect.deleteProperty(Error, 'prepareStackTrace');
    else Error.prepareStackTrace = formatter;
  }
  for (const site of sites) {
    const file = site.getFileName() ?? site.getScriptNameOrSourceURL();
    const line = site.getLineNumber();
    const column = site.getColumnNumber();
    if (!file || line === null || column === null || isOwnOrNode(file)) continue;
    return `${file}:${line}:${column}`;
  }
  return undefined;
}

/** The name of Node's own Error.prepareStackTrace (Node 20 exposes it; older versions have none). */
const NODE_FORMATTER = 'ErrorPrepareStackTrace';

function isOwnOrNode(file: string): boolean {
  return file.startsWith('node:') || file.startsWith(OWN_CODE) || file.startsWith(OWN_CODE.replace(/^file:\/\//, ''));
}

function locationFromFormattedStack(): string | undefined {
  const stack = new Error().stack?.split('\n').slice(1) ?? [];
  for (const line of stack) {
    const m = /\(?((?:file:\/\/)?[^()\s]+:\d+:\d+)\)?\s*$/.exec(line.trim());
    if (!m) continue;
    const frame = m[1]!;
    if (isOwnOrNode(frame)) continue;
    return frame.replace(/^file:\/\//, '');
  }
  return undefined;
}

/**
 * A `callerLocation` as the user wrote it: through the module's source map when Node has one
 * (a bundled job, or a TypeScript file loaded with source maps on), as a path with 1-based line
 * and column; otherwise the location unchanged.
 */
export function sourcePosition(location: string): string {
  const m = /^(.*):(\d+):(\d+)$/.exec(location);
  if (m === null) return location;
  const [, file, line, column] = m as unknown as [string, string, string, string];
  const entry = findSourceMap(file)?.findEntry(Number(line) - 1, Number(column) - 1) as
    | { originalSource?: string; originalLine?: number; originalColumn?: number }
    | undefined;
  const source = entry?.originalSource;
  if (source === undefined || entry?.originalLine === undefined || entry.originalColumn === undefined) return `${asPath(file)}:${line}:${column}`;
  return `${asPath(source)}:${entry.originalLine + 1}:${entry.originalColumn + 1}`;
}

function asPath(urlOrPath: string): string {
  if (!urlOrPath.startsWith('file://')) return urlOrPath;
  try {
    return fileURLToPath(urlOrPath);
  } catch {
    return urlOrPath.slice('file://'.length);
  }
}
