/** src/core is the bottom layer: it imports nothing from the rest of src. */
import { readdirSync, readFileSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { expect, it } from 'vitest';

const core = fileURLToPath(new URL('../../src/core', import.meta.url));

function files(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) => (e.isDirectory() ? files(join(dir, e.name)) : [join(dir, e.name)]));
}

it('src/core imports only src/core and node: modules', () => {
  const outside: string[] = [];
  for (const f of files(core)) {
    for (const m of readFileSync(f, 'utf8').matchAll(/\bfrom '([^']+)'/g)) {
      const spec = m[1]!;
      if (spec.startsWith('node:')) continue;
      const target = resolve(dirname(f), spec);
      if (!spec.startsWith('.') || relative(core, target).startsWith('..')) outside.push(`${relative(core, f)} imports ${spec}`);
    }
  }
  expect(outside).toEqual([]);
});
