/**
 * The web dashboard in a real browser: Debian's Chromium (installed by .ci/run, never a
 * downloaded build) driven by playwright-core, against a running job. The job's sink fails
 * once (an exception, a restart) and storage fails one checkpoint's state write (a failed
 * checkpoint with its reason). With WEIR_SCREENSHOTS=1 the screenshots go to docs/.
 */
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { chromium, type Browser, type Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { defineJob, type StreamExecutionEnvironment } from '../../src/index.ts';
import { MemoryCheckpointStorage } from '../../src/checkpoint/memory/memory-storage.ts';
import { StorageFaults } from '../../src/checkpoint/memory/faults.ts';
import { api, fixture, ROOT, start, tempDir, type Handle } from '../savepoint/helpers.ts';

const CHROMIUM = '/usr/bin/chromium';
const FLAGS = ['--headless', '--no-sandbox', '--disable-gpu', '--disable-background-networking', '--disable-component-update', '--no-first-run'];
const WAIT_MS = 60_000;

const tmp = tempDir('dashboard');
const shots = process.env['WEIR_SCREENSHOTS'] === '1' ? join(ROOT, 'docs', 'images') : join(tmp.dir, 'shots');
let browser: Browser;
let h: Handle;
let page: Page;
const problems: string[] = [];

beforeAll(async () => {
  mkdirSync(shots, { recursive: true });
  // Checkpoint 8's state write fails once: a failed checkpoint with a reason, the job goes on.
  // Well after the sink's one failure (record 400) and the restart: an earlier checkpoint could
  // still be pending when the task failed, and then failed as TASK_FAILURE before its write.
  const storage = new MemoryCheckpointStorage({ faults: new StorageFaults().inject({ kind: 'fail-write', match: /chk-8\/.*\.state$/, times: 1 }) });
  h = await start(fixture('observed-pipeline.ts'), {
    workers: 1, parallelism: 2, args: ['2000', 'fail-at=400'], checkpointStorage: storage,
    checkpoint: { interval: '250ms', tolerableFailures: 100 },
    restartStrategy: { type: 'fixed-delay', attempts: 3, delay: '100ms' },
  });
  browser = await chromium.launch({ executablePath: CHROMIUM, args: FLAGS, headless: true, timeout: WAIT_MS });
  page = await browser.newPage({ viewport: { width: 1400, height: 1000 } });
  const origin = new URL(h.base).origin;
  // The page may talk to its own server only (no CDN), and must run without script or CSP errors.
  page.on('request', (r) => { if (!r.url().startsWith(origin)) problems.push(`request to ${r.url()}`); });
  page.on('pageerror', (e) => problems.push(`page error: ${e.message}`));
  page.on('console', (m) => { if (m.type() === 'error' && !/Failed to load resource/.test(m.text())) problems.push(`console: ${m.text()}`); });
  await page.goto(`${origin}/`, { timeout: WAIT_MS });
}, 120_000);

afterAll(async () => {
  await browser?.close();
  if (h) {
    await api(`${h.base}?mode=cancel`, 'PATCH');
    await h.result;
  }
  tmp.cleanup();
});

describe('web dashboard in headless Chromium', () => {
  it('draws the job graph with records per vertex, busy colouring and the subtask view', async () => {
    await page.waitForFunction(() => document.querySelectorAll('#graph g.vertex').length === 2, undefined, { timeout: WAIT_MS });
    const names = await page.$$eval('#graph g.vertex', (gs) => gs.map((g) => g.getAttribute('data-name')));
    expect(names).toEqual(['events -> Timestamps/Watermarks', 'window sums -> sums sink']);
    // Live: the counts grow without a reload.
    const first = Number(await page.getAttribute('#graph g.vertex[data-name="window sums -> sums sink"]', 'data-records-in'));
    await page.waitForFunction((n) => Number(document.querySelector('#graph g.vertex[data-name="window sums -> sums sink"]')?.getAttribute('data-records-in')) > n + 100, first, { timeout: WAIT_MS });
    const fills = await page.$$eval('#graph g.vertex rect', (rs) => rs.map((r) => r.getAttribute('fill')));
    for (const f of fills) expect(f).toMatch(/^hsl\(\d+, 65%, \d+%\)$/);
    expect(await page.textContent('#job-name')).toContain('weir job');
    await page.click('#graph g.vertex[data-name="window sums -> sums sink"]');
    await page.waitForSelector('#subtasks tr:nth-child(3)', { timeout: WAIT_MS });
    expect(await page.textContent('#vertex-title')).toMatch(/window sums -> sums sink · back pressure (ok|low|high)/);
    expect(await page.$$eval('#subtasks tr', (rows) => rows.length)).toBe(3); // header + 2 subtasks
    await page.waitForFunction(() => [...document.querySelectorAll('#subtasks td')].some((td) => /^\d{4}-\d\d-\d\dT/.test(td.textContent ?? '')), undefined, { timeout: WAIT_MS });
    await page.screenshot({ path: join(shots, 'dashboard-overview.png'), fullPage: true });
  }, 120_000);

  it('fills the checkpoint table as checkpoints complete, shows a failed one with its reason, and plots a point per checkpoint', async () => {
    await page.click('#tabs button[data-tab="checkpoints"]');
    await page.waitForFunction(() => document.querySelectorAll('#cp-history tr[data-cid]').length >= 4, undefined, { timeout: WAIT_MS });
    const n = await page.$$eval('#cp-history tr[data-cid]', (rows) => rows.length);
    await page.waitForFunction((k) => document.querySelectorAll('#cp-history tr[data-cid]').length >= k + 2, n, { timeout: WAIT_MS });
    await page.waitForSelector('#cp-history tr.FAILED-row[data-cid="8"]', { timeout: WAIT_MS });
    const failure = await page.textContent('#cp-history tr.FAILED-row[data-cid="8"] td.failure');
    expect(failure).toMatch(/^CHECKPOINT_ASYNC_EXCEPTION: /);
    // One point per completed checkpoint: the chart and the table come from two requests of one
    // refresh, so they agree once no checkpoint completed between them.
    await page.waitForFunction(() => Number(document.getElementById('trend-duration')!.dataset['points']) === document.querySelectorAll('#cp-history tr.COMPLETED-row').length, undefined, { timeout: WAIT_MS });
    const { points, completed, canvases } = await page.evaluate(() => ({
      points: Number(document.getElementById('trend-duration')!.dataset['points']),
      completed: document.querySelectorAll('#cp-history tr.COMPLETED-row').length,
      canvases: document.querySelectorAll('#trend-duration canvas, #trend-size canvas').length,
    }));
    expect(points).toBe(completed);
    expect(points).toBeGreaterThanOrEqual(4);
    expect(canvases).toBe(2);
    const counts = (await api(`${h.base}/checkpoints`)).body['counts'];
    expect(counts.failed).toBeGreaterThanOrEqual(1);
    await page.screenshot({ path: join(shots, 'dashboard-checkpoints.png') });
  }, 120_000);

  it('draws the phases of one checkpoint per subtask as a timeline', async () => {
    const cid = await page.getAttribute('#cp-history tr.COMPLETED-row', 'data-cid');
    await page.click(`#cp-history tr[data-cid="${cid}"]`);
    await page.waitForSelector('#timeline rect.phase', { state: 'attached', timeout: WAIT_MS }); // a 0 ms phase has no width
    const phases = await page.$$eval('#timeline rect.phase', (rs) => rs.map((r) => r.getAttribute('data-phase')));
    // Four subtasks (two vertices, parallelism 2), four phases each.
    expect(phases).toHaveLength(16);
    expect(phases.slice(0, 4)).toEqual(['start delay', 'alignment', 'sync', 'async']);
    await page.locator('#cp-timeline').screenshot({ path: join(shots, 'dashboard-timeline.png') });
  }, 120_000);

  it('lists the failure of the first attempt on the exceptions tab and the settings on the configuration tab', async () => {
    await page.click('#tabs button[data-tab="exceptions"]');
    await page.waitForSelector('#exceptions .exception', { timeout: WAIT_MS });
    expect(await page.textContent('#exceptions .exception')).toContain('sink failed on purpose at record 400');
    await page.click('#tabs button[data-tab="configuration"]');
    await page.waitForFunction(() => (document.getElementById('config')?.textContent ?? '').includes('checkpoints: interval'), undefined, { timeout: WAIT_MS });
    expect(await page.textContent('#config')).toContain('exactly_once');
    expect(await page.textContent('#config')).toContain('checkpoints: interval250 ms'); // a duration with its unit
    expect(problems).toEqual([]);
  }, 120_000);
  it('shows a finished input\'s watermark as the end of input and keeps refreshing (a bounded input unioned with a live one)', async () => {
    // A finished source's watermark is MAX_SAFE_INTEGER, which no Date can show: formatting it
    // threw, left the vertex's panel empty and stopped every refresh with "Invalid time value".
    const job = defineJob((env: StreamExecutionEnvironment) => {
      const bounded = env.fromCollection([1, 2, 3], { name: 'bounded input', timestamp: (v) => v });
      const live = env.fromGenerator((i) => i, { ratePerSecond: 100 }).name('live input').uid('live');
      bounded.union(live).map((v) => v).name('merged').collect('out');
    });
    const second = await start(job, { workers: 1, parallelism: 1 });
    const p2 = await browser.newPage({ viewport: { width: 1400, height: 1000 } });
    const pageProblems: string[] = [];
    p2.on('pageerror', (e) => pageProblems.push(`page error: ${e.message}`));
    try {
      await p2.goto(`${new URL(second.base).origin}/`, { timeout: WAIT_MS });
      await p2.waitForSelector('#graph g.vertex[data-name="bounded input"]', { timeout: WAIT_MS });
      await p2.click('#graph g.vertex[data-name="bounded input"]');
      await p2.waitForFunction(() => [...document.querySelectorAll('#vertex-detail td')].some((td) => td.textContent === 'end of input'), undefined, { timeout: WAIT_MS });
      // Still refreshing after the click: the live mark is not stale.
      await p2.waitForFunction(() => /^live · /.test(document.getElementById('live')?.textContent ?? ''), undefined, { timeout: WAIT_MS });
      expect(await p2.getAttribute('#live', 'class')).not.toContain('stale');
      expect(pageProblems).toEqual([]);
    } finally {
      await p2.close();
      await api(`${second.base}?mode=cancel`, 'PATCH');
      await second.result;
    }
  }, 120_000);
});
