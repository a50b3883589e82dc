/** Reading option values, and placing them in the job's settings by their fields. */
import type { Option } from './option.ts';
import { dialectOf, refusal, type Origin } from './origin.ts';

/** Values read from flags or a config file, by option. */
export type OptionValues = ReadonlyMap<Option, unknown>;

export type Read = { readonly ok: true; readonly value: unknown } | { readonly ok: false; readonly message: string };

/** Decodes and checks one value; a refusal is worded for where it came from. */
export function readValue(o: Option, raw: unknown, origin: Origin): Read {
  const decoded = o.type.decode(raw, dialectOf(origin));
  if (!decoded.ok) return { ok: false, message: refusal(o, origin, decoded.problem) };
  const problem = o.type.check(decoded.value);
  return problem === undefined ? { ok: true, value: decoded.value } : { ok: false, message: refusal(o, origin, problem) };
}

/**
 * Values read from one file, by option. A file may set one option under two keys (an older key
 * beside the current one): the current key wins wherever it stands, as Flink reads an option's
 * key before its deprecated keys (the last of them won, so a file's order decided its checkpoint
 * directory); two older keys that disagree are refused.
 */
export class FileValues {
  readonly values = new Map<Option, unknown>();
  /** The key each kept value came under. */
  private readonly keys = new Map<Option, string>();

  /** Takes `value` of `o` read under `key`; the problem when it cannot be kept, else undefined. */
  add(o: Option, key: string, value: unknown): string | undefined {
    const earlier = this.keys.get(o);
    if (earlier !== undefined && key !== o.key && JSON.stringify(this.values.get(o)) !== JSON.stringify(value)) {
      if (earlier === o.key) return undefined; // the current key's value stays
      return `"${key}" and "${earlier}" both set the ${o.label} (${o.key ?? o.flag}), to different values; keep one`;
    }
    this.values.set(o, value);
    this.keys.set(o, key);
    return undefined;
  }
}

/** Checks a value set in code (already typed, or meant to be); the message or undefined. */
export function codeProblem(o: Option, value: unknown, where: string): string | undefined {
  const problem = o.type.check(value);
  return problem === undefined ? undefined : refusal(o, { kind: 'code', where }, problem);
}

/** The typed value of `o`, if given. */
export function valueOf<T>(values: OptionValues, o: Option<T>): T | undefined {
  return values.get(o as Option) as T | undefined;
}

type Tree = { [k: string]: unknown };

/** Values with a field as a settings object: checkpoint.interval → { checkpoint: { interval } }. */
export function settingsTree(values: OptionValues): Tree {
  const tree: Tree = {};
  for (const [o, v] of values) {
    if (o.field === undefined) continue;
    const parts = o.field.split('.');
    let node = tree;
    for (const p of parts.slice(0, -1)) node = (node[p] ??= {}) as Tree;
    node[parts.at(-1)!] = v;
  }
  return tree;
}

/** `over` wins field by field; nested settings objects are merged, not replaced. */
export function mergeTrees(under: Tree, over: Tree): Tree {
  const out: Tree = { ...under };
  for (const [k, v] of Object.entries(over)) {
    const u = out[k];
    out[k] = isTree(u) && isTree(v) ? mergeTrees(u, v) : v;
  }
  return out;
}

function isTree(v: unknown): v is Tree {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}
