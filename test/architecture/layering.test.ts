/**
 * Imports run only downward through the layers of the design (shared/design.md §6, issue 8):
 * from the bottom, core; state and checkpoint; runtime and connectors; graph; api; cluster;
 * observe; lifecycle; cli. A folder may import its own layer and those below, type-only imports
 * included. Every folder under src/ must have a layer (a new one is added here on purpose).
 * src/index.ts, the package entry, sits above everything.
 */
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

const SRC = fileURLToPath(new URL('../../src/', import.meta.url));

const LAYERS: Readonly<Record<string, number>> = {
  core: 0,
  state: 1,
  checkpoint: 1,
  runtime: 2,
  connectors: 2,
  graph: 3,
  api: 4,
  cluster: 5,
  observe: 6,
  lifecycle: 7,
  cli: 8,
};

function sourceFiles(dir: string): string[] {
  const out: string[] = [];
  for (const name of readdirSync(dir)) {
    const p = join(dir, name);
    if (statSync(p).isDirectory()) out.push(...sourceFiles(p));
    else if (/\.(ts|js|mts)$/.test(name)) out.push(p);
  }
  return out;
}

/** Every module specifier of static imports/exports (type-only too) and dynamic imports. */
export function specifiers(text: string): string[] {
  const out: string[] = [];
  const re = /(?:^|[\s;])(?:import|export)\s[^'";]*?\sfrom\s*['"]([^'"]+)['"]|(?:^|[\s;])import\s*['"]([^'"]+)['"]|import\(\s*['"]([^'"]+)['"]\s*\)/g;
  for (const m of text.matchAll(re)) out.push((m[1] ?? m[2] ?? m[3])!);
  return out;
}

/** The top folder under src/ a path is in, or undefined for files directly in src/. */
function folderOf(absPath: string): string | undefined {
  const rel = relative(SRC, absPath).split(/[\\/]/);
  return rel.length > 1 ? rel[0] : undefined;
}

function violations(): string[] {
  const bad: string[] = [];
  for (const file of sourceFiles(SRC)) {
    const from = folderOf(file);
    if (from === undefined) continue; // the package entry
    const fromLayer = LAYERS[from];
    if (fromLayer === undefined) {
      bad.push(`src/${relative(SRC, file)}: folder "${from}" has no layer; add it to LAYERS in this test`);
      continue;
    }
    for (const spec of specifiers(readFileSync(file, 'utf8'))) {
      if (!spec.startsWith('.')) continue; // packages and node: builtins
      const target = resolve(dirname(file), spec);
      const to = folderOf(target);
      const toLayer = to === undefined ? Number.POSITIVE_INFINITY : LAYERS[to];
      if (toLayer === undefined || toLayer > fromLayer) bad.push(`src/${relative(SRC, file)} imports ${spec} (${from} -> ${to ?? 'src/'})`);
    }
  }
  return bad.sort();
}

describe('layering', () => {
  it('every import in src/ runs downward (or within a layer)', () => {
    expect(violations()).toEqual([]);
  });

  it('finds static, type-only, re-export and dynamic imports', () => {
    const text = [
      "import { a } from './a.ts';",
      "import type { B } from '../b.ts';",
      "export { c } from './c.ts';",
      "export type * from '../d.ts';",
      "import './side-effect.ts';",
      "const m = await import('../e.ts');",
      'import {\n  f,\n  g,\n} from "./fg.ts";',
    ].join('\n');
    expect(specifiers(text)).toEqual(['./a.ts', '../b.ts', './c.ts', '../d.ts', './side-effect.ts', '../e.ts', './fg.ts']);
  });
});
