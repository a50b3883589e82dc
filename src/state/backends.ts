/**
 * Keyed state backends by name, as the configuration names them (state.backend.type).
 * Adding a backend is a folder beside heap/ and a line here.
 */
import { WeirError } from '../core/errors.ts';
import type { KeyedStateBackendFactory } from './backend.ts';
import { heapBackendFactory, heapBackendFactoryWith, type HeapBackendOptions } from './heap/backend.ts';
import { diskBackendFactory } from './disk/backend.ts';
import type { DiskBackendOptions } from './disk/options.ts';

export const DEFAULT_KEYED_STATE_BACKEND = 'heap';

/** Settings of the backends that have any (state.backend.<name>.* keys). */
export interface StateBackendOptions {
  readonly heap?: HeapBackendOptions;
  readonly disk?: DiskBackendOptions;
}

const FACTORIES: ReadonlyMap<string, (o: StateBackendOptions) => KeyedStateBackendFactory> = new Map([
  [heapBackendFactory.name, (o: StateBackendOptions) => (o.heap === undefined ? heapBackendFactory : heapBackendFactoryWith(o.heap))],
  ['disk', (o: StateBackendOptions) => diskBackendFactory(o.disk)],
]);

export function keyedStateBackendFactory(name: string = DEFAULT_KEYED_STATE_BACKEND, options: StateBackendOptions = {}): KeyedStateBackendFactory {
  const f = FACTORIES.get(name);
  if (f === undefined) {
    throw new WeirError('CONFIG', `unknown state backend "${name}"; available: ${[...FACTORIES.keys()].join(', ')}`);
  }
  return f(options);
}
