/**
 * Transformations: what the DataStream API records as the user builds a pipeline. Physical
 * ones become operators; virtual ones (union, partitioning, side output selection) only
 * shape the edges between them.
 */
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

/** The first frame of the stack outside weir itself and Node: where the user declared an operator. */
export function callerLocation(): string | undefined {
  const stack = new Error().stack?.split('\n').slice(1) ?? [];
  for (const line of stack) {
    const m = /\(?((?:file:\/\/)?[^()\s]+:\d+:\d+)\)?\s*$/.exec(line.trim());
    if (!m) continue;
    const frame = m[1]!;
    if (frame.startsWith('node:') || frame.startsWith(OWN_CODE) || frame.startsWith(OWN_CODE.replace(/^file:\/\//, ''))) continue;
    return frame.replace(/^file:\/\//, '');
  }
  return undefined;
}
