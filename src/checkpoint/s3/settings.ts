/**
 * S3 settings: what the option registry's s3.* keys give (RunOptions.s3 in code), resolved to
 * plain values that cross threads in the deploy message (each worker makes its own client).
 * Anything not set is left to the AWS SDK's own resolution (AWS_ENDPOINT_URL_S3,
 * AWS_ENDPOINT_URL, AWS_REGION, profiles, the credential chain), as every SDK client does.
 * Credentials are never part of these settings: they stay with the SDK.
 */
import { ConfigError } from '../config.ts';
import { toMillis, type Duration } from '../../core/duration.ts';
import { fieldsUnder } from '../../core/options/lookup.ts';
import { defaultOf } from '../../core/options/option.ts';
import { OPTIONS } from '../../core/options/registry.ts';
import { codeProblem } from '../../core/options/values.ts';

/** As a user writes them (flags, config file keys s3.*, RunOptions.s3). */
export interface S3Settings {
  readonly endpoint?: string;
  readonly pathStyleAccess?: boolean;
  readonly region?: string;
  readonly requestTimeout?: Duration;
  readonly retryMaxAttempts?: number;
  readonly uploadPartSize?: number;
}

/** Resolved and checked; structured-clonable (it travels to worker threads). */
export interface S3Config {
  /** Only when set here; otherwise the SDK's (environment, profile, AWS). */
  readonly endpoint: string | undefined;
  readonly pathStyleAccess: boolean;
  readonly region: string | undefined;
  readonly requestTimeoutMs: number;
  readonly retryMaxAttempts: number;
  readonly uploadPartSizeBytes: number;
}

const FIELDS = fieldsUnder('s3');

export const DEFAULT_S3_CONFIG: S3Config = Object.freeze({
  endpoint: undefined,
  pathStyleAccess: defaultOf(OPTIONS.s3PathStyleAccess),
  region: undefined,
  requestTimeoutMs: toMillis(defaultOf(OPTIONS.s3RequestTimeout), 'default S3 request timeout'),
  retryMaxAttempts: defaultOf(OPTIONS.s3RetryMaxAttempts),
  uploadPartSizeBytes: defaultOf(OPTIONS.s3UploadPartSize),
});

export function resolveS3Config(s: S3Settings = {}, where = 'S3 settings'): S3Config {
  for (const [field, value] of Object.entries(s)) {
    const option = FIELDS.get(field);
    if (option === undefined) throw new ConfigError(`${where}: unknown S3 setting "${field}"`);
    const problem = value === undefined ? undefined : codeProblem(option, value, where);
    if (problem !== undefined) throw new ConfigError(problem);
  }
  if (s.endpoint !== undefined) checkEndpoint(s.endpoint, where);
  const d = DEFAULT_S3_CONFIG;
  return Object.freeze({
    endpoint: s.endpoint,
    pathStyleAccess: s.pathStyleAccess ?? d.pathStyleAccess,
    region: s.region,
    requestTimeoutMs: s.requestTimeout === undefined ? d.requestTimeoutMs : toMillis(s.requestTimeout, where),
    retryMaxAttempts: s.retryMaxAttempts ?? d.retryMaxAttempts,
    uploadPartSizeBytes: s.uploadPartSize ?? d.uploadPartSizeBytes,
  });
}

/** An endpoint is an http(s) URL without credentials in it (they would end up in messages). */
function checkEndpoint(endpoint: string, where: string): void {
  let url: URL;
  try {
    url = new URL(endpoint);
  } catch {
    throw new ConfigError(`${where}: S3 endpoint must be an http(s) URL, got ${JSON.stringify(redactUrl(endpoint))}`);
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') throw new ConfigError(`${where}: S3 endpoint must be an http(s) URL, got ${JSON.stringify(redactUrl(endpoint))}`);
  if (url.username !== '' || url.password !== '') throw new ConfigError(`${where}: S3 endpoint must not carry credentials (use the AWS credential chain: AWS_ACCESS_KEY_ID, profiles)`);
}

/**
 * A URL with any user:password part blanked, for messages: after "//", and at the start of a
 * text given without a scheme ("key:secret@host", a scheme forgotten), where it still names a host.
 */
export function redactUrl(text: string): string {
  // Up to the last @ of the authority: a password may hold @ (URL parsers end the user info at the last one).
  return text.replace(/\/\/[^/?#\s]*@/g, '//***@').replace(/^[^/@\s:]*:[^/?#\s]*@/, '***@');
}

/** The bucket and key of `s3://bucket/key`; the key may be '' (the bucket's root). */
export interface S3Location {
  readonly bucket: string;
  readonly key: string;
}

const BUCKET = /^[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]$/;

export function isS3Reference(reference: string): boolean {
  return reference.startsWith('s3://');
}

/** Parses and checks `s3://bucket[/prefix]`: a clear error naming the reference when it is not one. */
export function parseS3Reference(reference: string): S3Location {
  if (!isS3Reference(reference)) throw new ConfigError(`not an S3 location (s3://bucket/prefix): ${JSON.stringify(redactUrl(reference))}`);
  const rest = reference.slice('s3://'.length);
  const slash = rest.indexOf('/');
  const bucket = slash < 0 ? rest : rest.slice(0, slash);
  // Messages below name the reference: one with key:secret@ in it is refused without echoing it.
  if (bucket.includes('@')) throw new ConfigError(`${redactUrl(reference)}: an S3 location must not carry credentials (use the AWS credential chain: AWS_ACCESS_KEY_ID, profiles)`);
  const key = slash < 0 ? '' : rest.slice(slash + 1).replace(/\/+$/, '');
  if (!BUCKET.test(bucket)) throw new ConfigError(`${reference}: "${bucket}" is not an S3 bucket name (3 to 63 lowercase letters, digits, dots and hyphens)`);
  if (key.split('/').some((part) => part === '' || part === '.' || part === '..') && key !== '') {
    throw new ConfigError(`${reference}: the key prefix must not have empty, "." or ".." segments`);
  }
  return { bucket, key };
}

/**
 * The S3 settings of the job this thread runs (set by the job manager on the main thread and
 * by each worker from its deploy message), for connectors that reach S3 on their own (the
 * exactly-once file sink given an s3:// path): one set of settings for checkpoints and output.
 */
let jobS3Config: S3Config | undefined;

export function setJobS3Config(config: S3Config): void {
  jobS3Config = config;
}

/** The job's S3 settings, or the defaults (the AWS SDK's own resolution) outside a job. */
export function currentJobS3Config(): S3Config {
  return jobS3Config ?? DEFAULT_S3_CONFIG;
}
