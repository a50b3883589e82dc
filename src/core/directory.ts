/**
 * Directories: one weir is told to use (a flag, a setting, an environment variable) that cannot
 * be one is refused at the start with a line naming what gave it, instead of the OS's ENOTDIR
 * or EEXIST from a mkdir somewhere later; and a directory's entries made durable (fsync).
 */
import { existsSync, statSync } from 'node:fs';
import { open } from 'node:fs/promises';
import { dirname, resolve } from 'node:path';
import { WeirError } from './errors.ts';

/** Throws CONFIG when `path`, or the nearest part of it that exists, is not a directory; `what` names its source ("--checkpoint-dir"). */
export function checkDirectoryPath(path: string, what: string): void {
  let p = resolve(path);
  // Bounded by the path's depth: dirname of the root is the root.
  for (;;) {
    if (existsSync(p)) {
      if (statSync(p).isDirectory()) return;
      const why = p === resolve(path) ? 'is a file, not a directory' : `is below ${p}, a file`;
      throw new WeirError('CONFIG', `${what} ${path} ${why}`);
    }
    const up = dirname(p);
    if (up === p) return;
    p = up;
  }
}

/** Makes a directory's entries (renames, new files) durable. */
export async function fsyncDirectory(dir: string): Promise<void> {
  const d = await open(dir, 'r');
  try {
    await d.sync();
  } finally {
    await d.close();
  }
}
