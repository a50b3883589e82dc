/**
 * The control API's token, read from a file (--rest-token-file) rather than given on the
 * command line, where every user of the machine could read it in the process list. The
 * token itself never appears in a message.
 */
import { readFileSync } from 'node:fs';
import { CliError } from './args.ts';

export function readTokenFile(path: string): string {
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (e) {
    throw new CliError(`--rest-token-file ${path}: cannot read it (${(e as NodeJS.ErrnoException).code ?? (e as Error).message})`);
  }
  const token = text.trim();
  if (token === '') throw new CliError(`--rest-token-file ${path}: the file is empty`);
  if (/\s/.test(token)) throw new CliError(`--rest-token-file ${path}: the token must be one word (no spaces or line breaks inside)`);
  return token;
}
