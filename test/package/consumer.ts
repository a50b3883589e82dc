/**
 * A new project outside the repository that depends on a packed weir tarball, installable with
 * `npm ci --offline`: its lockfile pins weir to the tarball and every other package to the
 * version and integrity in weir's own lockfile, whose tarballs the repository's `npm ci` put
 * in npm's cache (with a lockfile npm fetches tarballs by integrity and no registry metadata).
 */
import { createHash } from 'node:crypto';
import { readFileSync, writeFileSync } from 'node:fs';
import { basename, join } from 'node:path';

interface LockEntry {
  readonly version: string;
  readonly dependencies?: Record<string, string>;
  readonly optionalDependencies?: Record<string, string>;
  readonly [field: string]: unknown;
}

export function writeConsumerProject(repo: string, dir: string, tarball: string, files: Record<string, string>): void {
  const repoLock = JSON.parse(readFileSync(join(repo, 'package-lock.json'), 'utf8')) as { packages: Record<string, LockEntry> };
  const weir = JSON.parse(readFileSync(join(repo, 'package.json'), 'utf8')) as { version: string; dependencies: Record<string, string>; bin: Record<string, string> };
  const entry = (name: string): LockEntry => {
    const e = repoLock.packages[`node_modules/${name}`];
    if (e === undefined) throw new Error(`package-lock.json has no entry for ${name}`);
    return e;
  };
  const dependencies = { weir: `file:${basename(tarball)}` };
  // The user's own TypeScript toolchain, at the versions the repository tests with.
  const devDependencies = { typescript: entry('typescript').version, '@types/node': entry('@types/node').version };
  const pkg = { name: 'my-weir-app', version: '1.0.0', private: true, type: 'module', dependencies, devDependencies };

  const packages: Record<string, unknown> = {
    '': { name: pkg.name, version: pkg.version, dependencies, devDependencies },
    'node_modules/weir': {
      version: weir.version,
      resolved: `file:${basename(tarball)}`,
      integrity: `sha512-${createHash('sha512').update(readFileSync(tarball)).digest('base64')}`,
      dependencies: weir.dependencies,
      bin: weir.bin,
    },
  };
  const todo = [...Object.keys(weir.dependencies), ...Object.keys(devDependencies)];
  const seen = new Set<string>();
  for (let name = todo.pop(); name !== undefined; name = todo.pop()) {
    if (seen.has(name)) continue;
    seen.add(name);
    const e = entry(name);
    packages[`node_modules/${name}`] = e;
    todo.push(...Object.keys({ ...e.dependencies, ...e.optionalDependencies }));
    // A version of a dependency nested under this package (lmdb keeps its own msgpackr 1.x beside
    // weir's 2.x): copied as it is, and what it depends on is looked up at the top level too.
    for (const [path, nested] of Object.entries(repoLock.packages)) {
      if (!path.startsWith(`node_modules/${name}/node_modules/`)) continue;
      packages[path] = nested;
      todo.push(...Object.keys({ ...nested.dependencies, ...nested.optionalDependencies }).filter((d) => repoLock.packages[`${path}/node_modules/${d}`] === undefined));
    }
  }
  writeFileSync(join(dir, 'package.json'), JSON.stringify(pkg, null, 2));
  writeFileSync(join(dir, 'package-lock.json'), JSON.stringify({ name: pkg.name, version: pkg.version, lockfileVersion: 3, requires: true, packages }, null, 2));
  for (const [name, text] of Object.entries(files)) writeFileSync(join(dir, name), text);
}
