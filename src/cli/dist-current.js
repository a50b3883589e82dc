// Whether a checkout's dist/ was built from its sources as they are now, so `weir` can run the
// built JavaScript instead of the sources through tsx (bin/weir.js). Plain JavaScript: it runs
// before tsx is registered. The build (scripts/build.ts) writes the stamp; both sides count
// files the same way (sourceStamp), so they agree on what "the sources" are.
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';

/** The number of files under srcDir and the newest modification among them. */
export function sourceStamp(srcDir) {
  const files = readdirSync(srcDir, { recursive: true, withFileTypes: true }).filter((e) => e.isFile());
  let newestMtimeMs = 0;
  for (const e of files) newestMtimeMs = Math.max(newestMtimeMs, statSync(join(e.parentPath, e.name)).mtimeMs);
  return { files: files.length, newestMtimeMs };
}

/**
 * True when the stamp file exists and srcDir has as many files, none modified after the newest
 * the build saw: an edited, added or removed source (a checkout of another revision too) makes
 * dist/ stale. About a millisecond for ~250 files.
 */
export function distIsCurrent(srcDir, stampFile) {
  let stamp;
  try {
    stamp = JSON.parse(readFileSync(stampFile, 'utf8'));
  } catch {
    return false; // not built, or built before stamps
  }
  if (typeof stamp?.files !== 'number' || typeof stamp?.newestMtimeMs !== 'number') return false;
  const now = sourceStamp(srcDir);
  return now.files === stamp.files && now.newestMtimeMs <= stamp.newestMtimeMs;
}
