/** Checkpoint storage on S3 and S3-compatible stores (s3://bucket/prefix). */
export { S3CheckpointStorage, s3Snapshots } from './s3-storage.ts';
export { S3FileSystem } from './s3-file-system.ts';
export { S3ObjectStore, type RequestCounts } from './object-store.ts';
export { DEFAULT_S3_CONFIG, isS3Reference, parseS3Reference, resolveS3Config, type S3Config, type S3Settings } from './settings.ts';
