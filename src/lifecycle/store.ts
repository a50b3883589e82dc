/**
 * Where the manager keeps what survives it: per application the desired spec (with its
 * generation and requests) and the status, one JSON file each, replaced atomically (temp file,
 * fsync, rename) so a manager killed mid-write leaves the old or the new file, never half of one.
 */
import { closeSync, fsyncSync, mkdirSync, openSync, readdirSync, readFileSync, renameSync, rmSync, writeSync } from 'node:fs';
import { join } from 'node:path';
import { WeirError } from '../core/errors.ts';
import type { AppStatus, Desired } from './status.ts';

export interface AppStore {
  apps(): string[];
  loadDesired(app: string): Desired | undefined;
  saveDesired(app: string, desired: Desired): void;
  loadStatus(app: string): AppStatus | undefined;
  saveStatus(app: string, status: AppStatus): void;
  /** Forgets a deleted application (its savepoints stay where they are). */
  forget(app: string): void;
}

export class FileAppStore implements AppStore {
  constructor(private readonly dir: string) {
    mkdirSync(join(dir, 'apps'), { recursive: true });
  }

  appDir(app: string): string {
    return join(this.dir, 'apps', app);
  }

  apps(): string[] {
    return readdirSync(join(this.dir, 'apps'), { withFileTypes: true })
      .filter((e) => e.isDirectory() && readDir(join(this.dir, 'apps', e.name)).includes('desired.json'))
      .map((e) => e.name)
      .sort();
  }

  loadDesired(app: string): Desired | undefined {
    return readJson(join(this.appDir(app), 'desired.json')) as Desired | undefined;
  }

  saveDesired(app: string, desired: Desired): void {
    writeAtomic(join(this.appDir(app), 'desired.json'), desired);
  }

  loadStatus(app: string): AppStatus | undefined {
    return readJson(join(this.appDir(app), 'status.json')) as AppStatus | undefined;
  }

  saveStatus(app: string, status: AppStatus): void {
    writeAtomic(join(this.appDir(app), 'status.json'), status);
  }

  forget(app: string): void {
    rmSync(join(this.appDir(app), 'desired.json'), { force: true });
  }
}

function readDir(dir: string): string[] {
  try {
    return readdirSync(dir);
  } catch {
    return [];
  }
}

function readJson(file: string): unknown {
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw new WeirError('STORAGE', `cannot read ${file}: ${(e as Error).message}`);
  }
  try {
    return JSON.parse(text);
  } catch (e) {
    throw new WeirError('STORAGE', `${file} is not valid JSON (${(e as Error).message}); it was written atomically, so something else changed it`);
  }
}

function writeAtomic(file: string, value: unknown): void {
  mkdirSync(join(file, '..'), { recursive: true });
  const tmp = `${file}.${process.pid}.tmp`;
  // Only the manager's user reads a spec: its configuration may hold credentials.
  const fd = openSync(tmp, 'w', 0o600);
  try {
    writeSync(fd, JSON.stringify(value, null, 1));
    fsyncSync(fd);
  } finally {
    closeSync(fd);
  }
  renameSync(tmp, file);
}
