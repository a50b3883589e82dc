export { KinesisSource, type KinesisSourceOptions, type KinesisShardSplit, type KinesisInitialPosition, type KinesisFormat, type KinesisRecordMeta } from './kinesis-source.ts';
export { KinesisSink, type KinesisSinkOptions } from './kinesis-sink.ts';
export type { KinesisConnectionOptions } from './client.ts';
