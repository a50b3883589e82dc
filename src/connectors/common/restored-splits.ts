/**
 * A restore's source splits reconciled with what the source reads now (Source.reconcileRestoredSplits),
 * for sources with one split per named thing (a Redis stream, a JetStream stream or subject):
 * a restored split of a name no longer configured is dropped, with a log line (the job was
 * changed to stop reading it); a configured name no restored split covers was added since the
 * checkpoint and is planned as at a first start. Before, the restored splits were read as they
 * were: an added stream was never read, and a removed one read on.
 *
 * Only an unbounded source adds splits: a bounded one's finished splits are not in the
 * checkpoint, so a missing name may be one it already read to its end.
 */
export async function reconcileNamedSplits<S extends { readonly id: string }>(
  restored: readonly S[],
  options: {
    /** What the source is configured to read now, as split ids. */
    readonly configuredIds: readonly string[];
    readonly bounded: boolean;
    /** The splits of a first start (all configured ids). */
    readonly plan: () => Promise<S[]> | S[];
    /** Names the source in log lines. */
    readonly where: string;
    /** Position new splits start from, for the log line. */
    readonly startFrom: string;
  },
  log: (line: string) => void,
): Promise<S[]> {
  const configured = new Set(options.configuredIds);
  const kept = restored.filter((s) => configured.has(s.id));
  const dropped = restored.filter((s) => !configured.has(s.id)).map((s) => s.id);
  if (dropped.length > 0) log(`weir: ${options.where}: the checkpoint reads ${quoteList(dropped)}, which this source no longer names: not read any more`);
  if (options.bounded) return kept;
  const have = new Set(restored.map((s) => s.id));
  const added = options.configuredIds.filter((id) => !have.has(id));
  if (added.length === 0) return kept;
  const fresh = (await options.plan()).filter((s) => added.includes(s.id));
  log(`weir: ${options.where}: ${quoteList(added)} added since the checkpoint: read from ${options.startFrom}`);
  return [...kept, ...fresh];
}

function quoteList(ids: readonly string[]): string {
  return ids.map((id) => JSON.stringify(id)).join(', ');
}
