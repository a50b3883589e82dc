/**
 * Task-side restore of keyed state: read the blocks of this subtask's key groups from every
 * state file that holds some of them (one file at the same parallelism, several after
 * rescaling). Values stay encoded until the job registers each state (so serializer checks
 * and migrations run against the descriptor the new code declares); timers are decoded here.
 */
import type { HeapKeyedStateBackend, NormKey } from '../../state/heap-keyed-backend.ts';
import { denormalizeKey } from '../../state/key-groups.ts';
import type { StateMeta } from '../../state/state-codec.ts';
import { StateFileReader } from '../../checkpoint/state-file.ts';
import { openLocalStateFile } from '../../checkpoint/local-streams.ts';
import { decodeValue } from '../../core/codec.ts';
import type { KeyedSnapshotMeta } from './keyed-snapshot.ts';

export type RestoredTimers = {
  domain: 'event' | 'processing';
  timestamp: number;
  key: NormKey;
  keyGroup: number;
  originalKey: unknown;
  namespace: string | number;
  seq: number;
}[];

export async function loadKeyedState(backend: HeapKeyedStateBackend, files: readonly { path: string; size: number }[]): Promise<RestoredTimers> {
  const { start, end } = backend.range;
  const timers: RestoredTimers = [];
  for (const f of files) {
    const input = await openLocalStateFile(f.path, f.size);
    try {
      const reader = await StateFileReader.open(input);
      const meta = reader.index.meta as KeyedSnapshotMeta;
      if (meta.maxParallelism !== backend.maxParallelism) {
        throw new Error(`state file ${f.path} was written with max parallelism ${meta.maxParallelism}, the operator now has ${backend.maxParallelism}; the number of key groups cannot change`);
      }
      const metas = new Map<string, StateMeta>(meta.states.map((m) => [m.name, m]));
      for (const b of reader.index.blocks) {
        const [kind, a, c] = splitName(b.name);
        const kg = Number(kind === 'k' ? c : a);
        if (kg < start || kg > end) continue;
        const bytes = await reader.readBlock(b);
        if (kind === 'k') {
          const m = metas.get(a);
          if (m === undefined) throw new Error(`state file ${f.path} has a block for unknown state "${a}"`);
          let r = backend.restored.get(a);
          if (r === undefined) backend.restored.set(a, (r = { meta: m, groups: new Map() }));
          r.groups.set(kg, bytes);
        } else if (kind === 't') {
          for (const [domain, ts, key, ns, seq] of decodeValue<[0 | 1, number, NormKey, string | number, number][]>(bytes)) {
            timers.push({ domain: domain === 0 ? 'event' : 'processing', timestamp: ts, key, keyGroup: kg, originalKey: denormalizeKey(key), namespace: ns, seq });
          }
        }
      }
    } finally {
      await input.close();
    }
  }
  // Same firing order as before the failure: by timestamp, then registration order.
  timers.sort((x, y) => x.timestamp - y.timestamp || x.seq - y.seq);
  return timers;
}

/** "k/<state>/<kg>" or "t/<kg>"; state names may contain slashes. */
function splitName(name: string): [string, string, string] {
  if (name.startsWith('t/')) return ['t', name.slice(2), ''];
  if (name.startsWith('k/')) {
    const i = name.lastIndexOf('/');
    return ['k', name.slice(2, i), name.slice(i + 1)];
  }
  return ['?', '', ''];
}
