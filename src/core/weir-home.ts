/**
 * weir's own directory on this machine: $WEIR_HOME, else <tmpdir>/weir-<uid>. What lives there
 * (the registry of running jobs, the lifecycle manager's state, cached job bundles) is each in a
 * subdirectory named by its user; this is the one place the root is decided.
 */
import { tmpdir, userInfo } from 'node:os';
import { join } from 'node:path';

export function weirHome(): string {
  const given = process.env.WEIR_HOME;
  if (given !== undefined && given !== '') return given;
  return join(tmpdir(), `weir-${safeUid()}`);
}

function safeUid(): string {
  try {
    return String(userInfo().uid);
  } catch {
    return 'user'; // no user database (some containers)
  }
}
