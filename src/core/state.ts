/**
 * State descriptors and handles. A descriptor names a state and says how its values are
 * stored; a handle reads and writes the value for the current key (keyed state) or for the
 * subtask (operator state).
 */
import type { AggregateFunction, ReduceFunction } from './functions.ts';
import { copyValue } from './copy.ts';

/**
 * How state values are turned into snapshot data and back. Values are stored as live
 * objects in the heap backend; serializers run only when a snapshot is written or read.
 * `version` lets a newer job read state written by an older one: `decode` receives the
 * version the data was written with.
 */
export interface StateSerializer<T> {
  readonly name: string;
  readonly version: number;
  /** To plain msgpack-encodable data. Default: the value itself. */
  encode?(value: T): unknown;
  /** From plain data written by `writtenVersion` of this serializer. */
  decode?(data: unknown, writtenVersion: number): T;
}

/** Default: values are plain data (objects, arrays, strings, numbers, booleans, null, bigint, Date, Map, typed arrays). */
export const PLAIN_DATA_SERIALIZER: StateSerializer<unknown> = Object.freeze({ name: 'weir.plain', version: 1 });

export interface StateTtlConfig {
  /** Time to live in milliseconds of processing time. */
  readonly ttlMs: number;
  /** When the expiry clock restarts. Default 'onCreateAndWrite'. */
  readonly updateType?: 'onCreateAndWrite' | 'onReadAndWrite';
  /** Default 'neverReturnExpired'. */
  readonly visibility?: 'neverReturnExpired' | 'returnExpiredIfNotCleanedUp';
}

export interface StateOptions<T> {
  readonly serializer?: StateSerializer<T>;
  readonly ttl?: StateTtlConfig;
}

export type StateKind = 'value' | 'list' | 'map' | 'reducing' | 'aggregating' | 'broadcast';

abstract class Descriptor<T> {
  abstract readonly kind: StateKind;
  readonly serializer: StateSerializer<T>;
  readonly ttl: StateTtlConfig | undefined;
  constructor(readonly name: string, options: StateOptions<T> = {}) {
    if (typeof name !== 'string' || name.length === 0) throw new TypeError('a state descriptor needs a non-empty name');
    this.serializer = options.serializer ?? (PLAIN_DATA_SERIALIZER as StateSerializer<T>);
    this.ttl = options.ttl;
    if (this.ttl !== undefined && !(Number.isFinite(this.ttl.ttlMs) && this.ttl.ttlMs > 0)) {
      throw new RangeError(`state "${name}": ttl.ttlMs must be a positive number, got ${String(this.ttl.ttlMs)}`);
    }
  }
}

export class ValueStateDescriptor<T> extends Descriptor<T> {
  readonly kind = 'value' as const;
  readonly defaultValue: T | undefined;
  constructor(name: string, options: StateOptions<T> & { defaultValue?: T } = {}) {
    super(name, options);
    this.defaultValue = options.defaultValue;
  }
}

/**
 * A value state's default, for a key that has no value. An object default is copied at every
 * read, as Flink copies it (StateDescriptor.getDefaultValue): handed out as is, a default
 * changed in place and stored became the default of every other key too.
 */
export function defaultValueOf<T>(d: T | undefined): T | undefined {
  return typeof d === 'object' && d !== null ? copyValue(d) : d;
}

/** ValueState.update(null or undefined) clears the value, as Flink's update(null) does. */
export function clearsValue(v: unknown): boolean {
  return v === undefined || v === null;
}

/**
 * A list state holds no null or undefined element, as in Flink ("You cannot add null to a
 * ListState"): the backends and codecs disagreed on them, and an undefined element read back
 * as a hole. Refused at the call, naming it.
 */
export function checkListElement(v: unknown, call: string): void {
  if (v === null || v === undefined) throw new TypeError(`ListState.${call}: cannot add ${v} (a list state holds no null or undefined elements)`);
}

/**
 * A map state's keys are compared by value, as Flink compares them (through their serializer):
 * strings, numbers, bigints, booleans and null. An object or array key would be compared by
 * identity in a JavaScript Map, so equal keys from different records made separate entries
 * (counts split) and none was found after a restore. Refused at the call, naming it.
 */
