/** Test helpers: the fenced code blocks of a Markdown file, with the heading they sit under. */
import { readFileSync } from 'node:fs';

export interface CodeBlock {
  /** The info string after the opening fence ('' for none). */
  readonly lang: string;
  readonly code: string;
  /** The nearest heading above the block, without its #s. */
  readonly section: string;
  /** 1-based line of the opening fence. */
  readonly line: number;
}

export function readmeBlocks(path: string): CodeBlock[] {
  const lines = readFileSync(path, 'utf8').split('\n');
  const blocks: CodeBlock[] = [];
  let section = '';
  for (let i = 0; i < lines.length; i++) {
    const heading = /^#{1,6}\s+(.*)$/.exec(lines[i]!);
    if (heading) section = heading[1]!.trim();
    const fence = /^```(.*)$/.exec(lines[i]!);
    if (!fence) continue;
    const start = i;
    const body: string[] = [];
    for (i++; i < lines.length && !lines[i]!.startsWith('```'); i++) body.push(lines[i]!);
    if (i >= lines.length) throw new Error(`${path}:${start + 1}: code block never closed`);
    blocks.push({ lang: fence[1]!.trim(), code: body.join('\n') + '\n', section, line: start + 1 });
  }
  return blocks;
}
