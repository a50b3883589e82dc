/** Test helpers that read what a file sink committed to its output directory. */
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';

/** All committed lines (visible `.jsonl` part files), sorted. */
export function committedLines(dir: string): string[] {
  if (!existsSync(dir)) return [];
  const lines: string[] = [];
  for (const f of readdirSync(dir).sort()) {
    if (f.startsWith('.') || !f.endsWith('.jsonl')) continue;
    for (const l of readFileSync(join(dir, f), 'utf8').split('\n')) if (l !== '') lines.push(l);
  }
  return lines.sort();
}
