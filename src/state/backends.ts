/**
 * Keyed state backends by name, as the configuration names them (state.backend.type).
 * Adding a backend is a folder beside heap/ and a line here.
 */
import { WeirError } from '../core/errors.ts';
import type { KeyedStateBackendFactory } from './backend.ts';
import { heapBackendFactory } from './heap/backend.ts';

export const DEFAULT_KEYED_STATE_BACKEND = 'heap';

const FACTORIES: ReadonlyMap<string, KeyedStateBackendFactory> = new Map([[heapBackendFactory.name, heapBackendFactory]]);

export function keyedStateBackendFactory(name: string = DEFAULT_KEYED_STATE_BACKEND): KeyedStateBackendFactory {
  const f = FACTORIES.get(name);
  if (f === undefined) {
    throw new WeirError('CONFIG', `unknown state backend "${name}"; available: ${[...FACTORIES.keys()].join(', ')}`);
  }
  return f;
}
