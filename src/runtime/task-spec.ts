/**
 * What a task needs to know of the chain of operators it runs. The graph layer (above) builds
 * job vertices that satisfy these shapes; the runtime depends on nothing of the graph itself.
 */
import type { KeySelectorFn } from '../core/partitioning.ts';
import type { Source, SourceSplit } from '../core/source.ts';
import type { StreamOperator } from './operators/operator.ts';
import type { MalformedPolicy, SourceWatermarkSettings } from './operators/source.ts';

/** How to make an operator instance for one subtask. */
export type OperatorRecipe =
  | {
    readonly kind: 'source';
    readonly source: Source<unknown, SourceSplit>;
    readonly malformedPolicy: MalformedPolicy;
    /** Records per second over all subtasks, or undefined. */
    readonly ratePerSecond: number | undefined;
    /** Event time kept per split inside the source, or undefined. */
    readonly watermarks?: SourceWatermarkSettings | undefined;
  }
  | { readonly kind: 'one-input'; readonly factory: () => StreamOperator; readonly keySelector: KeySelectorFn | undefined }
  | {
    readonly kind: 'two-input';
    readonly factory: () => StreamOperator;
    readonly keySelectors: readonly [KeySelectorFn | undefined, KeySelectorFn | undefined];
  };

export interface OperatorNodeSpec {
  readonly id: string;
  readonly name: string;
  readonly uid: string | undefined;
  readonly parallelism: number;
  readonly maxParallelism: number;
  readonly transformation: OperatorRecipe;
}

export interface ChainedOperatorSpec {
  readonly node: OperatorNodeSpec;
  /** Chained successors (index in the chain) with the side tag they read (undefined = main output). */
  readonly chainedOutputs: readonly { readonly target: number; readonly sideTag: string | undefined }[];
  /** Network edges leaving this operator, by edge index. */
  readonly networkOutputs: readonly { readonly index: number; readonly sideTag: string | undefined }[];
}

/** A chain of operators run by one task: the head first, parents before children. */
export interface TaskChain {
  readonly name: string;
  readonly parallelism: number;
  readonly operators: readonly ChainedOperatorSpec[];
}
