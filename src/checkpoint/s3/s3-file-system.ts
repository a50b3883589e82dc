/**
 * The file-system primitives of checkpoint storage on S3 (or any S3-compatible store), for
 * references `s3://bucket/key`. An object store has no directories, no rename and no append,
 * so:
 * - a directory exists when a key is below it; prepareDirectory writes a marker object
 *   (`dir/`, empty) where storage needs an empty one to be seen (a job's layout, a triggered
 *   checkpoint that has no state yet);
 * - writeAtomically is one PUT (S3 makes a PUT visible whole or not at all);
 * - append writes a segment object (names.ts), and readFile of such a file concatenates them;
 *   every `foldEvery` appends the segments are folded into one (so a history appended every
 *   second is not thousands of small objects), keeping its newest `maxAppendedBytes`;
 * - createOutput does not check for an existing object (it would cost a request per state
 *   file): storage names every state file uniquely per checkpoint.
 */
import { randomBytes } from 'node:crypto';
import type { StateInputHandle, StateOutputStream } from '../../core/state-streams.ts';
import { APPEND_SEGMENTS_SUFFIX, appendSegmentName, DIRECTORY_MARKER_SUFFIX, FOLDED_SEGMENT_SUFFIX } from '../names.ts';
import { StorageError } from '../storage-error.ts';
import type { DirectoryEntry, SnapshotFileSystem } from '../storage-fs.ts';
import { S3ObjectStore } from './object-store.ts';
import { openS3Input, S3OutputStream } from './s3-streams.ts';
import { isS3Reference, parseS3Reference, type S3Config, type S3Location } from './settings.ts';

/** Appends by this process between folds of a file's segments. */
const FOLD_EVERY = 64;
/** An appended file keeps its newest bytes up to this (cut at a line end) when folded. */
const MAX_APPENDED_BYTES = 16 * 1024 * 1024;

export class S3FileSystem implements SnapshotFileSystem {
  /** Worker threads make their own client from the same settings. */
  readonly threadLocal = false;
  readonly store: S3ObjectStore;
  private appendSequence = 0;
  private readonly appendsSinceFold = new Map<string, number>();
  /** Appends to one file run one at a time: a fold must see every segment named before its last. */
  private readonly appending = new Map<string, Promise<void>>();

  constructor(
    readonly config: S3Config,
    store?: S3ObjectStore,
    private readonly folding: { readonly foldEvery: number; readonly maxAppendedBytes: number } = { foldEvery: FOLD_EVERY, maxAppendedBytes: MAX_APPENDED_BYTES },
  ) {
    this.store = store ?? new S3ObjectStore(config);
  }

  handles(reference: string): boolean {
    return isS3Reference(reference);
  }

  async prepareDirectory(dir: string): Promise<void> {
    const { bucket, key } = this.locate(dir);
    if (key === '') {
      // The bucket itself: check that it is there and reachable (an empty listing is fine).
      await this.store.list(bucket, '', DIRECTORY_MARKER_SUFFIX);
      return;
    }
    await this.store.putObject(bucket, key + DIRECTORY_MARKER_SUFFIX, new Uint8Array(0));
  }

  async createOutput(file: string): Promise<StateOutputStream> {
    const { bucket, key } = this.locateFile(file);
    return new S3OutputStream(this.store, bucket, key, file);
  }

  openInput(file: string): Promise<StateInputHandle> {
    const { bucket, key } = this.locateFile(file);
    return openS3Input(this.store, bucket, key, file);
  }

  async readFile(file: string): Promise<Uint8Array | undefined> {
    const { bucket, key } = this.locateFile(file);
    const whole = await this.store.getObject(bucket, key);
    if (whole !== undefined) return whole;
    const segments = await this.liveSegments(bucket, key);
    if (segments === undefined) return undefined;
    return Buffer.concat(await this.readSegments(bucket, segments));
  }

  /** The segments a reader concatenates: the newest folded one and every segment after it. */
  private async liveSegments(bucket: string, key: string): Promise<{ live: string[]; covered: string[] } | undefined> {
    const all = (await this.store.list(bucket, segmentsPrefix(key))).objects.map((o) => o.key).sort();
    if (all.length === 0) return undefined;
    let from = 0;
    for (let i = all.length - 1; i >= 0; i--) {
      if (all[i]!.endsWith(FOLDED_SEGMENT_SUFFIX)) {
        from = i;
        break;
      }
    }
    return { live: all.slice(from), covered: all.slice(0, from) };
  }

  private async readSegments(bucket: string, segments: { live: string[] }): Promise<Uint8Array[]> {
    const parts: Uint8Array[] = [];
    for (const s of segments.live) {
      const b = await this.store.getObject(bucket, s);
      if (b !== undefined) parts.push(b); // deleted since the listing (folded meanwhile): as if never appended
    }
    return parts;
  }

