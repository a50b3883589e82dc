/**
 * JobGraph: operators chained into vertices. An operator joins its predecessor's chain when
 * the edge is a forward edge between equal parallelisms, it has that single input, and
 * neither side forbids chaining. A chain is a tree rooted at its head: an operator may feed
 * several chained successors and several network edges.
 */
import type { PartitionSpec } from '../core/partitioning.ts';
import { buildStreamGraph, type PipelineDeclaration, type StreamEdge, type StreamGraph, type StreamNode } from './stream-graph.ts';

export interface ChainedOperator {
  readonly node: StreamNode;
  /** Index in the vertex's operator list (topological: parents before children). */
  readonly index: number;
  /** Chained successors with the side tag they read (undefined = main output). */
  readonly chainedOutputs: { readonly target: number; readonly sideTag: string | undefined }[];
  /** Network edges leaving this operator. */
  readonly networkOutputs: JobEdge[];
}

export interface JobVertex {
  readonly index: number;
  /** Id of the head operator. */
  readonly id: string;
  readonly name: string;
  readonly operators: ChainedOperator[];
  readonly parallelism: number;
  readonly maxParallelism: number;
  readonly inputs: JobEdge[];
  readonly isSource: boolean;
}

export interface JobEdge {
  readonly index: number;
  readonly source: JobVertex;
  /** Operator index inside the source vertex that produces this edge. */
  readonly sourceOperator: number;
  readonly target: JobVertex;
  readonly inputIndex: number;
  readonly partition: PartitionSpec;
  readonly sideTag: string | undefined;
  /** Max parallelism of the target, which hash partitioning uses for key groups. */
  readonly targetMaxParallelism: number;
}

export interface JobGraph {
  readonly jobName: string;
  readonly vertices: JobVertex[];
  readonly edges: JobEdge[];
  readonly bufferTimeout: number;
  readonly objectReuse: boolean;
  /** Digest of the graph's shape; workers check they built the same graph. */
  readonly fingerprint: string;
}

function chainable(e: StreamEdge, graph: StreamGraph): boolean {
  if (!graph.chainingEnabled) return false;
  const up = e.source;
  const down = e.target;
  return (
    down.inEdges.length === 1 &&
    e.partition.kind === 'forward' &&
    up.parallelism === down.parallelism &&
    down.transformation.chaining === 'always' &&
    up.transformation.chaining !== 'never' &&
    down.transformation.kind === 'one-input'
  );
}

export function buildJobGraph(env: PipelineDeclaration): JobGraph {
  return translate(buildStreamGraph(env));
}

export function translate(graph: StreamGraph): JobGraph {
  const vertexOf = new Map<StreamNode, { vertex: JobVertex; op: ChainedOperator }>();
  const vertices: JobVertex[] = [];
  const pendingEdges: { edge: StreamEdge; from: ChainedOperator; fromVertex: JobVertex }[] = [];

  const heads = graph.nodes.filter((n) => !(n.inEdges.length === 1 && chainable(n.inEdges[0]!, graph)));
  for (const head of heads) {
    const vertex: JobVertex = {
      index: vertices.length,
      id: head.id,
      name: '',
      operators: [],
      parallelism: head.parallelism,
      maxParallelism: head.maxParallelism,
      inputs: [],
      isSource: head.transformation.kind === 'source',
    };
    vertices.push(vertex);
    const visit = (node: StreamNode): number => {
      const op: ChainedOperator = { node, index: vertex.operators.length, chainedOutputs: [], networkOutputs: [] };
      vertex.operators.push(op);
      vertexOf.set(node, { vertex, op });
      for (const e of node.outEdges) {
        if (chainable(e, graph)) op.chainedOutputs.push({ target: visit(e.target), sideTag: e.sideTag });
        else pendingEdges.push({ edge: e, from: op, fromVertex: vertex });
      }
      return op.index;
    };
    visit(head);
    (vertex as { name: string }).name = vertex.operators.map((o) => o.node.name).join(' -> ');
  }

  const edges: JobEdge[] = [];
  for (const { edge, from, fromVertex } of pendingEdges) {
    const target = vertexOf.get(edge.target)!.vertex;
    const je: JobEdge = {
      index: edges.length,
      source: fromVertex,
      sourceOperator: from.index,
      target,
      inputIndex: edge.inputIndex,
      partition: edge.partition,
      sideTag: edge.sideTag,
      targetMaxParallelism: edge.target.maxParallelism,
    };
    edges.push(je);
    from.networkOutputs.push(je);
    target.inputs.push(je);
  }

  const shape = vertices.map((v) => ({
    ops: v.operators.map((o) => [o.node.id, o.node.parallelism, o.node.maxParallelism, o.chainedOutputs.map((c) => [c.target, c.sideTag ?? ''])]),
    in: v.inputs.map((e) => [e.source.index, e.sourceOperator, e.inputIndex, e.partition.kind, e.sideTag ?? '']),
  }));
  const fingerprint = JSON.stringify(shape);
  return { jobName: graph.jobName, vertices, edges, bufferTimeout: graph.bufferTimeout, objectReuse: graph.objectReuse, fingerprint };
}

/**
 * Which producer subtasks feed which consumer subtasks on an edge. All-to-all for hash,
 * rebalance, broadcast and global; index-to-index for forward; pointwise for rescale.
 */
export function consumersOf(kind: PartitionSpec['kind'], producer: number, producers: number, consumers: number): number[] {
  switch (kind) {
    case 'forward':
      return [producer];
    case 'global':
      return [0];
    case 'rescale': {
      if (producers >= consumers) return [Math.floor((producer * consumers) / producers)];
      const start = Math.ceil((producer * consumers) / producers);
      const end = Math.ceil(((producer + 1) * consumers) / producers);
      return Array.from({ length: end - start }, (_, i) => start + i);
    }
    default:
      return Array.from({ length: consumers }, (_, i) => i);
  }
}
