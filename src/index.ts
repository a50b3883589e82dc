/** weir: a stateful stream processor for TypeScript with Flink's fault-tolerance model. */
export { defineJob, type JobDefinition, type JobBuilder } from './api/job.ts';
export { StreamExecutionEnvironment } from './api/environment.ts';
export {
  DataStream, KeyedStream, WindowedStream, ConnectedStreams, KeyedConnectedStreams, BroadcastStream,
  BroadcastConnectedStream, KeyedBroadcastConnectedStream, DataSink, DEAD_LETTERS,
} from './api/datastream.ts';
export type * from './api/functions.ts';
export { OutputTag } from './api/output-tag.ts';
export {
  ValueStateDescriptor, ListStateDescriptor, MapStateDescriptor, ReducingStateDescriptor, AggregatingStateDescriptor,
  BroadcastStateDescriptor, PLAIN_DATA_SERIALIZER,
} from './api/state.ts';
export type {
  ValueState, ListState, MapState, ReducingState, AggregatingState, BroadcastState, ReadOnlyBroadcastState,
  StateSerializer, StateTtlConfig, StateOptions,
} from './api/state.ts';
export { WatermarkStrategy, type WatermarkGenerator, type WatermarkOutput, type TimestampAssigner } from './api/watermark-strategy.ts';
export {
  TumblingEventTimeWindows, TumblingProcessingTimeWindows, SlidingEventTimeWindows, SlidingProcessingTimeWindows,
  EventTimeSessionWindows, ProcessingTimeSessionWindows, type TimeWindow, type WindowAssigner,
} from './api/windows.ts';
export { Time, toMillis, type Duration } from './api/duration.ts';
export { Rng } from './api/random.ts';
export type { Source, SourceSplit, SourceReader, SourceReaderContext, SourceOutput, MalformedRecord, PollStatus } from './api/source.ts';
export type { TwoPhaseCommitSink, SinkWriter, SinkCommitter, SinkContext } from './api/sink.ts';
export { ExactlyOnceFileSink, type ExactlyOnceFileSinkOptions, type FileCommittable } from './connectors/file/exactly-once-file-sink.ts';
export { runJob, JobResult, type RunOptions, type Progress, type JobStatus } from './cluster/job-manager.ts';
export { ManualClock, systemClock, type Clock } from './state/clock.ts';
export { MAX_WATERMARK, MIN_WATERMARK } from './runtime/events.ts';
