// Start-up of two weir trees side by side (e.g. main and a branch, each with node_modules and
// a built dist/): `weir run examples/word-count.ts -w 1|2 -- 10` from each checkout and from a
// copy of each package, all variants alternated; prints medians of wall and CPU time (all
// threads) per variant, and the machine's load. The startup suite (bench/startup.ts) measures
// one tree; this compares two, by hand:
//   node bench/startup-compare.mjs <before-dir> <after-dir> [runs=5]
import { spawnSync } from 'node:child_process';
import { cpSync, mkdirSync, mkdtempSync, readFileSync, symlinkSync, writeFileSync, rmSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
const roots = { before: process.argv[2], after: process.argv[3] };
if (!roots.before || !roots.after) throw new Error('usage: node bench/startup-compare.mjs <before-dir> <after-dir> [runs]');
const cpu = () => { const s = readFileSync('/proc/self/stat', 'utf8'); const f = s.slice(s.lastIndexOf(')') + 2).split(' '); return (Number(f[13]) + Number(f[14])) * 10; };
function pkg(root) {
  const dir = mkdtempSync(join(tmpdir(), 'weir-cmp-')); const p = join(dir, 'weir'); mkdirSync(p);
  for (const x of ['bin', 'dist', 'package.json']) cpSync(join(root, x), join(p, x), { recursive: true });
  symlinkSync(join(root, 'node_modules'), join(p, 'node_modules'));
  const app = join(dir, 'app'); mkdirSync(join(app, 'node_modules'), { recursive: true }); symlinkSync(p, join(app, 'node_modules/weir'));
  writeFileSync(join(app, 'package.json'), '{"type":"module"}'); cpSync(join(root, 'examples/word-count.ts'), join(app, 'word-count.ts'));
  return { dir, bin: join(p, 'bin/weir.js'), job: join(app, 'word-count.ts'), cwd: app };
}
const V = [];
const tmp = [];
for (const [name, root] of Object.entries(roots)) {
  const p = pkg(root); tmp.push(p.dir);
  for (const w of [1, 2]) {
    V.push({ key: `${name} checkout w${w}`, bin: join(root, 'bin/weir.js'), job: join(root, 'examples/word-count.ts'), cwd: root, w });
    V.push({ key: `${name} package w${w}`, bin: p.bin, job: p.job, cwd: p.cwd, w });
  }
}
const runs = Number(process.argv[4] ?? 5);
const res = Object.fromEntries(V.map((v) => [v.key, []]));
const loads = [];
for (let r = -1; r < runs; r++) {
  for (let i = 0; i < V.length; i++) {
    const v = V[(i + Math.max(r, 0)) % V.length];
    loads.push(loadavg()[0]);
    const c0 = cpu(); const t0 = performance.now();
    const x = spawnSync(process.execPath, [v.bin, 'run', v.job, '-w', String(v.w), '--rest-port', '0', '--', '10'], { cwd: v.cwd, encoding: 'utf8' });
    const wall = performance.now() - t0; const c = cpu() - c0;
    if (x.status !== 0) { console.error(v.key, x.stderr); process.exit(1); }
    if (r >= 0) res[v.key].push([wall, c]);
  }
}
for (const d of tmp) rmSync(d, { recursive: true, force: true });
const med = (a) => { const s = [...a].sort((x, y) => x - y); const m = s.length >> 1; return s.length % 2 ? s[m] : (s[m - 1] + s[m]) / 2; };
for (const k of Object.keys(res)) console.log(k.padEnd(22), 'wall', Math.round(med(res[k].map((x) => x[0]))), 'ms  cpu', Math.round(med(res[k].map((x) => x[1]))), 'ms  walls', res[k].map((x) => Math.round(x[0])).join(' '));
console.log('load', Math.min(...loads).toFixed(1), '-', Math.max(...loads).toFixed(1), 'median', med(loads).toFixed(1));
