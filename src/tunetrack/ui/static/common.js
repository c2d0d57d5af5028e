// What every page draws with: the element helpers, the API client, and the charts (uPlot, the palette,
// the point rule, the alignment of several runs' series). An ES module with no side effects on import:
// the dashboard's pages import it, the report (one file) and the notebook panel (one ES module) have
// it inlined by ui/assets.py. User data is only ever inserted with textContent, never as HTML (uPlot,
// too, sets its titles and legends as text, and draws values on a canvas).

// uPlot is a global of a classic script (the dashboard's pages load it deferred, after their own
// scripts: they ask for their data first, and the server prepares it meanwhile), or a name of the
// module this one is inlined into (the notebook panel).
export const NO_CHARTS = "the charting library was not built in: rebuild with npm available";
export function chartsLoaded() { return typeof uPlot !== "undefined"; }
// Settles once uPlot can draw, or rejects if the page has none (a server built without npm links
// none). A page's script asks at once, before the page has loaded: DOMContentLoaded follows every
// deferred script, loaded or not.
export function chartsReady() {
  if (chartsLoaded()) return Promise.resolve();
  return new Promise((resolve, reject) => document.addEventListener("DOMContentLoaded", () => (
    chartsLoaded() ? resolve() : reject(new Error(NO_CHARTS))), { once: true }));
}

