// weir dashboard: reads the REST API (Flink's routes) once a second and redraws. Plain script,
// no build step; uPlot (window.uPlot) draws the trend charts. Every value is inserted as text
// (esc), never as markup, so a job or operator name cannot inject anything.
'use strict';

const REFRESH_MS = 1000;
const state = { jobId: undefined, tab: 'overview', vertex: undefined, checkpoint: undefined, charts: {} };

const $ = (id) => document.getElementById(id);
const esc = (v) => String(v ?? '').replace(/[&<>"']/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[c]);
// A name set by the job (job, operator, task): isolated from the text around it, so bidi controls
// in it cannot reorder what follows (a state badge after a name with U+202E read backwards).
const escName = (v) => `<bdi>${esc(v)}</bdi>`;
const fmtInt = (n) => (typeof n === 'number' ? Math.round(n).toLocaleString('en-US') : '–');
const fmtRate = (n) => (typeof n === 'number' ? (n >= 100 ? fmtInt(n) : n.toFixed(1)) + '/s' : '–');
const fmtMs = (n) => (typeof n !== 'number' || n < 0 ? '–' : n < 1000 ? `${Math.round(n)} ms` : `${(n / 1000).toFixed(2)} s`);
const fmtBytes = (n) => {
  if (typeof n !== 'number' || n < 0) return '–';
  const u = ['B', 'KiB', 'MiB', 'GiB', 'TiB'];
  let i = 0;
  while (n >= 1024 && i < u.length - 1) { n /= 1024; i++; }
  return `${i === 0 ? Math.round(n) : n.toFixed(1)} ${u[i]}`;
};
const fmtTime = (t) => (typeof t === 'number' && t > 0 ? new Date(t).toLocaleTimeString() : '–');
// A finished input's watermark is MAX_SAFE_INTEGER (no Date reaches it); any other number a Date
// cannot show is shown as the number, never thrown: a throw here left the whole refresh undone.
const fmtWatermark = (v) => {
  const n = Number(v);
  if (n <= Number.MIN_SAFE_INTEGER) return 'no watermark';
  if (n >= Number.MAX_SAFE_INTEGER) return 'end of input';
  const d = new Date(n);
  return Number.isNaN(d.getTime()) ? String(v) : d.toISOString();
};
/** Checkpoint settings as the Configuration tab shows them: durations with units, "off" for the never-interval. */
const fmtConfigValue = (k, v) => {
  if (k === 'interval' && typeof v === 'number' && v >= Number.MAX_SAFE_INTEGER) return 'off';
  if ((k === 'interval' || k === 'timeout' || k === 'min_pause') && typeof v === 'number') return fmtMs(v);
  return typeof v === 'object' ? JSON.stringify(v) : v;
};

async function api(path) {
  const res = await fetch(path, { signal: AbortSignal.timeout(5000) });
  if (!res.ok) throw new Error(`${path}: HTTP ${res.status}`);
  return res.json();
}

// ---- tabs

for (const b of document.querySelectorAll('#tabs button')) {
  b.addEventListener('click', () => {
    state.tab = b.dataset.tab;
    for (const x of document.querySelectorAll('#tabs button')) x.classList.toggle('active', x === b);
    for (const s of document.querySelectorAll('.tab')) s.classList.toggle('hidden', s.id !== `tab-${state.tab}`);
    refresh();
  });
}

// ---- job list and header

function renderJobs(jobs) {
  if (state.jobId === undefined && jobs.length > 0) state.jobId = jobs[0].jid;
  $('jobs').innerHTML = jobs.map((j) => `<a href="#" data-jid="${esc(j.jid)}" class="${j.jid === state.jobId ? 'active' : ''}">${escName(j.name)} <span class="state ${esc(j.state)}">${esc(j.state)}</span></a>`).join('');
  for (const a of $('jobs').querySelectorAll('a')) a.addEventListener('click', (e) => { e.preventDefault(); state.jobId = a.dataset.jid; refresh(); });
}

// A job run with --record-counters off counts no records: show '–', not 0 (Flink's "-complete": false).
function uncounted(vertices) {
  for (const v of vertices) {
    if (v.metrics['read-records-complete'] !== false) continue;
    v.metrics['read-records'] = undefined;
    v.metrics['write-records'] = undefined;
    v.numRecordsInPerSecond = undefined;
    v.numRecordsOutPerSecond = undefined;
  }
}

function renderHead(job, metrics) {
  const m = Object.fromEntries(metrics.map((x) => [x.id, x.value]));
  $('job-head').innerHTML = `<h2 id="job-name">${escName(job.name)} <span class="state ${esc(job.state)}">${esc(job.state)}</span></h2>
    <div class="cards">
      <div class="card">job id<b class="mono">${esc(job.jid.slice(0, 8))}</b></div>
      <div class="card">uptime<b>${fmtMs(Number(m.uptime))}</b></div>
      <div class="card">restarts<b id="num-restarts">${esc(m.numRestarts)}</b></div>
      <div class="card">records in<b>${job.vertices.some((v) => v.metrics['read-records-complete'] === false) ? 'not counted' : fmtInt(job.vertices.filter((v) => v.inputs.length === 0).reduce((a, v) => a + v.metrics['read-records'], 0))}</b></div>
      <div class="card">last checkpoint<b>${fmtMs(Number(m.lastCheckpointDuration))} · ${fmtBytes(Number(m.lastCheckpointSize))}</b></div>
    </div>`;
}

// ---- job graph: vertices in columns by depth, coloured by busy time, outlined by back pressure

function layout(vertices) {
  const byId = new Map(vertices.map((v) => [v.id, v]));
  const depth = new Map();
  const depthOf = (v, seen = new Set()) => {
    if (depth.has(v.id)) return depth.get(v.id);
    if (seen.has(v.id)) return 0;
    seen.add(v.id);
    const d = v.inputs.length === 0 ? 0 : 1 + Math.max(...v.inputs.map((i) => (byId.has(i.id) ? depthOf(byId.get(i.id), seen) : 0)));
    depth.set(v.id, d);
    return d;
  };
  const cols = [];
  for (const v of vertices) (cols[depthOf(v)] ??= []).push(v);
  const pos = new Map();
  const W = 230, H = 92, GX = 70, GY = 24;
  cols.forEach((col, c) => col.forEach((v, r) => pos.set(v.id, { x: 16 + c * (W + GX), y: 16 + r * (H + GY), w: W, h: H })));
  const width = 32 + cols.length * (W + GX) - GX;
  const height = 32 + Math.max(...cols.map((c) => c.length)) * (H + GY) - GY;
  return { pos, width, height };
}

function busyColour(busyMs) {
  const f = Math.max(0, Math.min(1, (busyMs ?? 0) / 1000));
  return `hsl(${Math.round(120 - 120 * f)}, 65%, ${Math.round(88 - 18 * f)}%)`;
}

function renderGraph(vertices) {
  const { pos, width, height } = layout(vertices);
  let edges = '';
  for (const v of vertices) {
    for (const i of v.inputs) {
      const a = pos.get(i.id), b = pos.get(v.id);
      if (!a || !b) continue;
      const x1 = a.x + a.w, y1 = a.y + a.h / 2, x2 = b.x, y2 = b.y + b.h / 2;
      edges += `<path d="M${x1},${y1} C${x1 + 35},${y1} ${x2 - 35},${y2} ${x2},${y2}" fill="none" stroke="#8a94a6" stroke-width="1.5" marker-end="url(#arrow)"/>`;
      edges += `<text x="${(x1 + x2) / 2 - 24}" y="${(y1 + y2) / 2 - 4}" fill="#5c6677">${esc(i.ship_strategy)}</text>`;
    }
  }
  let boxes = '';
  for (const v of vertices) {
    const p = pos.get(v.id);
    const bp = v.backPressuredTimeMsPerSecondMax ?? 0;
    const stroke = bp > 500 ? '#1d2330' : bp > 100 ? '#5c6677' : '#b6bfcc';
    boxes += `<g class="vertex" data-vid="${esc(v.id)}" data-name="${esc(v.name)}" data-records-in="${v.metrics['read-records'] ?? ''}" data-records-out="${v.metrics['write-records'] ?? ''}">
      <rect x="${p.x}" y="${p.y}" width="${p.w}" height="${p.h}" rx="5" fill="${busyColour(v.busyTimeMsPerSecondMax)}" stroke="${stroke}" stroke-width="${bp > 100 ? 3 : 1}"/>
      <text x="${p.x + 8}" y="${p.y + 17}" font-weight="600">${esc(v.name.length > 34 ? v.name.slice(0, 33) + '…' : v.name)}</text>
      <text x="${p.x + 8}" y="${p.y + 35}">parallelism ${v.parallelism} · ${esc(v.status)}</text>
      <text x="${p.x + 8}" y="${p.y + 52}">in ${fmtInt(v.metrics['read-records'])} (${fmtRate(v.numRecordsInPerSecond)})</text>
      <text x="${p.x + 8}" y="${p.y + 68}">out ${fmtInt(v.metrics['write-records'])} (${fmtRate(v.numRecordsOutPerSecond)})</text>
      <text x="${p.x + 8}" y="${p.y + 84}">busy ${Math.round((v.busyTimeMsPerSecondMax ?? 0) / 10)}% · backpressured ${Math.round(bp / 10)}%</text>
    </g>`;
  }
  $('graph').innerHTML = `<svg width="${width}" height="${height}" xmlns="http://www.w3.org/2000/svg"><defs><marker id="arrow" viewBox="0 0 10 10" refX="10" refY="5" markerWidth="7" markerHeight="7" orient="auto"><path d="M0,0 L10,5 L0,10 z" fill="#8a94a6"/></marker></defs>${edges}${boxes}</svg>`;
  for (const g of $('graph').querySelectorAll('g.vertex')) g.addEventListener('click', () => { state.vertex = g.dataset.vid; refresh(); });
}

function renderVertexTable(vertices) {
  $('vertices').innerHTML = `<tr><th>vertex</th><th>status</th><th>parallelism</th><th>records in</th><th>records out</th><th>in/s</th><th>out/s</th><th>bytes out</th><th>busy (max)</th><th>backpressured (max)</th></tr>` +
    vertices.map((v) => `<tr class="clickable ${v.id === state.vertex ? 'selected' : ''}" data-vid="${esc(v.id)}"><td>${escName(v.name)}</td><td>${esc(v.status)}</td><td class="num">${v.parallelism}</td>
      <td class="num">${fmtInt(v.metrics['read-records'])}</td><td class="num">${fmtInt(v.metrics['write-records'])}</td>
      <td class="num">${fmtRate(v.numRecordsInPerSecond)}</td><td class="num">${fmtRate(v.numRecordsOutPerSecond)}</td>
      <td class="num">${fmtBytes(v.metrics['write-bytes'])}</td><td class="num">${Math.round(v.busyTimeMsPerSecondMax / 10)}%</td><td class="num">${Math.round(v.backPressuredTimeMsPerSecondMax / 10)}%</td></tr>`).join('');
  for (const tr of $('vertices').querySelectorAll('tr[data-vid]')) tr.addEventListener('click', () => { state.vertex = tr.dataset.vid; refresh(); });
}

async function renderVertexDetail(jid) {
  if (state.vertex === undefined) { $('vertex-detail').innerHTML = '<p>Click a vertex for its subtasks, back pressure and watermarks.</p>'; return; }
  const base = `/jobs/${jid}/vertices/${encodeURIComponent(state.vertex)}`;
  const [v, bp, wm] = await Promise.all([api(base), api(`${base}/backpressure`), api(`${base}/watermarks`)]);
  const bpOf = new Map(bp.subtasks.map((s) => [s.subtask, s]));
  const wmOf = new Map(wm.map((w) => [Number(w.id.split('.')[0]), w.value]));
  $('vertex-detail').innerHTML = `<h3 id="vertex-title">${escName(v.name)} · back pressure <span class="bp-${esc(bp['backpressure-level'])}">${esc(bp['backpressure-level'])}</span></h3>
    <table id="subtasks" class="grid"><tr><th>subtask</th><th>status</th><th>records in</th><th>records out</th><th>in/s</th><th>busy</th><th>idle</th><th>backpressured</th><th>level</th><th>mailbox</th><th>input watermark</th></tr>` +
    v.subtasks.map((s) => { const b = bpOf.get(s.subtask) ?? {}; return `<tr><td class="num">${s.subtask}</td><td>${esc(s.status)}</td><td class="num">${fmtInt(s.metrics.numRecordsIn)}</td><td class="num">${fmtInt(s.metrics.numRecordsOut)}</td>
      <td class="num">${fmtRate(s.metrics.numRecordsInPerSecond)}</td><td class="num">${Math.round(s.metrics.busyTimeMsPerSecond)} ms/s</td><td class="num">${Math.round(s.metrics.idleTimeMsPerSecond)} ms/s</td>
      <td class="num">${Math.round(s.metrics.backPressuredTimeMsPerSecond)} ms/s</td><td class="bp-${esc(b['backpressure-level'])}">${esc(b['backpressure-level'])}</td><td class="num">${s.metrics.mailboxQueueSize}</td><td>${esc(fmtWatermark(wmOf.get(s.subtask)))}</td></tr>`; }).join('') +
    `</table><h4>Operators</h4><table class="grid"><tr><th>subtask</th><th>operator</th><th>records in</th><th>records out</th><th>input watermark</th><th>output watermark</th><th>late dropped</th></tr>` +
    v.subtasks.flatMap((s) => s.operators.map((o) => `<tr><td class="num">${s.subtask}</td><td>${escName(o.name)}</td><td class="num">${fmtInt(o.metrics.numRecordsIn)}</td><td class="num">${fmtInt(o.metrics.numRecordsOut)}</td><td>${esc(fmtWatermark(o.metrics.currentInputWatermark))}</td><td>${esc(fmtWatermark(o.metrics.currentOutputWatermark))}</td><td class="num">${fmtInt(o.metrics.numLateRecordsDropped)}</td></tr>`)).join('') + '</table>';
}

// ---- checkpoints: counts, trends over the whole history, history table, per-subtask timeline

function trendChart(key, el, ids, values, label, fmt) {
  el.dataset.points = String(ids.length);
  const data = [ids, values];
  const existing = state.charts[key];
  if (existing) { existing.setData(data); return; }
  if (typeof uPlot !== 'function') return;
  state.charts[key] = new uPlot({
    width: 520, height: 200,
    scales: { x: { time: false } },
    axes: [{ label: 'checkpoint id' }, { label, size: 70, values: (_u, ticks) => ticks.map(fmt) }],
    series: [{ label: 'id' }, { label, stroke: '#2f6fd6', width: 2, points: { show: true, size: 6, fill: '#2f6fd6' } }],
  }, data, el);
}

function renderTrends(t) {
  trendChart('duration', $('trend-duration'), t.id, t.end_to_end_duration, 'duration', (v) => fmtMs(v));
  trendChart('size', $('trend-size'), t.id, t.checkpointed_size, 'size', (v) => fmtBytes(v));
}

function renderCheckpoints(cp) {
  const c = cp.counts;
  $('cp-counts').innerHTML = [['triggered', c.total], ['in progress', c.in_progress], ['completed', c.completed], ['failed', c.failed], ['restored', c.restored]]
    .map(([k, v]) => `<div class="card">${k}<b id="cp-count-${k.replace(' ', '-')}">${v}</b></div>`).join('');
  const s = cp.summary;
  const row = (name, x, f) => `<tr><td>${name}</td><td class="num">${f(x.min)}</td><td class="num">${f(x.avg)}</td><td class="num">${f(x.p50)}</td><td class="num">${f(x.p90)}</td><td class="num">${f(x.p99)}</td><td class="num">${f(x.max)}</td></tr>`;
  $('cp-summary').innerHTML = `<tr><th>summary (completed)</th><th>min</th><th>avg</th><th>p50</th><th>p90</th><th>p99</th><th>max</th></tr>` +
    row('end to end duration', s.end_to_end_duration, fmtMs) + row('checkpointed size', s.checkpointed_size, fmtBytes) + row('full size', s.state_size, fmtBytes);
  $('cp-history').innerHTML = `<tr><th>id</th><th>status</th><th>type</th><th>acknowledged</th><th>triggered</th><th>latest ack</th><th>duration</th><th>size</th><th>sync max</th><th>async max</th><th>align max</th><th>start delay max</th><th>failure</th></tr>` +
    cp.history.map((h) => `<tr class="clickable ${h.status}-row ${h.id === state.checkpoint ? 'selected' : ''}" data-cid="${h.id}"><td class="num">${h.id}</td><td>${esc(h.status)}</td><td>${esc(h.checkpoint_type)}</td>
      <td class="num">${h.num_acknowledged_subtasks}/${h.num_subtasks}</td><td>${fmtTime(h.trigger_timestamp)}</td><td>${fmtTime(h.latest_ack_timestamp)}</td><td class="num">${fmtMs(h.end_to_end_duration)}</td>
      <td class="num">${fmtBytes(h.checkpointed_size)}</td><td class="num">${fmtMs(h.sync_duration_max)}</td><td class="num">${fmtMs(h.async_duration_max)}</td><td class="num">${fmtMs(h.alignment_duration_max)}</td><td class="num">${fmtMs(h.start_delay_max)}</td>
      <td class="failure">${esc(h.failure_message ?? '')}</td></tr>`).join('');
  for (const tr of $('cp-history').querySelectorAll('tr[data-cid]')) tr.addEventListener('click', () => { state.checkpoint = Number(tr.dataset.cid); refresh(); });
}

async function renderTimeline(jid, vertices) {
  if (state.checkpoint === undefined) { $('cp-timeline').innerHTML = '<p>Click a checkpoint for its per-subtask timeline.</p>'; return; }
  const id = state.checkpoint;
  const details = await Promise.all(vertices.map((v) => api(`/jobs/${jid}/checkpoints/details/${id}/subtasks/${encodeURIComponent(v.id)}`).then((d) => ({ v, d }), () => ({ v, d: undefined }))));
  const rows = [];
  for (const { v, d } of details) for (const s of d?.subtasks ?? []) rows.push({ label: `${v.name} (${s.index + 1}/${v.parallelism})`, s });
  const total = Math.max(1, ...rows.map((r) => (r.s.end_to_end_duration ?? 0)));
  const W = 560, L = 260, RH = 18;
  let bars = '';
  rows.forEach((r, i) => {
    const y = 20 + i * RH;
    bars += `<text x="4" y="${y + 12}">${esc(r.label.length > 36 ? r.label.slice(0, 35) + '…' : r.label)}</text>`;
    if (r.s.status !== 'completed') { bars += `<text x="${L}" y="${y + 12}" fill="#c92a2a">not acknowledged</text>`; return; }
    let x = L;
    for (const [ms, fill, name] of [[r.s.start_delay, '#adb5bd', 'start delay'], [r.s.alignment.duration, '#f59f00', 'alignment'], [r.s.checkpoint.sync, '#e03131', 'sync'], [r.s.checkpoint.async, '#1c7ed6', 'async']]) {
      const w = Math.max(ms > 0 ? 1 : 0, (ms / total) * W);
      bars += `<rect class="phase" data-phase="${name}" x="${x}" y="${y + 2}" width="${w}" height="${RH - 5}" fill="${fill}"><title>${name}: ${fmtMs(ms)}</title></rect>`;
      x += w;
    }
    bars += `<text x="${x + 4}" y="${y + 12}">${fmtMs(r.s.end_to_end_duration)}</text>`;
  });
  $('cp-timeline').innerHTML = `<h3>Checkpoint ${id}: phases per subtask</h3><div class="legend"><span><i class="sw sw-delay"></i>start delay</span><span><i class="sw sw-align"></i>alignment</span><span><i class="sw sw-sync"></i>sync</span><span><i class="sw sw-async"></i>async</span></div>
    <svg id="timeline" width="${L + W + 80}" height="${30 + rows.length * RH}" xmlns="http://www.w3.org/2000/svg">${bars}</svg>`;
}

// ---- exceptions and configuration

function renderExceptions(ex) {
  const es = ex.exceptionHistory.entries;
  $('exceptions').innerHTML = es.length === 0 ? '<p id="no-exceptions">No failures.</p>' : es.map((e) => `<div class="exception"><h4>${esc(e.exceptionName)} at ${fmtTime(e.timestamp)}${e.taskName ? ` in ${escName(e.taskName)}` : ''}</h4><p>${esc(e.message)}</p><pre class="trace">${esc(e.stacktrace)}</pre></div>`).join('');
}

function renderConfig(job, cfg) {
  const rows = [['job id', job.jid], ['job name', job.name], ['start time', new Date(job['start-time']).toISOString()],
    ...Object.entries(cfg).map(([k, v]) => [`checkpoints: ${k}`, fmtConfigValue(k, v)])];
  $('config').innerHTML = '<tr><th>key</th><th>value</th></tr>' + rows.map(([k, v]) => `<tr><td>${esc(k)}</td><td>${esc(v)}</td></tr>`).join('');
}

// ---- refresh loop

let busy = false;
async function refresh() {
  if (busy) return;
  busy = true;
  try {
    const jobs = (await api('/jobs/overview')).jobs;
    renderJobs(jobs);
    if (state.jobId === undefined) return;
    const jid = state.jobId;
    const [job, jm] = await Promise.all([api(`/jobs/${jid}`), api(`/jobs/${jid}/metrics?get=uptime,numRestarts,lastCheckpointDuration,lastCheckpointSize`)]);
    uncounted(job.vertices);
    renderHead(job, jm);
    if (state.tab === 'overview') {
      renderGraph(job.vertices);
      renderVertexTable(job.vertices);
      await renderVertexDetail(jid);
    } else if (state.tab === 'checkpoints') {
      // The table shows the newest 200; the charts every completed checkpoint of the job's life.
      const [cp, trend] = await Promise.all([api(`/jobs/${jid}/checkpoints?limit=200`), api(`/jobs/${jid}/checkpoints/trend`)]);
      renderCheckpoints(cp);
      renderTrends(trend);
      await renderTimeline(jid, job.vertices);
    } else if (state.tab === 'exceptions') {
      renderExceptions(await api(`/jobs/${jid}/exceptions`));
    } else {
      renderConfig(job, await api(`/jobs/${jid}/checkpoints/config`));
    }
    $('live').classList.remove('stale');
    $('live').textContent = `live · ${new Date().toLocaleTimeString()}`;
  } catch (e) {
    $('live').classList.add('stale');
    $('live').textContent = `not updating: ${e.message}`;
  } finally {
    busy = false;
  }
}

refresh();
setInterval(refresh, REFRESH_MS);
