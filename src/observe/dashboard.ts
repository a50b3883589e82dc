/**
 * The web dashboard's files, served by `weir run` on its REST port: plain HTML, CSS and one
 * script (no build step, nothing fetched from elsewhere: `npx weir run` serves what the package
 * ships), plus uPlot's browser bundle from its npm package for the trend charts. The page reads
 * the REST API's Flink-shaped routes, so it shows nothing the API does not.
 */
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import type { ServerResponse } from 'node:http';

const require = createRequire(import.meta.url);
const WEB_DIR = new URL('./web/', import.meta.url);

interface Asset {
  readonly path: () => string | URL;
  readonly type: string;
}

/** Everything the dashboard serves, by request path (no other file can be asked for). */
const ASSETS: Record<string, Asset> = {
  '': { path: () => new URL('index.html', WEB_DIR), type: 'text/html; charset=utf-8' },
  'web/app.js': { path: () => new URL('app.js', WEB_DIR), type: 'text/javascript; charset=utf-8' },
  'web/style.css': { path: () => new URL('style.css', WEB_DIR), type: 'text/css; charset=utf-8' },
  'web/uPlot.iife.min.js': { path: () => require.resolve('uplot/dist/uPlot.iife.min.js'), type: 'text/javascript; charset=utf-8' },
  'web/uPlot.min.css': { path: () => require.resolve('uplot/dist/uPlot.min.css'), type: 'text/css; charset=utf-8' },
};

const cache = new Map<string, Buffer>();

/** Serves one dashboard file; 404 for anything else under /web. */
export function serveDashboard(parts: readonly string[], res: ServerResponse): void {
  const key = parts.join('/');
  const asset = ASSETS[key];
  if (asset === undefined) {
    const text = JSON.stringify({ errors: [`no dashboard file /${key}`] });
    res.writeHead(404, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(text) });
    res.end(text);
    return;
  }
  let body = cache.get(key);
  if (body === undefined) cache.set(key, (body = readFileSync(asset.path())));
  res.writeHead(200, {
    'content-type': asset.type,
    'content-length': body.length,
    // Only this server's own files and API: no CDN, no inline code.
    'content-security-policy': "default-src 'self'; img-src 'self' data:; style-src 'self'",
    'cache-control': 'no-cache',
  });
  res.end(body);
}
