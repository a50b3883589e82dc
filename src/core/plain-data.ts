/**
 * What msgpack is told to do with a value that is not plain data. Left to itself, msgpackr writes
 * a function as nil: a record crossing threads, or a state value in a checkpoint, came back
 * with the function gone (undefined) and nothing said. A function cannot be carried to another
 * thread or a later run, so packing one fails, naming it, as Flink's serializers fail on a
 * field they cannot serialize.
 */
import { WeirError } from './errors.ts';

export function refuseFunction(fn: unknown): never {
  const name = typeof fn === 'function' && fn.name !== '' ? ` ${fn.name}` : '';
  throw new WeirError(
    'USER_CODE',
    `a value holds a function${name}, which cannot be stored or sent to another thread (records crossing threads and state in snapshots are plain data)`,
  );
}
