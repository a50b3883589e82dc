/**
 * StreamGraph: one node per physical operator, edges with their partitioning resolved.
 * Virtual transformations (union, partition, side output) dissolve into edge properties.
 * Operator ids come from uid() or from a hash of the operator's position in the job, so
 * every worker that builds the job computes the same ids.
 */
import { createHash } from 'node:crypto';
import { isAbsolute, relative } from 'node:path';
import { JobDefinitionError } from '../core/errors.ts';
import { defaultMaxParallelism } from '../state/key-groups.ts';
import type { PartitionSpec } from '../core/partitioning.ts';
import { isPhysical, sourcePosition, type PhysicalTransformation, type Transformation } from './transformation.ts';

export interface StreamEdge {
  readonly source: StreamNode;
  readonly target: StreamNode;
  /** 0 or 1: which logical input of the target. */
  readonly inputIndex: number;
  readonly partition: PartitionSpec;
  /** Set when the edge carries a side output of the source. */
  readonly sideTag: string | undefined;
}

export interface StreamNode {
  /** Stable operator id (hex). */
  readonly id: string;
  readonly transformation: PhysicalTransformation;
  readonly name: string;
  /** The user's uid(...) for the operator, if any: named in errors beside the name. */
  readonly uid: string | undefined;
  readonly parallelism: number;
  readonly maxParallelism: number;
  readonly inEdges: StreamEdge[];
  readonly outEdges: StreamEdge[];
}

export interface StreamGraph {
  readonly jobName: string;
  readonly nodes: StreamNode[];
  readonly chainingEnabled: boolean;
  readonly bufferTimeout: number;
  readonly objectReuse: boolean;
}

function hashId(text: string): string {
  return createHash('sha256').update(text).digest('hex').slice(0, 32);
}

interface ResolvedInput {
  node: PhysicalTransformation;
  partition: PartitionSpec | undefined;
  sideTag: string | undefined;
}

/** Follows virtual transformations back to the physical operators that feed `t`. */
function resolve(t: Transformation, partition: PartitionSpec | undefined, sideTag: string | undefined, out: ResolvedInput[]): void {
  switch (t.kind) {
    case 'union':
      for (const i of t.inputs) resolve(i, partition, sideTag, out);
      return;
    case 'partition':
      // The partitioning closest to the consumer wins, as in Flink.
      resolve(t.input, partition ?? t.partition, sideTag, out);
      return;
    case 'side-output':
      if (sideTag !== undefined) throw new JobDefinitionError('a side output of a side output is not a stream');
      resolve(t.input, partition, t.tagId, out);
      return;
    default:
      out.push({ node: t, partition, sideTag });
  }
}

/**
 * What the graph is built from: the transformations a job declared and its job-wide settings.
 * The API's StreamExecutionEnvironment is one; the graph layer knows nothing else of the API.
 */
export interface PipelineDeclaration {
  readonly transformations: readonly Transformation[];
  readonly jobName: string;
  readonly maxParallelism: number | undefined;
  readonly chainingEnabled: boolean;
  readonly bufferTimeout: number;
  readonly objectReuse: boolean;
  /** Keyed operators' max parallelism in the snapshot being restored, by operator id (see EnvironmentSettings). */
  readonly restoredMaxParallelism?: Readonly<Record<string, number>>;
  getParallelism(): number;
}