export function checkMapKey(key: unknown, call: string, state = 'MapState'): void {
  const t = typeof key;
  if (t === 'string' || t === 'number' || t === 'bigint' || t === 'boolean' || key === null) return;
  const what = key === undefined ? 'undefined' : Array.isArray(key) ? 'an array' : t === 'object' ? 'an object' : `a ${t}`;
  throw new TypeError(`${state}.${call}: a map key must be a string, number, bigint, boolean or null (compared by value), got ${what}; use a string key, such as JSON.stringify(key)`);
}

/**
 * MapState.putAll's entries, read whole before the map changes (putAll(m.entries()) of the map
 * itself) and every key checked first: all put, or none.
 */
export function checkedMapEntries<K, V>(entries: Iterable<readonly [K, V]>): (readonly [K, V])[] {
  const list = [...entries];
  for (const [k] of list) checkMapKey(k, 'putAll');
  return list;
}

export function checkListElements(values: readonly unknown[] | null | undefined, call: string): void {
  if (!Array.isArray(values)) throw new TypeError(`ListState.${call}: expected an array of values, got ${values === null ? 'null' : typeof values}`);
  for (const v of values) checkListElement(v, call);
}

export class ListStateDescriptor<T> extends Descriptor<T> {
  readonly kind = 'list' as const;
}

export class MapStateDescriptor<K, V> extends Descriptor<V> {
  readonly kind = 'map' as const;
  declare readonly __key?: K;
}

export class ReducingStateDescriptor<T> extends Descriptor<T> {
  readonly kind = 'reducing' as const;
  constructor(name: string, readonly reduce: ReduceFunction<T>, options: StateOptions<T> = {}) {
    super(name, options);
    if (typeof reduce !== 'function') throw new TypeError(`reducing state "${name}" needs a reduce function`);
  }
}

export class AggregatingStateDescriptor<IN, ACC, OUT> extends Descriptor<ACC> {
  readonly kind = 'aggregating' as const;
  declare readonly __in?: IN;
  declare readonly __out?: OUT;
  constructor(name: string, readonly aggregate: AggregateFunction<IN, ACC, OUT>, options: StateOptions<ACC> = {}) {
    super(name, options);
  }
}

/** Broadcast state: a map replicated on every subtask of the operator it is broadcast to. */
export class BroadcastStateDescriptor<K, V> extends Descriptor<V> {
  readonly kind = 'broadcast' as const;
  declare readonly __key?: K;
}

export type AnyStateDescriptor =
  | ValueStateDescriptor<any>
  | ListStateDescriptor<any>
  | MapStateDescriptor<any, any>
  | ReducingStateDescriptor<any>
  | AggregatingStateDescriptor<any, any, any>
  | BroadcastStateDescriptor<any, any>;

export interface ValueState<T> {
  /** The value for the current key, or (a fresh copy of) the descriptor's default when there is none. */
  value(): T | undefined;
  /** Sets the current key's value; null or undefined clears it, as Flink's update(null). */
  update(value: T): void;
  clear(): void;
}

export interface ListState<T> {
  /** The list for the current key (empty when there is none). Do not mutate it; use add/update. */
  get(): readonly T[];
  add(value: T): void;
  addAll(values: readonly T[]): void;
  update(values: readonly T[]): void;
  clear(): void;
}

export interface MapState<K, V> {
  get(key: K): V | undefined;
  put(key: K, value: V): void;
  putAll(entries: Iterable<readonly [K, V]>): void;
  remove(key: K): void;
  contains(key: K): boolean;
  entries(): IterableIterator<[K, V]>;
  keys(): IterableIterator<K>;
  values(): IterableIterator<V>;
  isEmpty(): boolean;
  clear(): void;
}

export interface ReducingState<T> {
  get(): T | undefined;
  add(value: T): void;
  clear(): void;
}

export interface AggregatingState<IN, OUT> {
  get(): OUT | undefined;
  add(value: IN): void;
  clear(): void;
}

export interface ReadOnlyBroadcastState<K, V> {
  get(key: K): V | undefined;
  contains(key: K): boolean;
  entries(): IterableIterator<[K, V]>;
}

export interface BroadcastState<K, V> extends ReadOnlyBroadcastState<K, V> {
  put(key: K, value: V): void;
  remove(key: K): void;
  clear(): void;
}
