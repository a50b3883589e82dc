/**
 * Turns a completed checkpoint (or savepoint) into what each subtask of the job as it is now
 * starts from. This is where rescaling happens:
 * - keyed state: every old state file whose key-group range overlaps a new subtask's range
 *   is given to it; the subtask reads only its own key groups;
 * - operator list state: split state is concatenated and cut into contiguous parts, union
 *   state goes whole to everyone; broadcast state: new subtask i gets old subtask (i mod old
 *   parallelism)'s copy;
 * - source splits (with positions) are reassigned split k to subtask k mod p;
 * - sink committables are committed again by exactly one subtask: those subtask k's writer
 *   prepared, all of them and in order, by subtask k mod p.
 * Operators are matched by id (uid or position); state of an operator that no longer exists
 * fails the restore unless explicitly allowed.
 */
import { decodeValue } from '../core/codec.ts';
import type { CheckpointMetadata, OperatorStateMeta } from './metadata.ts';
import { sharedStateReference, stateFileReference } from './names.ts';
import { broadcastSerializerKey, listSerializerKey, type ChannelStateRestore, type InlineOperatorState, type SerializerRecord, type TaskRestore, type KeyGroupRange } from '../core/checkpoint-format.ts';
import { taskId, type TaskId } from '../core/task-id.ts';
import { WeirError } from '../core/errors.ts';
import { sinkIdentityChanged } from '../core/sink.ts';

export class RestoreError extends WeirError {
  constructor(message: string) {
    super('RESTORE', message);
  }
}

export interface RestorePlan {
  readonly tasks: Record<TaskId, TaskRestore>;
  /** Source splits per "vertex:subtask" (replaces the fresh split plan). */
  readonly splits: Record<TaskId, unknown[]>;
  /** Operator ids in the snapshot that the job does not have (ignored when allowed). */
  readonly unmatched: string[];
}

/** A list's serializer records over the old subtasks: per old subtask, and of those that held items. */
interface ListSerializers {
  readonly bySubtask: Map<number, SerializerRecord | undefined>;
  readonly withItems: { readonly subtask: number; readonly rec: SerializerRecord | undefined }[];
}

/**
 * The serializer of a list whose items of several old subtasks go to one new subtask (a
 * union list, a split list rescaled): it decodes them all, so they must record the same one.
 * They differ when an old subtask held the list restored from a snapshot of another serializer
 * version and never claimed it before this snapshot (a job claims its lists in open(), so
 * rarely): refused, saying what to do, rather than decoding some items with the wrong version.
 */
function listSerializer(name: string, ls: ListSerializers, operator: string, dir: string): SerializerRecord | undefined {
  const [first, ...rest] = ls.withItems;
  if (first === undefined) return ls.bySubtask.values().next().value;
  const same = (a: SerializerRecord | undefined, b: SerializerRecord | undefined) => a?.name === b?.name && a?.version === b?.version;
  const form = (r: SerializerRecord | undefined) => (r === undefined ? 'no serializer (raw values)' : `serializer "${r.name}" v${r.version}`);
  const other = rest.find((x) => !same(x.rec, first.rec));
  if (other !== undefined) {
    throw new RestoreError(
      `${dir}: operator "${operator}": list state "${name}" is recorded with ${form(first.rec)} by subtask ${first.subtask} and with ${form(other.rec)} by subtask ${other.subtask} (a subtask did not claim the state between a restore that changed its serializer and this snapshot); ` +
        'restore at the parallelism the snapshot was taken with, let every subtask claim the state, take a new savepoint, and restore from that',
    );
  }
  return first.rec;
}

function decodeInline(b64: string, where: string): InlineOperatorState {
  try {
    return decodeValue<InlineOperatorState>(Buffer.from(b64, 'base64'));
  } catch (e) {
    throw new RestoreError(`${where}: its inline state cannot be decoded (${(e as Error).message}; corrupt metadata)`);
  }
}

/**
 * The event time each new subtask of a keyed operator restarts from. With aligned barriers the
 * old subtasks recorded the same watermark (every subtask saw the same watermarks before the
 * barrier on every channel). An unaligned checkpoint snapshots each subtask as its first barrier
 * arrives, so they can differ; then a subtask must restart at its own: lower, a record it had
 * dropped as late would open and fire a purged window again (output twice); higher, records
 * still due would be dropped. At the same parallelism each new subtask is its old self and gets
 * its own. Rescaled, a new subtask's key groups come from old subtasks at different event times,
 * and no single watermark is right for all of them: refused, unless the user accepts duplicate
 * output (then the minimum, Flink's choice). A subtask that recorded none (it had seen no
 * event time yet, or a snapshot from before the field existed) restarts with none; rescaled,
 * every subtask does then.
 */