  /**
   * Folds the live segments into one named after the last of them, then deletes what it
   * covers. A crash between the two leaves covered segments that readers skip.
   */
  private async fold(bucket: string, key: string): Promise<void> {
    const segments = await this.liveSegments(bucket, key);
    if (segments === undefined || segments.live.length < 2) return;
    let bytes: Buffer = Buffer.concat(await this.readSegments(bucket, segments));
    if (bytes.byteLength > this.folding.maxAppendedBytes) {
      const tail = bytes.subarray(bytes.byteLength - this.folding.maxAppendedBytes);
      const nl = tail.indexOf(10);
      bytes = Buffer.from(nl < 0 ? tail : tail.subarray(nl + 1));
    }
    const last = segments.live[segments.live.length - 1]!;
    const name = last.endsWith(FOLDED_SEGMENT_SUFFIX) ? last : last + FOLDED_SEGMENT_SUFFIX;
    if (name === last) return; // only a folded segment is live: nothing new
    await this.store.putObject(bucket, name, bytes);
    await this.store.deleteObjects(bucket, [...segments.covered, ...segments.live]);
  }

  async writeAtomically(file: string, bytes: Uint8Array): Promise<void> {
    const { bucket, key } = this.locateFile(file);
    await this.store.putObject(bucket, key, bytes);
  }

  append(file: string, bytes: Uint8Array): Promise<void> {
    const next = (this.appending.get(file) ?? Promise.resolve()).catch(() => {}).then(() => this.appendNow(file, bytes));
    this.appending.set(file, next);
    void next.finally(() => {
      if (this.appending.get(file) === next) this.appending.delete(file);
    }).catch(() => {});
    return next;
  }

  private async appendNow(file: string, bytes: Uint8Array): Promise<void> {
    const { bucket, key } = this.locateFile(file);
    const name = appendSegmentName(Date.now(), this.appendSequence++, randomBytes(4).toString('hex'));
    await this.store.putObject(bucket, segmentsPrefix(key) + name, bytes);
    const n = (this.appendsSinceFold.get(file) ?? 0) + 1;
    this.appendsSinceFold.set(file, n % this.folding.foldEvery);
    if (n >= this.folding.foldEvery) await this.fold(bucket, key);
  }

  async size(file: string): Promise<number | undefined> {
    const { bucket, key } = this.locateFile(file);
    return this.store.headObject(bucket, key);
  }

  /** By the listing of the key (S3's ListObjectsV2 answer is checked to be one: object-store.ts). */
  async confirmSize(file: string): Promise<number | undefined> {
    const { bucket, key } = this.locateFile(file);
    return (await this.store.list(bucket, key)).objects.find((o) => o.key === key)?.size;
  }

  async list(dir: string): Promise<readonly DirectoryEntry[]> {
    const { bucket, key } = this.locate(dir);
    const prefix = key === '' ? '' : key + '/';
    const listed = await this.store.list(bucket, prefix, '/');
    const out = new Map<string, boolean>();
    for (const o of listed.objects) if (o.key !== prefix) out.set(o.key.slice(prefix.length), false);
    for (const p of listed.prefixes) {
      const name = p.slice(prefix.length, -1);
      if (name === '') continue;
      // A folder of append segments is one file to the storage above.
      if (name.endsWith(APPEND_SEGMENTS_SUFFIX)) out.set(name.slice(0, -APPEND_SEGMENTS_SUFFIX.length), false);
      else out.set(name, true);
    }
    return [...out].map(([name, directory]) => ({ name, directory })).sort((a, b) => (a.name < b.name ? -1 : 1));
  }

  async delete(file: string): Promise<void> {
    const { bucket, key } = this.locateFile(file);
    await this.store.deleteObject(bucket, key);
  }

  async deleteRecursively(dir: string): Promise<void> {
    const { bucket, key } = this.locate(dir);
    if (key === '') throw new StorageError(`refusing to delete every object of bucket ${bucket} (${dir})`);
    const keys = (await this.store.list(bucket, key + '/')).objects.map((o) => o.key);
    if (keys.length > 0) await this.store.deleteObjects(bucket, keys);
  }

  close(): Promise<void> {
    return this.store.close();
  }

  private locate(reference: string): S3Location {
    try {
      return parseS3Reference(reference);
    } catch (e) {
      throw new StorageError((e as Error).message);
    }
  }

  private locateFile(reference: string): S3Location {
    const l = this.locate(reference);
    if (l.key === '') throw new StorageError(`${reference} names a bucket, not an object`);
    return l;
  }
}

function segmentsPrefix(key: string): string {
  return `${key}${APPEND_SEGMENTS_SUFFIX}/`;
}