export function buildStreamGraph(env: PipelineDeclaration): StreamGraph {
  const physical = env.transformations.filter(isPhysical);
  if (physical.length === 0) throw new JobDefinitionError('the job defines no operators; add a source and a sink');
  const defaultP = env.getParallelism();
  const nodes = new Map<number, StreamNode>();
  const uids = new Map<string, string>();
  const seenIds = new Set<string>();

  for (const t of physical) {
    const inputs = inputsOf(t);
    const inputIds = inputs.map(({ node, sideTag }) => `${nodes.get(node.id)?.id ?? '?'}${sideTag ? '#' + sideTag : ''}`);
    let id: string;
    if (t.uid !== undefined) {
      const prev = uids.get(t.uid);
      if (prev !== undefined) throw new JobDefinitionError(`uid "${t.uid}" is used by two operators ("${prev}" and "${t.name}"); uids must be unique${at(t)}`);
      uids.set(t.uid, t.name);
      id = hashId(`uid:${t.uid}`);
    } else {
      const kind = t.kind === 'source' ? `source:${t.source.name}` : t.operatorKind;
      id = hashId(`auto:${t.id}:${kind}:${inputIds.join(',')}`);
    }
    if (seenIds.has(id)) throw new JobDefinitionError(`operator id collision for "${t.name}"`);
    seenIds.add(id);
    let p = t.parallelism ?? (t.kind === 'source' && t.source.maxReaders !== undefined ? Math.min(t.source.maxReaders, defaultP) : defaultP);
    if (t.kind === 'source' && t.source.maxReaders !== undefined && p > t.source.maxReaders) p = t.source.maxReaders;
    const restoredMaxP = env.restoredMaxParallelism?.[id];
    // Not set by the job: the restored state's number of key groups when it allows p (else the
    // default, and the restore refuses, naming both).
    const maxP = t.maxParallelism ?? env.maxParallelism ?? (restoredMaxP !== undefined && restoredMaxP >= p ? restoredMaxP : defaultMaxParallelism(p));
    if (p > maxP) {
      // Flink's JobException text: the number of key groups bounds how far an operator scales.
      throw new JobDefinitionError(`Vertex "${t.name}"'s parallelism (${p}) is higher than the max parallelism (${maxP}). Please lower the parallelism or increase the max parallelism (setMaxParallelism).${at(t)}`);
    }
    nodes.set(t.id, { id, transformation: t, name: t.name, uid: t.uid, parallelism: p, maxParallelism: maxP, inEdges: [], outEdges: [] });
  }

  for (const t of physical) {
    const target = nodes.get(t.id)!;
    inputsOf(t).forEach(({ node, partition, sideTag }, k) => {
      const source = nodes.get(node.id)!;
      const inputIndex = inputIndexOf(t, k);
      let p = partition;
      if (p === undefined) p = source.parallelism === target.parallelism ? { kind: 'forward' } : { kind: 'rebalance' };
      if (p.kind === 'forward' && source.parallelism !== target.parallelism) {
        throw new JobDefinitionError(
          `forward() from "${source.name}" (parallelism ${source.parallelism}) to "${target.name}" (parallelism ${target.parallelism}) needs equal parallelism; use rebalance() or rescale()${at(t)}`,
        );
      }
      const keyed = t.kind === 'one-input' ? t.keySelector !== undefined : t.kind === 'two-input' ? t.keySelectors[inputIndex] !== undefined : false;
      if (keyed && p.kind !== 'hash') {
        throw new JobDefinitionError(`operator "${t.name}" uses keyed state but its input is not partitioned by key; call keyBy(...) right before it${at(t)}`);
      }
      const edge: StreamEdge = { source, target, inputIndex, partition: p, sideTag };
      source.outEdges.push(edge);
      target.inEdges.push(edge);
    });
  }
  return { jobName: env.jobName, nodes: [...nodes.values()], chainingEnabled: env.chainingEnabled, bufferTimeout: env.bufferTimeout, objectReuse: env.objectReuse };
}

/** Physical inputs of a transformation, in input order; inputs of input 2 come after input 1's. */
const inputCounts = new WeakMap<PhysicalTransformation, number>();

function inputsOf(t: PhysicalTransformation): ResolvedInput[] {
  const out: ResolvedInput[] = [];
  if (t.kind === 'one-input') resolve(t.input, undefined, undefined, out);
  else if (t.kind === 'two-input') {
    resolve(t.input1, undefined, undefined, out);
    inputCounts.set(t, out.length);
    resolve(t.input2, undefined, undefined, out);
  }
  return out;
}

function inputIndexOf(t: PhysicalTransformation, k: number): number {
  if (t.kind !== 'two-input') return 0;
  return k < (inputCounts.get(t) ?? 0) ? 0 : 1;
}

/** Where the job declared an operator, for errors found while translating it: " (at job.ts:12:5)". */
function at(t: PhysicalTransformation): string {
  if (t.declaredAt === undefined) return '';
  const where = sourcePosition(t.declaredAt);
  const rel = relative(process.cwd(), where);
  return ` (at ${rel.startsWith('..') || isAbsolute(rel) ? where : rel})`;
}
