/** What users of weir's DataStream API need, re-exported from the layers that define it. */
export { defineJob, type JobDefinition, type JobBuilder } from './job.ts';
export { StreamExecutionEnvironment } from './environment.ts';
export {
  DataStream, KeyedStream, WindowedStream, ConnectedStreams, KeyedConnectedStreams, BroadcastStream,
  BroadcastConnectedStream, KeyedBroadcastConnectedStream, DataSink, DEAD_LETTERS,
  AllWindowedStream, CountWindowedStream, AllCountWindowedStream, IntervalJoin, IntervalJoined,
  JoinedStreams, CoGroupedStreams, WindowedJoin, WindowedCoGroup, type EqualTo,
} from './datastream.ts';
export type * from '../core/functions.ts';
export { OutputTag } from '../core/output-tag.ts';
export {
  ValueStateDescriptor, ListStateDescriptor, MapStateDescriptor, ReducingStateDescriptor, AggregatingStateDescriptor,
  BroadcastStateDescriptor, PLAIN_DATA_SERIALIZER,
} from '../core/state.ts';
export type {
  ValueState, ListState, MapState, ReducingState, AggregatingState, BroadcastState, ReadOnlyBroadcastState,
  StateSerializer, StateTtlConfig, StateOptions,
} from '../core/state.ts';
export { WatermarkStrategy, type WatermarkGenerator, type WatermarkOutput, type TimestampAssigner } from '../core/watermark-strategy.ts';
export {
  TumblingEventTimeWindows, TumblingProcessingTimeWindows, SlidingEventTimeWindows, SlidingProcessingTimeWindows,
  EventTimeSessionWindows, ProcessingTimeSessionWindows, GLOBAL_WINDOW, type TimeWindow, type GlobalWindow, type WindowAssigner,
} from '../core/windows.ts';
export { Time, toMillis, type Duration } from '../core/duration.ts';
export { Rng } from '../core/random.ts';
export type { Source, SourceSplit, SourceReader, SourceReaderContext, SourceOutput, ReaderOutput, SourceReaderMetrics, MalformedRecord, PollStatus } from '../core/source.ts';
export { RedisStreamsSource, type RedisStreamsSourceOptions, type RedisStreamSplit } from '../connectors/redis/redis-streams-source.ts';
export type { SourceOptions } from './environment.ts';
export { JetStreamSource, type JetStreamSourceOptions, type JetStreamSplit } from '../connectors/nats/jetstream-source.ts';
export type { TwoPhaseCommitSink, SinkWriter, SinkCommitter, SinkContext, PrepareCommitOptions } from '../core/sink.ts';
export { ExactlyOnceFileSink, type ExactlyOnceFileSinkOptions, type FileCommittable } from '../connectors/file/exactly-once-file-sink.ts';
export { csv, jsonLines, type CsvFormatOptions, type FileFormat } from '../connectors/file/formats.ts';
export { parquet, type ParquetColumnType, type ParquetFormatOptions } from '../connectors/file/parquet/parquet-format.ts';
export { PostgresSink, type PostgresCommittable, type PostgresSinkOptions, type PostgresConnection } from '../connectors/postgres/index.ts';
export { RedisStreamsSink, type RedisCommittable, type RedisStreamsSinkOptions, type RedisConnection } from '../connectors/redis/index.ts';
export { KinesisSource, KinesisSink, type KinesisSourceOptions, type KinesisShardSplit, type KinesisInitialPosition, type KinesisSinkOptions, type KinesisConnectionOptions } from '../connectors/kinesis/index.ts';
export { JetStreamSink, type JetStreamCommittable, type JetStreamSinkOptions } from '../connectors/jetstream/index.ts';
export { ManualClock, systemClock, type Clock } from '../core/clock.ts';
export { MAX_WATERMARK, MIN_WATERMARK } from '../runtime/events.ts';
export { WeirError, errorCode, type ErrorCode } from '../core/errors.ts';
