export { RedisStreamsSink, type RedisCommittable, type RedisEntry } from './redis-streams-sink.ts';
export type { RedisStreamsSinkOptions, RedisConnection, RedisFieldValue } from './options.ts';
