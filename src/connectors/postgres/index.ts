export { PostgresSink, type PostgresCommittable } from './postgres-sink.ts';
export type { PostgresSinkOptions, PostgresConnection } from './options.ts';
