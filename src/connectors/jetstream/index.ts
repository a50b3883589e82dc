export { JetStreamSink, type JetStreamCommittable } from './jetstream-sink.ts';
export type { JetStreamSinkOptions } from './options.ts';
