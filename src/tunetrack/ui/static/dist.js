// A key logged as tunetrack.Histogram (issue 35): its distributions over the steps, one card a key,
// from GET /api/runs/{id}/distribution (the server puts them on common bins and fits the steps to the
// canvas: a column per step, or the mean of a few neighbouring steps' counts). Two views: a heatmap,
// value (a row per bin, the highest values on top, as the terminal draws it: tui/panes/across.py) x
// step, the counts on viridis; or a ridgeline, a few steps' histograms as lines stacked down the card.
import { api, el, heatLegend, markDrawn, paintCells, plural, viridis } from "./common.js";

const HEIGHT = 200;  // the plot's height in CSS pixels
const BINS = 64;  // about 3 pixels a bin
const RIDGES = 8;  // the steps a ridgeline shows, at most
const EMPTY = "#f3f4f6";  // a cell no value fell in
const TICKS = 5;  // labels an axis has, at most

// The card of `key` in `container`; drawn once loaded (loadDistribution), when it is in view.
export function addDistribution(container, key) {
  const card = el("div", null, "chart distribution");
  card.dataset.key = key;
  const title = el("div", key, "family-title");
  title.title = `${key}: the tunetrack.Histogram logged at each step`;
  const toggle = el("div", null, "dist-toggle");
  toggle.setAttribute("role", "group");
  toggle.setAttribute("aria-label", "view");
  const buttons = ["heatmap", "ridgeline"].map(view => {
    const b = el("button", view);
    b.type = "button";
    b.dataset.view = view;
    return b;
  });
  toggle.append(...buttons);
  const head = el("div", null, "dist-head");
  head.append(title, toggle);
  const plot = el("div", null, "dist-plot"), side = el("div", null, "dist-axis dist-side");
  const canvas = el("canvas", null, "heat-canvas");
  canvas.setAttribute("role", "img");
  plot.append(side, canvas);
  const bottom = el("div", null, "dist-axis dist-bottom");
  const legend = el("div", null, "heat-legend"), readout = el("div", null, "heat-readout muted");
  const status = el("p", "", "muted family-status");
  card.append(head, plot, bottom, legend, readout, status);
  container.appendChild(card);
  const dist = { key, histogram: true, card, title, plot, side, canvas, bottom, legend, readout, status, buttons,
                 data: null, view: "heatmap", log: false };
  for (const b of buttons) b.addEventListener("click", () => { dist.view = b.dataset.view; drawDistribution(dist, dist.log); });
  return dist;
}
// The canvas' width: the card's, less its value axis.
function plotWidth(dist) {
  return Math.max(80, Math.floor(dist.plot.clientWidth - dist.side.offsetWidth - 4));
}
export async function loadDistribution(runId, dist, log) {
  const q = new URLSearchParams({ key: dist.key, bins: String(BINS), width: String(plotWidth(dist)) });
  try {
    dist.data = await api(`/api/runs/${encodeURIComponent(runId)}/distribution?${q}`);
  } catch (e) {
    dist.status.textContent = `cannot draw ${dist.key}: ${e.message}`;
    dist.card.classList.add("failed");
    return;
  }
  dist.status.textContent = "";
  dist.card.classList.remove("failed");
  drawDistribution(dist, log);
}
// The view chosen, from what the card has (a log scale recolours: nothing is fetched again).
export function drawDistribution(dist, log) {
  dist.log = log;
  const d = dist.data;
  if (!d) return;
  for (const b of dist.buttons) b.setAttribute("aria-pressed", String(b.dataset.view === dist.view));
  dist.title.textContent = `${d.key} · ${plural(d.steps, "step")}`;
  dist.card.dataset.view = dist.view;
  const width = plotWidth(dist);
  dist.bottom.style.width = `${width}px`;
  (dist.view === "ridgeline" ? drawRidges : drawHeat)(dist, d, width, log);
  dist.canvas.onmouseleave = () => { dist.readout.textContent = ""; };
  markDrawn(dist.card);
}
// A count as read: whole above 10 (a count spread over common bins, or a mean of steps, has decimals).
function fmtCount(v) { return v >= 10 ? Math.round(v).toLocaleString() : String(+v.toFixed(2)); }
// A value as an axis or the readout shows it: three significant digits (a bin edge's full digits are noise).
function fmtValue(v) { return v === null ? "—" : Math.abs(v) >= 1e4 || (v !== 0 && Math.abs(v) < 1e-3) ? v.toExponential(2) : String(+v.toPrecision(3)); }
function stepsOf(d, c) { return d.per[c] > 1 ? `steps ${d.starts[c]}–${d.ends[c]}` : `step ${d.starts[c]}`; }
// What the pointer is on: a column (a step, or a few) and a bin, and what that column holds.
function read(dist, d, c, j) {
  const merged = d.per[c] > 1 ? ` (the mean of ${d.per[c]} steps)` : "";
  const spread = d.min[c] === null ? "no value" : `${fmtCount(d.total[c])} values, ${fmtValue(d.min[c])} to ${fmtValue(d.max[c])}, mean ${fmtValue(d.mean[c])}`;
  dist.readout.textContent = `${stepsOf(d, c)} · ${fmtValue(d.edges[j])} to ${fmtValue(d.edges[j + 1])}: ${fmtCount(d.counts[c][j])}${merged} · of ${spread}`;
}
// Up to TICKS indexes from 0 to `n`, evenly apart.
function ticks(n) {
  return [...new Set(Array.from({ length: TICKS }, (_, i) => Math.round(i * n / (TICKS - 1))))];
}
// An axis' labels, each [text, fraction of the way along]: a label's own extent shifted by as much,
// so the first and last stay inside the card.
function axis(box, labels, vertical) {
  box.replaceChildren(...labels.map(([text, at]) => {
    const span = el("span", text);
    span.style[vertical ? "top" : "left"] = `${at * 100}%`;
    span.style.transform = vertical ? `translateY(${-at * 100}%)` : `translateX(${-at * 100}%)`;
    return span;
  }));
}
function scaler(high, log) {
  const top = high > 0 ? high : 1;
  return log ? v => Math.log1p(Math.max(v, 0)) / Math.log1p(top) : v => v / top;
}
// The heatmap: a row per bin (the highest values on top), a column per step or few; a cell's colour its
// count on viridis (none: grey), linear, or on a log scale with the page's log scale.
function drawHeat(dist, d, width, log) {
  const bins = d.edges.length - 1, cols = d.starts.length, scale = scaler(d.high, log);
  paintCells(dist.canvas, width, HEIGHT, bins, cols, (r, c) => {
    const v = d.counts[c][bins - 1 - r];
    return v > 0 ? viridis(scale(v)) : EMPTY;
  });
  dist.canvas.setAttribute("aria-label", `heatmap of ${d.key}: value by step, ${plural(d.steps, "step")}, counts up to ${fmtCount(d.high)}`);
  dist.side.title = "value: the bins' edges";
  axis(dist.side, ticks(bins).map(j => [fmtValue(d.edges[j]), 1 - j / bins]), true);
  axis(dist.bottom, ticks(cols - 1).map(c => [`step ${d.starts[c]}`, cols > 1 ? c / (cols - 1) : 0]), false);
  const most = Math.max(...d.per);
  heatLegend(dist.legend, 0, d.high, `values per bin and step${most > 1 ? ` (a column: the mean of ≤ ${most} steps)` : ""}${log ? ", log colour" : ""}; grey: none`);
  dist.canvas.onmousemove = e => {
    const box = dist.canvas.getBoundingClientRect();
    const c = Math.min(cols - 1, Math.floor((e.clientX - box.left) / box.width * cols));
    const r = Math.min(bins - 1, Math.floor((e.clientY - box.top) / box.height * bins));
    if (c >= 0 && r >= 0) read(dist, d, c, bins - 1 - r);
  };
}
// The ridgeline: up to RIDGES columns, evenly apart, each a line over the bins (value left to right),
// the first step at the top, each later one below and in front; heights to the largest count shown.
function drawRidges(dist, d, width, log) {
  const bins = d.edges.length - 1, cols = d.starts.length, n = Math.min(RIDGES, cols);
  const picked = [...new Set(Array.from({ length: n }, (_, i) => Math.round(i * (cols - 1) / Math.max(n - 1, 1))))];
  const ctx = paintCells(dist.canvas, width, HEIGHT, 1, 1, () => "#fff");
  const W = dist.canvas.width, H = dist.canvas.height, ratio = W / width;
  const peak = H * 0.4, pad = 4 * ratio, gap = (H - peak - 2 * pad) / Math.max(picked.length - 1, 1);
  const base = i => peak + pad + i * gap;
  const scale = scaler(Math.max(...picked.flatMap(c => d.counts[c])), log);
  picked.forEach((c, i) => {
    ctx.beginPath();
    ctx.moveTo(0, base(i));
    for (let j = 0; j < bins; j++) ctx.lineTo((j + 0.5) / bins * W, base(i) - scale(d.counts[c][j]) * peak);
    ctx.lineTo(W, base(i));
    ctx.globalAlpha = 1;
    ctx.fillStyle = "#fff";  // hides the ridges behind it
    ctx.fill();
    const colour = viridis(picked.length > 1 ? i / (picked.length - 1) * 0.9 : 0);
    ctx.globalAlpha = 0.3;
    ctx.fillStyle = colour;
    ctx.fill();
    ctx.globalAlpha = 1;
    ctx.strokeStyle = colour;
    ctx.lineWidth = 1.5 * ratio;
    ctx.stroke();
  });
  dist.canvas.setAttribute("aria-label", `ridgeline of ${d.key}: the histograms of ${plural(picked.length, "step")}`);
  dist.side.title = "step";
  axis(dist.side, picked.map((c, i) => [`step ${d.starts[c]}`, base(i) / H]), true);
  axis(dist.bottom, ticks(bins).map(j => [fmtValue(d.edges[j]), j / bins]), false);
  dist.legend.replaceChildren(el("span", `a line: a step's histogram${Math.max(...d.per) > 1 ? " (or a few steps' mean)" : ""}, the first on top${log ? "; heights on a log scale" : ""}`, "muted heat-note"));
  dist.canvas.onmousemove = e => {
    const box = dist.canvas.getBoundingClientRect();
    const y = (e.clientY - box.top) / box.height * H;
    const i = Math.min(picked.length - 1, Math.max(0, Math.ceil((y - peak - pad) / gap)));  // the ridge whose base is at or below
    const j = Math.min(bins - 1, Math.floor((e.clientX - box.left) / box.width * bins));
    if (j >= 0) read(dist, d, picked[i], j);
  };
}
// A card drawn from data already at hand (the report's file, the notebook panel's model), `data` as
// GET /api/runs/{id}/distribution answers; its view buttons redraw from it.
export function drawnDistribution(container, data) {
  const dist = addDistribution(container, data.key);
  dist.data = data;
  drawDistribution(dist, false);
  return dist;
}