function restoredWatermarks(old: OperatorStateMeta, dir: string, parallelism: number, allowDuplicateOutput: boolean): (subtask: number) => number | undefined {
  const bySubtask = new Map<number, number>();
  for (const s of old.subtasks) {
    const w: unknown = s.watermark;
    if (w === undefined) continue;
    if (typeof w !== 'number' || !Number.isFinite(w)) {
      throw new RestoreError(`${dir}: operator "${old.name}" subtask ${s.subtask} records watermark ${JSON.stringify(w)}, not a finite number (corrupt metadata)`);
    }
    bySubtask.set(s.subtask, w);
  }
  if (bySubtask.size !== old.parallelism) {
    // Some subtask recorded none. At the same parallelism the others still restart at their
    // own (before, one without made every subtask restart with none: a subtask past a window
    // would fire it again, or accept records it had dropped as late); rescaled, none.
    if (parallelism === old.parallelism) return (subtask) => bySubtask.get(subtask);
    return () => undefined;
  }
  const all = [...bySubtask.values()];
  const min = Math.min(...all);
  const max = Math.max(...all);
  if (min === max) return () => min;
  if (parallelism === old.parallelism) return (subtask) => bySubtask.get(subtask);
  if (allowDuplicateOutput) return () => min;
  throw new RestoreError(
    `operator "${old.name}" was snapshotted with its ${old.parallelism} subtasks at different event times (watermarks ${min} to ${max}; an unaligned checkpoint), and restoring it at parallelism ${parallelism} could fire a window twice or drop records: ` +
      `restore it at parallelism ${old.parallelism} and take a savepoint (always aligned) to rescale from, or pass --allow-duplicate-output to restart every subtask at the lowest`,
  );
}

/**
 * The channel state (unaligned checkpoints) subtask `index` of `p` replays: at the same
 * parallelism its own old subtask's; rescaled, a keyed head or one fed by a keyBy reads every old
 * subtask's (it keeps the records of its own key groups) and any other head the old subtasks k with k mod p = index.
 * Each old file is `primary` (its output and non-keyed input state replayed) at exactly one
 * new subtask, so nothing is replayed twice.
 */
function channelStateFor(head: OperatorStateMeta, hashFed: boolean, index: number, p: number, dir: string): ChannelStateRestore | undefined {
  const withState = head.subtasks.filter((s) => s.channelState !== undefined);
  if (withState.length === 0) return undefined;
  const rescaled = head.parallelism !== p;
  const chosen = withState.filter((s) => (!rescaled ? s.subtask === index : head.keyed || hashFed || s.subtask % p === index));
  if (chosen.length === 0) return undefined;
  const files = chosen.map((s) => {
    const c = s.channelState!;
    return { path: stateFileReference(dir, c.file), size: c.fileSize, ...(c.fileInline !== undefined ? { inline: c.fileInline } : {}), primary: s.subtask % p === index };
  });
  return { files, rescaled };
}

/**
 * A sink whose identity (its jobId) changed since the snapshot would not recognise its own
 * progress records and prepared work: the restored committables would be committed again
 * under the new identity, duplicating output. Refused; subtasks that recorded none (an older
 * snapshot, a sink without one) are not checked.
 */
function checkSinkIdentity(node: { readonly name: string; readonly transformation: { readonly commitSink?: { identity?(): string } } }, inlines: readonly (InlineOperatorState | undefined)[], dir: string): void {
  const now = node.transformation.commitSink?.identity?.();
  for (const i of inlines) {
    const was: unknown = i?.sinkIdentity;
    if (was === undefined) continue;
    if (typeof was !== 'string') throw new RestoreError(`${dir}: sink "${node.name}" records identity ${JSON.stringify(was)}, not a string (corrupt metadata)`);
    if (now !== undefined && was !== now) {
      throw new RestoreError(sinkIdentityChanged(node.name, was, now));
    }
  }
}

