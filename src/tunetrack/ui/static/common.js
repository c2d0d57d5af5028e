"use strict";
// Shared helpers. User data is only ever inserted with textContent, never as HTML.

// Chart pages load Plotly deferred, after their own scripts: they ask for their data first, and the
// server prepares it while the browser compiles Plotly. DOMContentLoaded follows every deferred script.
const plotlyReady = new Promise(resolve => document.addEventListener("DOMContentLoaded", resolve));
const PLOT_CONFIG = { responsive: true, displaylogo: false };

async function api(path) {
  const response = await fetch(path, { credentials: "same-origin" });
  const body = await response.json().catch(() => ({ detail: response.statusText }));
  if (!response.ok) throw new Error(body.detail || response.statusText);
  return body;
}
// Many series in one request (GET /api/series); entries come back in the order of `specs`
// ({key, node, cursor, run}); without specs, every series of params.run.
async function fetchSeries(params, specs) {
  const q = new URLSearchParams(params);
  for (const s of specs || []) {
    if (s.run) q.append("run", s.run);
    q.append("key", s.key);
    q.append("node", s.node || "");
    if (s.cursor !== undefined) q.append("cursor", String(s.cursor));
  }
  return (await api(`/api/series?${q}`)).series;
}
// M4 buckets for a chart in `grid`: about one per horizontal pixel, so at most four points a pixel.
function bucketWidth(grid) {
  const probe = grid.appendChild(el("div", null, "chart"));
  const width = probe.clientWidth;
  probe.remove();
  return String(Math.max(100, Math.round(width || 600)));
}
function chartLayout(title, extra) {
  return { title: { text: title, font: { size: 13 } }, margin: { l: 50, r: 10, t: 30, b: 30 }, uirevision: title, ...extra };
}
// Calls back with {start, end} when the user zooms the x axis, and with null when they reset it.
function onZoom(div, callback) {
  div.on("plotly_relayout", ev => {
    if (ev["xaxis.range[0]"] !== undefined) callback({ start: String(ev["xaxis.range[0]"]), end: String(ev["xaxis.range[1]"]) });
    else if (ev["xaxis.autorange"]) callback(null);
  });
}
// Lets the browser paint and take input while many charts draw, every 50 ms of drawing: the page stays
// responsive and shows its first charts early (a frame after every chart measured slower).
let sliceStart = 0;
async function breathe() {
  if (performance.now() - sliceStart < 50) return;
  await (globalThis.scheduler?.yield ? scheduler.yield() : new Promise(resolve => setTimeout(resolve)));
  sliceStart = performance.now();
}
// Counts a chart's draws, so tests and the benchmark can tell a redraw happened.
function markDrawn(div) { div.dataset.drawn = String(Number(div.dataset.drawn || 0) + 1); }
function el(tag, text, cls) {
  const node = document.createElement(tag);
  if (text !== undefined && text !== null) node.textContent = String(text);
  if (cls) node.className = cls;
  return node;
}
function row(cells) {
  const tr = document.createElement("tr");
  for (const cell of cells) tr.appendChild(cell instanceof Node ? cell : el("td", cell));
  return tr;
}
const DATE_FORMAT = new Intl.DateTimeFormat(undefined, { dateStyle: "short", timeStyle: "medium" });
function fmtTime(t) { return t ? DATE_FORMAT.format(new Date(t * 1000)) : "—"; }
function fmtNum(v) { return typeof v === "number" ? (Math.abs(v) >= 1e4 || (v !== 0 && Math.abs(v) < 1e-3) ? v.toExponential(3) : +v.toFixed(4)) : (v ?? "—"); }
function duration(run) {
  const end = run.ended || (run.state === "running" ? Date.now() / 1000 : null);
  if (!end || !run.created) return "—";
  const s = Math.max(0, Math.round(end - run.created));
  return s >= 3600 ? `${Math.floor(s / 3600)}h${String(Math.floor(s % 3600 / 60)).padStart(2, "0")}m` : `${Math.floor(s / 60)}m${String(s % 60).padStart(2, "0")}s`;
}
function stateBadge(state) { return el("span", state, `state state-${state}`); }