// GET `path`; with `body`, POST it as JSON (how the server takes a change: from its own pages only,
// as a cross-site form cannot send JSON). The answer's JSON, or the API's one line as the error.
export async function api(path, body) {
  const change = body === undefined ? {}
    : { method: "POST", headers: { "Content-Type": "application/json" }, body: JSON.stringify(body) };
  const response = await fetch(path, { credentials: "same-origin", ...change });
  if (!response.ok) throw await failure(response);
  return response.json();
}
// What a failed response says: the API's one line (`detail`), else its status. A request FastAPI
// refused before the route ran has a list of problems as its detail: each said as "where: what".
export async function failure(response) {
  const body = await response.json().catch(() => ({}));
  const detail = Array.isArray(body.detail)
    ? body.detail.map(d => `${(d.loc || []).slice(1).join(".") || "request"}: ${d.msg}`).join("; ")
    : body.detail;
  const error = new Error(detail || response.statusText);
  error.status = response.status;
  return error;
}
// Many series in one request (GET /api/series); entries come back in the order of `specs`
// ({key, node, cursor, run}); without specs, every series of params.run.
export async function fetchSeries(params, specs) {
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
export function bucketWidth(grid) {
  const probe = grid.appendChild(el("div", null, "chart"));
  const width = probe.clientWidth;
  probe.remove();
  return String(Math.max(100, Math.round(width || 600)));
}
const CHART_HEIGHT = 220;
// the ticks of a step axis are whole steps: 1, 2, 5 and 2.5 times a power of ten, never 1.2 or 1.4
const STEP_INCRS = [1, 2, 5].concat(...Array.from({ length: 9 }, (_, k) => [10, 20, 25, 50].map(m => m * 10 ** k)));  // the plot and its axes, in CSS pixels; the title and the legend come on top
// uPlot draws at a fixed size: a chart follows the width of its grid cell (made with the first chart).
let resized = null;
// Tableau 10, a categorical palette made so that every colour is told apart from the others; a page
// colours each run by its place in the page's list of runs (`colors`), so a run has one colour on
// every chart of the page. Past ten runs the colours come round again, dashed, then dotted.
const PALETTE = ["#4e79a7", "#f28e2b", "#e15759", "#76b7b2", "#59a14f", "#edc948", "#b07aa1", "#ff9da7", "#9c755f", "#bab0ac"];
const DASHES = [undefined, [6, 3], [1, 2]];
function lineColor(i, alpha = 1) {
  const hex = PALETTE[i % PALETTE.length];
  if (alpha >= 1) return hex;
  const [r, g, b] = [1, 3, 5].map(at => parseInt(hex.slice(at, at + 2), 16));
  return `rgb(${r} ${g} ${b} / ${alpha})`;
}
function lineDash(i) { return DASHES[Math.floor(i / PALETTE.length) % DASHES.length]; }
// Several runs' lines on one x axis, the union of their x (`lines`: [xs, ys] each). A run without a
// point at an x has undefined there, which its line spans (a metric logged at other steps than
// another's is drawn joined); a null it holds stays a gap (NaN, ±Inf).
export function align(lines) { return uPlot.join(lines); }
// A uPlot chart in `div` (as div.chart) of `data` ([xs, ys of each line]), one line per name, over
// x = "step", "time" (seconds since the epoch) or "relative"; zoomed to `range` ({start, end}) if given.
// Calls back onZoom({start, end}) when the user drags across it, onZoom(null) on a double click (uPlot
// itself zooms in on what it has, and out), onPick(x) on a click that is no drag. `markers()` gives vertical lines to draw, [{x, color}];
// the chart's element counts them in data-markers and holds the x range shown in data-xrange
// ("min max"). `legend`: false for a chart of one line whose title names it. `colors`: each name's
// place in the page's list of runs (or groups), which picks its colour (default: its place here).
// `unit` (unitOf): the y axis and the values in it, as people read them (bytes as GB, a share as %).
// The legend is one line per name, cut short with the whole name on hover, and scrolls past a few
// lines: it never takes more than a small part of the card. A name without a point at the hovered x
// shows its nearest point's value and where that point is.
// `bands`: each name is a group drawn as three series, its mean, high and low (data: [xs, mean, high,
// low of each group]); the mean is a line, the high and low bound a band of its colour (uPlot bands).
// `styles`: each name's line where not the palette's ({stroke, width, dash}); `fills`: [upper, lower,
// colour] of two names (their places in `names`) to fill between (a family's p5 to p95).
export function lineChart(div, data, range, { title, x, names, log = false, legend = true, markers = () => [],
                                             onZoom = () => {}, onPick = () => {}, bands = false, colors = null, unit = "",
                                             styles = [], fills = [] }) {
  const color = i => (colors ? colors[i] : i);
  const value = (u, v, seriesIdx, idx) => {
    if (v == null) return "--";
    const shown = withUnit(v, unit);
    const at = u.cursor.idx;  // the hovered x; uPlot gives a line without a point there its nearest one
    return idx != null && at != null && idx !== at ? `${shown} (at ${xText(u.data[0][idx], x)})` : shown;
  };
  // Lines 1 px wide: a software canvas (no GPU) strokes them several times faster than wider ones
  // (50 runs overlaid: 3.4 s -> 0.85 s to draw; a 20-chart run page: 0.74 -> 0.60 s).
  const line = (label, i) => ({ label, stroke: lineColor(color(i)), dash: lineDash(color(i)), width: 1,
                                points: { filter: isolated, fill: lineColor(color(i)) }, value });
  const edge = (label, i) => ({ label, stroke: lineColor(color(i), 0.35), width: 1, points: { show: false }, value });
  const series = bands
    ? names.flatMap((label, i) => [{ ...line(label, i), width: 1.5 }, edge(`${label} high`, i), edge(`${label} low`, i)])
    : names.map((label, i) => {
      const own = styles[i] || {};
      return { ...line(label, i), ...own, ...(own.stroke && !own.points ? { points: { filter: isolated, fill: own.stroke } } : {}) };
    });
  const chart = new uPlot({
    title, width: div.clientWidth, height: CHART_HEIGHT, legend: { show: legend },
    // a log scale spans the data (uPlot's own reaches out to whole powers of ten: 0.6 to 1.2 drawn over 0.1 to 10)
    scales: { x: { time: x === "time" }, y: log ? { distr: 3, range: logRange } : { distr: 1 } },
    series: [{ label: x }, ...series],
    bands: bands ? names.map((_, i) => ({ series: [2 + 3 * i, 3 + 3 * i], fill: lineColor(color(i), 0.16) }))
      : fills.map(([upper, lower, fill]) => ({ series: [1 + upper, 1 + lower], fill })),
    axes: [x === "step" ? { incrs: STEP_INCRS } : {}, { values: unit ? unitTicks(unit, log) : log ? logTicks : linearTicks, size: yAxisSize }],
    cursor: { drag: { x: true, y: false } },
    hooks: {
      setSelect: [u => {  // a drag: uPlot zooms in on what it has, the caller fetches the detail
        const { left, width } = u.select;
        if (width > 0) onZoom({ start: u.posToVal(left, "x"), end: u.posToVal(left + width, "x") });
      }],
      drawAxes: [u => {  // under the lines
        div.dataset.markers = String(drawMarkers(u, markers()));
        div.dataset.xrange = `${u.scales.x.min} ${u.scales.x.max}`;
      }],
    },
  }, data, div);
  if (range) chart.setScale("x", { min: range.start, max: range.end });
  chart.over.addEventListener("dblclick", () => onZoom(null));  // uPlot shows all it has, the caller refetches
  chart.over.addEventListener("click", () => {
    if (!chart.select.width && chart.cursor.left >= 0) onPick(chart.posToVal(chart.cursor.left, "x"));
  });
  if (bands) {  // the legend names each group once, by its mean: its high and low rows are hidden
    chart.root.querySelectorAll(".u-legend .u-series").forEach((tr, i) => { if (i > 0 && (i - 1) % 3) tr.style.display = "none"; });
  }
  for (const label of chart.root.querySelectorAll(".u-legend .u-label")) label.title = label.textContent;  // cut short by CSS
  div.chart = chart;
  resized ??= new ResizeObserver(entries => {
    for (const { target } of entries) target.chart?.setSize({ width: target.clientWidth, height: CHART_HEIGHT });
  });
  resized.observe(div);
  return chart;
}
// The points of a line with no neighbour to join (a value between two gaps, or alone): uPlot draws a
// line between points and, where they are dense, no dots, so these would not show at all. They get
// a dot. (null is a gap; undefined, a run without a point at that step on the compare page, is
// spanned: the neighbours are the nearest values either side that are not undefined.)
function isolated(u, seriesIdx, show) {
  if (show) return null;  // uPlot draws every point anyway: they are few on screen
  const ys = u.data[seriesIdx], out = [];
  let before = null, alone = -1;  // the last value that is not undefined; a number with none before it
  for (let i = 0; i < ys.length; i++) {
    const v = ys[i];
    if (v === undefined) continue;
    if (v === null && alone >= 0) out.push(alone);
    alone = v !== null && before === null ? i : -1;
    before = v;
  }
  if (alone >= 0) out.push(alone);
  return out;
}
// New data for a chart, keeping its zoomed x range (or showing all of the data if `range` is null).
export function setLines(chart, data, range) {
  chart.batch(() => {
    chart.setData(data);
    if (range) chart.setScale("x", { min: range.start, max: range.end });
  });
}
export function dropChart(div) {
  div.chart?.destroy();
  delete div.chart;
  resized?.unobserve(div);
}
// y tick labels as precise as the step between ticks, where uPlot's default rounds to 3 decimals (a
// learning rate of 2e-5 would read 0): 0.0015, 2.5e-5, 1.2345e+6; one digit each on a log scale.
function tickLabel(v, place) {  // v to the 10^place
  if (v === null) return "";
  if (v === 0) return "0";
  if (Math.abs(v) < 1e5 && place >= -4) return v.toFixed(Math.max(0, -place));
  return v.toExponential(Math.max(0, magnitude(v) - place));
}
function magnitude(v) { return Math.floor(Math.log10(Math.abs(v)) + 1e-9); }
function linearTicks(u, splits, axisIdx, space, incr) {
  const place = magnitude(incr) - (Math.abs(incr / 10 ** magnitude(incr) - 2.5) < 1e-6 ? 1 : 0);  // 2.5 × 10^k
  return splits.map(v => tickLabel(v, place));
}
function logTicks(u, splits) { return splits.map(v => tickLabel(v, v && magnitude(v))); }
function logRange(u, min, max) {
  if (!(min > 0 && max > 0)) return [min, max];
  const pad = (max / min) ** 0.05;  // a twentieth of the span, either side
  return min === max ? [min / 1.1, max * 1.1] : [min / pad, max * pad];
}
// The unit of a metric's values, from how tunetrack's system metrics (and people) name them:
// `mem.used_bytes`, `disk.read_bytes_per_s`, `gpu.0.util`, `cpu.percent`, `gpu.0.power_w`, `gpu.0.temp_c`.
export function unitOf(key) {
  if (/_bytes_per_s$/.test(key)) return "B/s";
  if (/_bytes$/.test(key)) return "B";
  if (/(^|[._])(percent|util|mem_util)$/.test(key)) return "%";
  if (/_w$/.test(key)) return "W";
  if (/_c$/.test(key)) return "°C";
  return "";
}
// Bytes in decimal multiples (kB, MB, GB: the axis's ticks, at round numbers of bytes, stay round);
// [divisor, suffix] for values up to `most`.
function unitScale(unit, most) {
  if (unit !== "B" && unit !== "B/s") return [1, unit];
  const per = unit === "B/s" ? "/s" : "";
  const steps = ["B", "kB", "MB", "GB", "TB"];
  const i = Math.max(0, Math.min(steps.length - 1, Math.floor(Math.log10(Math.abs(most) || 1) / 3)));
  return [1000 ** i, steps[i] + per];
}
function withSuffix(text, suffix) { return !suffix || text === "" ? text : suffix === "%" ? `${text}%` : `${text} ${suffix}`; }
export function withUnit(v, unit) {
  if (typeof v !== "number" || !unit) return fmtNum(v);
  const [div, suffix] = unitScale(unit, v);
  return withSuffix(String(fmtNum(v / div)), suffix);
}
function unitTicks(unit, log) {
  return (u, splits, axisIdx, space, incr) => {
    const [div, suffix] = unitScale(unit, Math.max(...splits.map(Math.abs)));
    const scaled = splits.map(v => v / div);
    return (log ? logTicks(u, scaled) : linearTicks(u, scaled, axisIdx, space, incr / div)).map(t => withSuffix(t, suffix));
  };
}
// An x value as the hover legend says where a point is: a step, a time of day, seconds since the start.
function xText(v, x) {
  if (x === "time") return new Date(v * 1000).toLocaleTimeString();
  if (x === "relative") return `${fmtNum(v)} s`;
  return `step ${v}`;
}
// The value of a series that never changes (every number in it the same, or only one): shown as a
// fact rather than drawn as a flat line or a lone dot; undefined for a series that changes or has none.
export function constantValue(ys) {
  const values = ys.filter(v => typeof v === "number");
  return values.length && values.every(v => v === values[0]) ? values[0] : undefined;
}
let measure = null;  // a canvas's context, made for the first axis
function yAxisSize(u, values) {  // as wide as its longest label, and the ticks and the gap beside it
  measure ??= document.createElement("canvas").getContext("2d");
  measure.font = "12px system-ui, sans-serif";  // uPlot's axis font
  return 20 + Math.max(24, ...(values || []).map(v => measure.measureText(v).width));
}
// Dotted vertical lines across the plot at markers' x; returns how many fall inside it.
function drawMarkers(u, markers) {
  const { ctx, bbox } = u;
  let drawn = 0;
  ctx.save();
  ctx.lineWidth = devicePixelRatio;
  ctx.setLineDash([4 * devicePixelRatio, 3 * devicePixelRatio]);
  for (const { x, color } of markers) {
    const px = Math.round(u.valToPos(x, "x", true));
    if (!(px >= bbox.left && px <= bbox.left + bbox.width)) continue;
    ctx.strokeStyle = color;
    ctx.beginPath(); ctx.moveTo(px, bbox.top); ctx.lineTo(px, bbox.top + bbox.height); ctx.stroke();
    drawn++;
  }
  ctx.restore();
  return drawn;
}
// Lets the browser paint and take input while many charts draw, every 50 ms of drawing: the page stays
// responsive and shows its first charts early (a frame after every chart measured slower).
let sliceStart = 0;
export async function breathe() {
  if (performance.now() - sliceStart < 50) return;
  await (globalThis.scheduler?.yield ? scheduler.yield() : new Promise(resolve => setTimeout(resolve)));
  sliceStart = performance.now();
}
// Heatmaps (a family of keys' key x step, a key's distributions' value x step): viridis (matplotlib's),
// perceptually even and read alike by colour-blind eyes, dark purple (low) to yellow (high).
const VIRIDIS = ["#440154", "#472d7b", "#3b528b", "#2c728e", "#21918c", "#28ae80", "#5ec962", "#addc30", "#fde725"]
  .map(hex => [1, 3, 5].map(at => parseInt(hex.slice(at, at + 2), 16)));
export function viridis(fraction) {
  const at = Math.min(Math.max(fraction, 0), 1) * (VIRIDIS.length - 1);
  const i = Math.min(Math.floor(at), VIRIDIS.length - 2), t = at - i;
  const [r, g, b] = VIRIDIS[i].map((v, c) => Math.round(v + (VIRIDIS[i + 1][c] - v) * t));
  return `rgb(${r} ${g} ${b})`;
}
// `rows` x `cols` cells filling `canvas` (`width` x `height` CSS pixels, sharp on any screen), each in
// `colour(r, c)`, row 0 at the top.
export function paintCells(canvas, width, height, rows, cols, colour) {
  const ratio = devicePixelRatio || 1;
  canvas.width = Math.round(width * ratio);
  canvas.height = Math.round(height * ratio);
  canvas.style.width = `${width}px`;
  canvas.style.height = `${height}px`;
  const ctx = canvas.getContext("2d");
  ctx.clearRect(0, 0, canvas.width, canvas.height);
  const cw = canvas.width / Math.max(cols, 1), rh = canvas.height / Math.max(rows, 1);
  for (let r = 0; r < rows; r++) {
    for (let c = 0; c < cols; c++) {
      ctx.fillStyle = colour(r, c);
      // whole device pixels, each cell reaching the next one's edge: no seams between cells
      const x0 = Math.floor(c * cw), y0 = Math.floor(r * rh);
      ctx.fillRect(x0, y0, Math.floor((c + 1) * cw) - x0, Math.floor((r + 1) * rh) - y0);
    }
  }
  canvas.dataset.rows = String(rows);
  canvas.dataset.cols = String(cols);
  return ctx;
}
// The colour scale in `box`: its lowest and highest value at its ends, then `note`.
export function heatLegend(box, low, high, note) {
  const scale = el("canvas", null, "heat-scale");
  scale.width = 160;
  scale.height = 10;
  const ctx = scale.getContext("2d");
  for (let x = 0; x < scale.width; x++) {
    ctx.fillStyle = viridis(x / (scale.width - 1));
    ctx.fillRect(x, 0, 1, scale.height);
  }
  box.replaceChildren(el("span", fmtNum(low)), scale, el("span", fmtNum(high)), el("span", note, "muted heat-note"));
}
// Counts a chart's draws, so tests and the benchmark can tell a redraw happened.
export function markDrawn(div) { div.dataset.drawn = String(Number(div.dataset.drawn || 0) + 1); }
export function el(tag, text, cls) {
  const node = document.createElement(tag);
  if (text !== undefined && text !== null) node.textContent = String(text);
  if (cls) node.className = cls;
  return node;
}
export function row(cells) {
  const tr = document.createElement("tr");
  for (const cell of cells) tr.appendChild(cell instanceof Node ? cell : el("td", cell));
  return tr;
}
// A date as the CLI and the run's overview print it (reader/as_text.py's `when`): 2026-11-26 19:11:54, local time.
export function fmtTime(t) {
  if (!t) return "—";
  const d = new Date(t * 1000), two = n => String(n).padStart(2, "0");
  return `${d.getFullYear()}-${two(d.getMonth() + 1)}-${two(d.getDate())} ${two(d.getHours())}:${two(d.getMinutes())}:${two(d.getSeconds())}`;
}
// A time of day as the CLI's console lines print it: 19:11:54, local time.
export function fmtClock(t) { return fmtTime(t).slice(11); }
// "1 run", "3 runs": a count and its noun (`many`: the plural where it is not the noun and an s).
export function plural(n, word, many = `${word}s`) { return `${n.toLocaleString()} ${n === 1 ? word : many}`; }
export function fmtNum(v) { return typeof v === "number" ? (Math.abs(v) >= 1e4 || (v !== 0 && Math.abs(v) < 1e-3) ? v.toExponential(3) : +v.toFixed(4)) : (v ?? "—"); }
export function duration(run) {
  const end = run.ended || (run.state === "running" ? Date.now() / 1000 : null);
  if (!end || !run.created) return "—";
  const s = Math.max(0, Math.floor(end - run.created));  // whole seconds gone by, as the server counts them
  return s >= 3600 ? `${Math.floor(s / 3600)}h${String(Math.floor(s % 3600 / 60)).padStart(2, "0")}m` : `${Math.floor(s / 60)}m${String(s % 60).padStart(2, "0")}s`;
}
const STATES = ["running", "finished", "failed", "killed", "crashed", "stopped"];  // states.STATES
// A run's state as a coloured badge, with the known failure it ended in (`failed: CUDA out of memory
// on rank 0`, as `tunetrack ls` says it) or another `detail` (stateWorded's); the whole text also on
// hover, where a cell cuts it short.
export function stateBadge(state, detail) {
  const text = detail ? `${state}: ${detail}` : state;
  const badge = el("span", text, `state state-${STATES.includes(state) ? state : "unknown"}`);
  badge.title = text;
  return badge;
}
// A run's state as the server words it (reader/as_text.py's `state`: `failed: CUDA out of memory on
// rank 0`, `stopped: by ana@gpu1, loss diverged`, `running: stop asked by ...`) as a badge.
export function stateWorded(text) {
  const [state, ...detail] = text.split(": ");
  return stateBadge(state, detail.join(": ") || null);
}
// The facts that name runs (reader/as_text.py's fork_facts): "ID@STEP (name)" parts, "; "-separated.
const RUN_FACTS = ["forked from", "forks"];
// A run's overview as the server words it (reader/as_text.py): [label, text] rows into a <dl>, each
// <dd> marked with its label (data-fact). The state fact ("failed: CUDA out of memory on rank 0") is a badge;
// with `runLink` (a run id -> its page's address), a fork's parent and a run's forks are links.
export function showFacts(list, facts, runLink) {
  list.replaceChildren();
  for (const [label, text] of facts) {
    const dd = el("dd");
    dd.dataset.fact = label;
    if (label === "state") dd.append(stateWorded(text));
    else if (runLink && RUN_FACTS.includes(label)) {
      text.split("; ").forEach((part, i) => {
        const link = el("a", part);
        link.href = runLink(part.split("@")[0]);
        dd.append(...(i ? ["; ", link] : [link]));
      });
    } else dd.append(text);
    list.append(el("dt", label), dd);
  }
}
// A run's summary as the server words it: [key, last, min, max, at step, points] rows.
export function summaryRows(summary) {
  return summary.map(cells => {
    const tr = row(cells);
    tr.dataset.key = cells[0];
    return tr;
  });
}