function overlaps(a: { start: number; end: number }, b: { start: number; end: number }): boolean {
  return a.start <= b.end && b.start <= a.end;
}

/**
 * The job as it is now, as far as redistribution cares: vertices with their chained operators,
 * and the subtasks with their key-group ranges. The graph layer's JobGraph and ExecutionPlan
 * are these (this layer knows nothing else of them).
 */
export interface RestoreTargetGraph {
  readonly vertices: readonly {
    readonly index: number;
    readonly parallelism: number;
    readonly operators: readonly {
      readonly node: {
        readonly id: string;
        readonly name: string;
        readonly maxParallelism: number;
        readonly transformation: { readonly kind: string; readonly commitSink?: { identity?(): string }; readonly keySelector?: unknown; readonly keySelectors?: readonly unknown[] };
      };
    }[];
  }[];
  readonly edges: readonly ChannelEdgeShape[];
}

/** The edges of a job, as channelEdgesOf reads them (the graph layer's JobEdge is one). */
export interface ChannelEdgeShape {
  readonly source: { readonly operators: readonly { readonly node: { readonly id: string } }[] };
  /** Operator index inside the source vertex that produces the edge. */
  readonly sourceOperator: number;
  readonly target: { readonly operators: readonly { readonly node: { readonly id: string } }[] };
  readonly inputIndex: number;
  readonly sideTag: string | undefined;
  /** How the edge partitions ('hash' for keyBy). */
  readonly partition: { readonly kind: string };
}

/**
 * Each edge, by index, as "<producing operator id>><target chain head id>:<input>[:<side tag>]".
 * Parallelism and partitioning are left out: in-flight data is re-partitioned at a rescale.
 */
export function channelEdgesOf(edges: readonly ChannelEdgeShape[]): string[] {
  return edges.map((e) => `${e.source.operators[e.sourceOperator]!.node.id}>${e.target.operators[0]!.node.id}:${e.inputIndex}${e.sideTag !== undefined ? `:${e.sideTag}` : ''}`);
}

/**
 * In-flight data of an unaligned checkpoint is kept per task: the head operator's input
 * channels, the task's output per edge index. It can be replayed only into tasks whose chains
 * and edges are what they were. A parallelism change can change chaining (equal parallelism
 * chains by default, a different one does not) and with it the edge numbering: the in-flight
 * data of an operator no longer heading a chain was dropped, and output replayed into another
 * edge skipped or repeated operators. Refused, with the way out.
 */
function checkChannelTopology(m: CheckpointMetadata, dir: string, graph: RestoreTargetGraph): void {
  const withData = m.operators.filter((o) => o.subtasks.some((s) => s.channelState !== undefined));
  if (withData.length === 0) return;
  const wayOut = `restore it at the parallelism it was taken at, or restore from an aligned checkpoint or a savepoint (always aligned)`;
  const heads = new Set(graph.vertices.map((v) => v.operators[0]?.node.id));
  for (const o of withData) {
    if (!heads.has(o.id)) {
      throw new RestoreError(`${dir}: operator "${o.name}" has in-flight data (an unaligned checkpoint), and in this job it no longer begins a chain of operators (a parallelism change changed chaining); ${wayOut}`);
    }
  }
  const was = m.channelEdges;
  if (was === undefined) return; // written before edges were recorded: the heads are all that can be checked
  if (!Array.isArray(was) || was.some((e) => typeof e !== 'string')) throw new RestoreError(`${dir}: channelEdges is not a list of edges (corrupt metadata)`);
  const now = channelEdgesOf(graph.edges);
  for (let i = 0; i < Math.max(was.length, now.length); i++) {
    if (was[i] !== now[i]) {
      throw new RestoreError(`${dir}: the job's edges changed since this unaligned checkpoint (edge ${i} was ${was[i] ?? 'absent'}, is ${now[i] ?? 'absent'}), so its in-flight data cannot be replayed; ${wayOut}`);
    }
  }
}

/**
 * Keyed state (or timers) of an operator whose uid now names one without a keyBy has nowhere to
 * go: refused before the job starts. Found only by the task, it failed every restart from the
 * same snapshot, the job restarting for ever.
 */
