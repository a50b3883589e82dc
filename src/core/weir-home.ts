/**
 * weir's own directory on this machine: $WEIR_HOME, else <tmpdir>/weir-<uid>. What lives there
 * (the registry of running jobs, the lifecycle manager's state, cached job bundles) is each in a
 * subdirectory named by its user; this is the one place the root is decided.
 */
import { checkDirectoryPath } from './directory.ts';
import { mkdirSync, statSync } from 'node:fs';
import { tmpdir, userInfo } from 'node:os';
import { join } from 'node:path';
import { WeirError } from './errors.ts';

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

/**
 * `<weir home>/<sub>`, created private (0700). The default home is in the shared temporary
 * directory, where another user could create it first (after a reboot, say) and plant a job
 * registry entry (the CLI then sent its REST token to their server), a manager discovery file
 * or an application to run: so the default home and the subdirectory must belong to this user
 * and be writable by no one else, or this throws naming the directory. A WEIR_HOME given
 * explicitly is the user's choice and is not checked.
 */
export function privateHomeDir(sub: string): string {
  const home = weirHome();
  checkDirectoryPath(home, 'weir\'s home directory (WEIR_HOME)');
  const dir = join(home, sub);
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  const given = process.env.WEIR_HOME;
  if (given !== undefined && given !== '') return dir;
  const uid = process.getuid?.();
  for (const d of [home, dir]) {
    const st = statSync(d);
    const why = uid !== undefined && st.uid !== uid ? `belongs to another user (uid ${st.uid})` : (st.mode & 0o022) !== 0 ? `is writable by others (mode ${(st.mode & 0o777).toString(8)})` : undefined;
    if (why !== undefined) throw new WeirError('CONFIG', `weir's directory ${d} ${why}; remove it, or set WEIR_HOME to a directory of your own`);
  }
  return dir;
}
