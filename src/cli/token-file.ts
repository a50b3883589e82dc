/**
 * The control API's token, read from a file (--rest-token-file) rather than given on the
 * command line, where every user of the machine could read it in the process list. The
 * token itself never appears in a message.
 */
import { closeSync, fstatSync, openSync, readFileSync } from 'node:fs';
import { CliError } from './args.ts';

export function readTokenFile(path: string): string {
  let text: string;
  let fd: number | undefined;
  try {
    fd = openSync(path, 'r');
    // Another user able to read it has the token; able to write it, they choose it.
    const st = fstatSync(fd);
    const uid = process.getuid?.();
    if (uid !== undefined && st.uid !== uid) throw new CliError(`--rest-token-file ${path}: it belongs to another user (uid ${st.uid}); a token file must be its user's own`);
    if ((st.mode & 0o077) !== 0) throw new CliError(`--rest-token-file ${path}: other users can read or write it (mode ${(st.mode & 0o777).toString(8)}); make it private: chmod 600 ${path}`);
    text = readFileSync(fd, 'utf8');
  } catch (e) {
    if (e instanceof CliError) throw e;
    throw new CliError(`--rest-token-file ${path}: cannot read it (${(e as NodeJS.ErrnoException).code ?? (e as Error).message})`);
  } finally {
    if (fd !== undefined) closeSync(fd);
  }
  const token = text.trim();
  if (token === '') throw new CliError(`--rest-token-file ${path}: the file is empty`);
  if (/\s/.test(token)) throw new CliError(`--rest-token-file ${path}: the token must be one word (no spaces or line breaks inside)`);
  return token;
}