function checkStillKeyed(node: RestoreTargetGraph['vertices'][number]['operators'][number]['node'], old: OperatorStateMeta, dir: string): void {
  const t = node.transformation;
  const keyedNow = t.keySelector !== undefined || (t.keySelectors?.some((k) => k !== undefined) ?? false);
  if (keyedNow || !old.subtasks.some((s) => s.file !== undefined || s.fileInline !== undefined || (s.chain !== undefined && s.chain.length > 0))) return;
  throw new RestoreError(`${dir}: operator "${node.name}" has keyed state in the snapshot but is not keyed now (no keyBy before it); give the new operator another uid(), and pass --allow-non-restored-state to drop that state`);
}

export interface RestoreTargetPlan {
  readonly subtasks: readonly { readonly vertex: number; readonly index: number; readonly keyGroupRange: KeyGroupRange }[];
}

export function planRestore(m: CheckpointMetadata, dir: string, graph: RestoreTargetGraph, plan: RestoreTargetPlan, allowNonRestoredState: boolean, allowDuplicateOutput = false): RestorePlan {
  type Entry = { inline?: InlineOperatorState; keyedFiles?: { path: string; size: number; inline?: string; chain?: true }[]; referencedCommittables?: unknown[]; watermark?: number };
  const tasks: Record<string, { checkpointId: number; operators: Record<string, Entry>; channelState?: ChannelStateRestore }> = {};
  const splits: Record<TaskId, unknown[]> = {};
  const byId = new Map(m.operators.map((o) => [o.id, o]));
  const seen = new Set<string>();
  checkChannelTopology(m, dir, graph);

  for (const v of graph.vertices) {
    const subtasks = plan.subtasks.filter((s) => s.vertex === v.index);
    const head = v.operators[0] === undefined ? undefined : byId.get(v.operators[0].node.id);
    if (head !== undefined) {
      // A keyBy into the chain (keyBy(k).map(f) too): every new subtask reads every old file and keeps its key groups.
      const hashFed = graph.edges.some((e) => e.target.operators[0]?.node.id === head.id && e.partition.kind === 'hash');
      for (const st of subtasks) {
        const cs = channelStateFor(head, hashFed, st.index, v.parallelism, dir);
        if (cs !== undefined) (tasks[taskId(v.index, st.index)] ??= { checkpointId: m.checkpointId, operators: {} }).channelState = cs;
      }
    }
    for (const chained of v.operators) {
      const node = chained.node;
      const old = byId.get(node.id);
      if (old === undefined) continue; // a new operator starts empty
      seen.add(node.id);
      if (old.keyed && v.parallelism > old.maxParallelism) {
        // Flink's words (StateAssignmentOperation): the key groups in the snapshot bound the parallelism.
        throw new RestoreError(
          `The state for operator "${node.name}" can not be restored. The maximum parallelism (${old.maxParallelism}) of the restored state is lower than the configured parallelism (${v.parallelism}). Please reduce the parallelism of the task to be lower or equal to the maximum parallelism.`,
        );
      }
      if (old.maxParallelism !== node.maxParallelism && old.keyed) {
        throw new RestoreError(
          `operator "${node.name}" was checkpointed with max parallelism ${old.maxParallelism} and now has ${node.maxParallelism}; the number of key groups is fixed once state exists (set setMaxParallelism(${old.maxParallelism}))`,
        );
      }
      checkStillKeyed(node, old, dir);
      const inlines = old.subtasks.map((s) => (s.inline ? decodeInline(s.inline, `${dir}: operator "${old.name}" subtask ${s.subtask}`) : undefined));
      checkSinkIdentity(node, inlines, dir);
      const isSource = node.transformation.kind === 'source';
      // Source splits: all positions of all old readers plus unassigned ones, dealt out again.
      if (isSource) {
        const all: unknown[] = [];
        for (const i of inlines) for (const sp of i?.splits ?? []) all.push(sp);
        for (const sp of m.enumerators[node.id] ?? []) all.push(sp);
        const p = v.parallelism;
        for (let i = 0; i < p; i++) splits[taskId(v.index, i)] = [];
        all.forEach((sp, k) => splits[taskId(v.index, k % p)]!.push(sp));
      }
      const listsSplit = new Map<string, unknown[]>();
      /** Split lists per old subtask index: at the same parallelism each subtask gets its own back (as Flink's round-robin repartitioner). */
      const splitOwn = new Map<string, Map<number, unknown[]>>();
      const sameParallelism = old.parallelism === v.parallelism;
      const listsUnion = new Map<string, unknown[]>();
      /** The serializer each list was written by: see listSerializers. */
      const listSerializerOf = new Map<string, ListSerializers>();
      /** Broadcast state per old subtask index. */
      const broadcastOf = new Map<number, Record<string, [unknown, unknown][]>>();
      /** The serializers of each old subtask's broadcast states: they go with its copy. */
      const broadcastSerializersOf = new Map<number, Record<string, SerializerRecord>>();
      // Per old subtask, in its ledger's (checkpoint) order, with the subtask that prepared each
      // (its owner; before owners were recorded, the holder). Dealt by owner: see below.
      const committablesOf: { readonly c: unknown; readonly owner: number }[][] = [];
      const sinkIdentity = inlines.find((i) => i?.sinkIdentity !== undefined)?.sinkIdentity;
      const stateLayout = inlines.find((i) => i?.stateLayout !== undefined)?.stateLayout;
      // Every old subtask's key kinds go to every new one: key groups move between subtasks.
      const keyKinds = [...new Set(inlines.flatMap((i) => i?.keyKinds ?? []))].sort();
      inlines.forEach((i, oldIndex) => {
        if (i === undefined) return;
        for (const [name, l] of Object.entries(i.lists ?? {})) {
          const target = l.distribution === 'union' ? listsUnion : listsSplit;
          const acc = target.get(name) ?? [];
          for (const x of l.items) acc.push(x);
          target.set(name, acc);
          const ls: ListSerializers = listSerializerOf.get(name) ?? { bySubtask: new Map(), withItems: [] };
          const rec = i.serializers?.[listSerializerKey(name)];
          ls.bySubtask.set(old.subtasks[oldIndex]!.subtask, rec);
          if (l.items.length > 0) ls.withItems.push({ subtask: old.subtasks[oldIndex]!.subtask, rec });
          listSerializerOf.set(name, ls);
          if (l.distribution !== 'union') {
            const own = splitOwn.get(name) ?? new Map<number, unknown[]>();
            own.set(old.subtasks[oldIndex]!.subtask, l.items);
            splitOwn.set(name, own);
          }
        }
        if (i.broadcast) {
          broadcastOf.set(old.subtasks[oldIndex]!.subtask, i.broadcast);
          const recs: Record<string, SerializerRecord> = {};
          for (const name of Object.keys(i.broadcast)) {
            const rec = i.serializers?.[broadcastSerializerKey(name)];
            if (rec !== undefined) recs[broadcastSerializerKey(name)] = rec;
          }
          broadcastSerializersOf.set(old.subtasks[oldIndex]!.subtask, recs);
        }
        if (i.committables !== undefined && i.committables.length > 0) {
          const owners = i.committableOwners;
          committablesOf[oldIndex] = i.committables.map((c, j) => ({ c, owner: owners?.[j] ?? oldIndex }));
        }
      });
      const owned = committablesOf.flatMap((c) => c ?? []);
      const committables = owned.map((x) => x.c);
      const watermarkOf = restoredWatermarks(old, dir, v.parallelism, allowDuplicateOutput);
      const p = subtasks.length;
      for (const st of subtasks) {
        const key = taskId(v.index, st.index);
        const t = (tasks[key] ??= { checkpointId: m.checkpointId, operators: {} });
        const inline: InlineOperatorState = {};
        const serializers: Record<string, SerializerRecord> = {};
        if (listsSplit.size > 0 || listsUnion.size > 0) {
          inline.lists = {};
          for (const [name, items] of listsSplit) {
            if (sameParallelism) {
              inline.lists[name] = { distribution: 'split', items: (splitOwn.get(name)?.get(st.index) ?? []).slice() };
              const rec = listSerializerOf.get(name)!.bySubtask.get(st.index);
              if (rec !== undefined) serializers[listSerializerKey(name)] = rec;
              continue;
            }
            const from = Math.floor((st.index * items.length) / p);
            const to = Math.floor(((st.index + 1) * items.length) / p);
            inline.lists[name] = { distribution: 'split', items: items.slice(from, to) };
            const rec = listSerializer(name, listSerializerOf.get(name)!, old.name, dir);
            if (rec !== undefined) serializers[listSerializerKey(name)] = rec;
          }
          for (const [name, items] of listsUnion) {
            inline.lists[name] = { distribution: 'union', items: items.slice() };
            const rec = listSerializer(name, listSerializerOf.get(name)!, old.name, dir);
            if (rec !== undefined) serializers[listSerializerKey(name)] = rec;
          }
        }
        // New subtask i gets old subtask (i mod old parallelism)'s copy, as Flink's broadcast
        // repartitioning: at the same parallelism each its own. Copies differ in an unaligned
        // checkpoint (each subtask snapshots at its own point of the broadcast stream and replays
        // its own in-flight part); subtask 0's copy for all lost or doubled broadcast updates.
        const broadcastFrom = broadcastOf.has(st.index % old.parallelism) ? st.index % old.parallelism : broadcastOf.keys().next().value;
        if (broadcastFrom !== undefined) {
          inline.broadcast = broadcastOf.get(broadcastFrom)!;
          Object.assign(serializers, broadcastSerializersOf.get(broadcastFrom));
        }
        if (Object.keys(serializers).length > 0) inline.serializers = serializers;
        // All committables one writer subtask prepared go to one new subtask (its index mod p), in
        // their order, whichever old subtask held them: a sink's committed position is per writer
        // subtask (the Redis and JetStream sinks' progress keys), so a later checkpoint's
        // committable of that writer committed first, by another new subtask at the same time,
        // would make the earlier one look done. Dealt by holder instead (before), 4 -> 2 -> 4 with
        // commits pending gave writer 2's old committables to new subtask 0 while new subtask 2
        // wrote as writer 2 again: its newer commit moved the progress key first, and the old
        // records were skipped as committed. An owner below p is the new subtask writing under
        // its index, which commits what it restored before anything new.
        if (owned.length > 0) {
          const own = owned.filter((x) => x.owner % p === st.index);
          if (own.length > 0) {
            inline.committables = own.map((x) => x.c);
            inline.committableOwners = own.map((x) => x.owner);
          }
        }
        if (sinkIdentity !== undefined) inline.sinkIdentity = sinkIdentity;
        if (stateLayout !== undefined) inline.stateLayout = stateLayout;
        if (keyKinds.length > 0) inline.keyKinds = keyKinds;
        // An incremental chain goes as its files in order (base first); chains of several old
        // subtasks hold disjoint key groups, so they go one after the other.
        const keyedFiles = old.subtasks
          .filter((s) => (s.file !== undefined || s.chain !== undefined) && s.keyGroupRange !== undefined && overlaps(s.keyGroupRange, st.keyGroupRange))
          .flatMap((s): { path: string; size: number; inline?: string; chain?: true }[] => s.chain !== undefined
            ? s.chain.map((c) => ({ path: sharedStateReference(dir, c.name), size: c.size, chain: true as const }))
            : [{ path: stateFileReference(dir, s.file!), size: s.fileSize!, ...(s.fileInline !== undefined ? { inline: s.fileInline } : {}) }]);
        const entry: Entry = {};
        const watermark = watermarkOf(st.index);
        if (watermark !== undefined) entry.watermark = watermark;
        if (Object.keys(inline).length > 0) entry.inline = inline;
        if (keyedFiles.length > 0) entry.keyedFiles = keyedFiles;
        if (committables.length > 0) entry.referencedCommittables = committables;
        // A subtask given no committables still learns which ones exist (a sink's recover tells
        // a pending file that belongs to none from one another subtask commits).
        if (entry.inline || entry.keyedFiles || entry.watermark !== undefined || entry.referencedCommittables) t.operators[node.id] = entry;
      }
    }
  }
  // An incremental subtask's stateSize is the bytes of its last delta only (0 when its keys did
  // not change in that interval): its chain holds the state, so a chain counts as state.
  const unmatched = m.operators.filter((o) => !seen.has(o.id) && o.subtasks.some((s) => s.stateSize > 0 || (s.chain !== undefined && s.chain.length > 0))).map((o) => o.id);
  if (unmatched.length > 0 && !allowNonRestoredState) {
    const names = m.operators.filter((o) => unmatched.includes(o.id)).map((o) => `"${o.name}"${o.uid ? ` (uid ${o.uid})` : ''}`);
    throw new RestoreError(
      `the snapshot has state for operators this job does not have: ${names.join(', ')}; give operators stable uid()s, or pass --allow-non-restored-state to drop that state`,
    );
  }
  return { tasks, splits, unmatched };
}
