/** Durations moved to core (every layer may import them); this keeps the api's imports working. */
export * from '../core/duration.ts';
