import { chartsReady, el, fmtNum, row } from "./common.js";

// Hyperparameters against the result, as GET /api/params gives them (reader/sweeps.py): parallel
// coordinates (one vertical axis per config key that varies, the metric last; one line per run), a
// scatter of one hyperparameter against the metric, and each numeric key's Spearman rank correlation.
//
// Parallel coordinates are a small SVG of this page's own: uPlot (the one charting library the build
// fetches, hatch_build.py) has no such chart, and the libraries that do (d3 and its parcoords plugins,
// ECharts, Plotly) are ten to a hundred times uPlot's size, or unmaintained, for one view. A drag
// along an axis brushes a range of it (a click clears it): the page asks the server which runs every
// brush keeps (GET /api/select, the same fields as --where), filters the table by them, and here
// draws the lines of the others grey.
const SVG = "http://www.w3.org/2000/svg";
const HEIGHT = 300, TOP = 44, BOTTOM = 40, SIDE = 70;
// Where a run without a value on an axis (a config key only some runs have, a metric a run never
// logged) crosses it: a "none" spot under the axis, so its line still reaches the metric.
const NONE = -0.1;
const chartsLoading = chartsReady();
chartsLoading.catch(() => {});

function svg(tag, attrs = {}, text) {
  const node = document.createElementNS(SVG, tag);
  for (const [k, v] of Object.entries(attrs)) node.setAttribute(k, String(v));
  if (text !== undefined) node.textContent = String(text);
  return node;
}
// An axis's scale: value -> 0..1 (bottom to top) and back; numbers on a log scale where they are all
// positive and span two decades or more (learning rates), categories evenly spaced in their order.
function scale(axis, values) {
  if (axis.kind === "categorical") {
    const n = axis.values.length;
    const at = v => (n === 1 ? 0.5 : axis.values.indexOf(v) / (n - 1));
    return { at, ticks: axis.values.map(v => [at(v), v]), pick: (lo, hi) => axis.values.filter(v => at(v) >= lo && at(v) <= hi) };
  }
  const finite = values.filter(v => typeof v === "number" && Number.isFinite(v));
  let min = Math.min(...finite), max = Math.max(...finite);
  if (!finite.length) [min, max] = [0, 1];
  const log = min > 0 && max / min >= 10;
  const f = log ? Math.log10 : v => v, inv = log ? v => 10 ** v : v => v;
  const [a, b] = [f(min), f(max)];
  const at = v => (b === a ? 0.5 : (f(v) - a) / (b - a));
  const value = t => (b === a ? min : inv(a + t * (b - a)));
  const distinct = [...new Set(finite)].sort((p, q) => p - q);  // a sweep's few values: each a tick
  const ticks = distinct.length <= 8 ? distinct.map(v => [at(v), v]) : [[0, min], [0.5, value(0.5)], [1, max]];
  return { at, value, ticks: ticks.map(([t, v]) => [t, short(v)]), log };
}
// A number in at most four significant digits, without an exponent where it is short without one.
function short(v) { if (v == null) return ""; return Math.abs(v) >= 1e5 ? v.toExponential(2) : String(Number(v.toPrecision(4))); }
// A colour from blue (the metric's lowest) to orange (its highest).
function shade(t) { return `hsl(${Math.round(220 - 190 * t)} 75% 45%)`; }

export function drawParameters(data, { kept, brushes, onBrush }) {
  if (!data) return;
  drawCoordinates(document.getElementById("parcoords"), data, kept, brushes, onBrush);
  drawImportance(data);
  drawScatter(data, kept);
}

function drawCoordinates(box, data, kept, brushes, onBrush) {
  const width = Math.max(400, box.clientWidth || 800), n = data.axes.length;
  const root = svg("svg", { width, height: HEIGHT, viewBox: `0 0 ${width} ${HEIGHT}`, class: "parcoords" });
  if (n < 2 || !data.runs.length) {
    box.replaceChildren(el("p", data.runs.length ? "no config key varies among these runs" : "no runs", "muted"));
    return;
  }
  const x = i => SIDE + (i * (width - 2 * SIDE)) / (n - 1);
  const y = t => TOP + (1 - t) * (HEIGHT - TOP - BOTTOM);
  const scales = data.axes.map((axis, i) => scale(axis, data.runs.map(r => r.values[i])));
  const metric = scales[n - 1];
  const lines = svg("g", { class: "lines" });
  const order = [...data.runs].sort((a, b) => (kept ? kept.has(a.id) - kept.has(b.id) : 0));  // the kept on top
  for (const run of order) {
    const d = run.values.map((v, i) => `${i ? "L" : "M"}${x(i).toFixed(1)},${y(v == null ? NONE : scales[i].at(v)).toFixed(1)}`).join("");
    const on = !kept || kept.has(run.id), result = run.values[n - 1];
    const path = svg("path", {
      d, class: on ? "line kept" : "line dropped", fill: "none", "stroke-width": on ? 1.5 : 1,
      stroke: on ? (result === null ? "#888" : shade(metric.at(result))) : "#d4d4d8", "stroke-opacity": on ? 0.8 : 0.6,
    });
    path.dataset.run = run.id;
    path.appendChild(svg("title", {}, `${run.name}: ${data.axes.map((a, i) => `${a.name}=${run.values[i] ?? "—"}`).join(", ")}`));
    lines.appendChild(path);
  }
  root.appendChild(lines);
  const brushed = new Map((brushes || []).map(b => JSON.parse(b)).map(([field, ...range]) => [field, range]));
  data.axes.forEach((axis, i) => {
    const g = svg("g", { class: "axis" });
    g.dataset.key = axis.key;
    g.appendChild(svg("line", { x1: x(i), x2: x(i), y1: y(0), y2: y(1), stroke: "#333" }));
    const name = svg("text", { x: x(i), y: 16, "text-anchor": "middle", class: i === n - 1 ? "axis-name metric" : "axis-name" }, axis.name);
    name.appendChild(svg("title", {}, axis.key));
    g.appendChild(name);
    if (scales[i].log) g.appendChild(svg("text", { x: x(i), y: 30, "text-anchor": "middle", class: "axis-note" }, "log"));
    for (const [t, label] of scales[i].ticks) {
      g.appendChild(svg("text", { x: x(i) - 6, y: y(t) + 4, "text-anchor": "end", class: "tick" }, label));
    }
    if (data.runs.some(r => r.values[i] == null)) {
      g.appendChild(svg("text", { x: x(i) - 6, y: y(NONE) + 4, "text-anchor": "end", class: "tick none" }, "none"));
    }
    const range = brushed.get(axis.key);
    if (range) {
      const ts = range.length === 1 ? range[0].map(v => scales[i].at(String(v))) : range.map(v => scales[i].at(v));
      const [lo, hi] = [Math.min(...ts), Math.max(...ts)];
      g.appendChild(svg("rect", { x: x(i) - 8, width: 16, y: y(hi) - 3, height: y(lo) - y(hi) + 6, class: "brush" }));
    }
    const grab = svg("rect", { x: x(i) - 14, width: 28, y: y(1) - 6, height: y(0) - y(1) + 12, class: "grab" });
    brushAxis(root, grab, axis, scales[i], x(i), y, onBrush);
    g.appendChild(grab);
    root.appendChild(g);
  });
  box.replaceChildren(root);
}
// A drag along the axis brushes the range it covers; a click clears the axis's brush.
function brushAxis(root, grab, axis, s, cx, y, onBrush) {
  grab.addEventListener("pointerdown", down => {
    down.preventDefault();
    grab.setPointerCapture(down.pointerId);
    const top = root.getBoundingClientRect().top, start = down.clientY - top;
    const live = svg("rect", { x: cx - 8, width: 16, y: start, height: 0, class: "brush" });
    root.appendChild(live);
    const move = e => {
      const now = e.clientY - top;
      live.setAttribute("y", String(Math.min(start, now)));
      live.setAttribute("height", String(Math.abs(now - start)));
    };
    grab.addEventListener("pointermove", move);
    grab.addEventListener("pointerup", up => {
      grab.removeEventListener("pointermove", move);
      live.remove();
      const end = up.clientY - top;
      if (Math.abs(end - start) < 4) { onBrush(axis.key, null); return; }
      const t = py => Math.min(1, Math.max(0, (y(0) - py) / (y(0) - y(1))));
      const [lo, hi] = [t(Math.max(start, end)), t(Math.min(start, end))];
      if (axis.kind === "categorical") onBrush(axis.key, [axis.key, s.pick(lo, hi)]);
      else onBrush(axis.key, [axis.key, s.value(lo), s.value(hi)]);
    }, { once: true });
  });
}

function drawImportance(data) {
  const body = document.querySelector("#importance tbody");
  body.replaceChildren(...data.importance.map(({ key, rho, n }) => {
    const bar = el("span", null, rho === null ? "" : rho < 0 ? "bar neg" : "bar");
    bar.style.width = `${Math.round(Math.abs(rho ?? 0) * 60)}px`;
    const value = el("td", null, "num");
    value.append(bar, el("span", rho === null ? "—" : rho.toFixed(3)));
    const tr = document.createElement("tr");
    tr.append(el("td", key), value, el("td", n, "num"));
    tr.dataset.key = key;
    return tr;
  }));
  if (!data.importance.length) body.replaceChildren(row(["no numeric config key varies", "", ""]));
}

// One hyperparameter against the metric: uPlot, points only (its x sorted, as uPlot wants).
// One point per run; the runs the brushes and the filter leave out (not in `kept`) are grey, as their lines are.
async function drawScatter(data, kept) {
  const pick = document.getElementById("scatter-key"), div = document.getElementById("scatter");
  const numeric = data.importance.map(e => e.key);  // strongest first
  const before = pick.value;
  pick.replaceChildren(...numeric.map(k => Object.assign(el("option", k), { value: k })));
  if (numeric.includes(before)) pick.value = before;
  pick.onchange = () => drawScatter(data, kept);
  div.chart?.destroy();
  delete div.chart;
  const i = data.axes.findIndex(a => a.name === pick.value && a.kind === "numeric");
  if (i < 0) { div.replaceChildren(el("p", "no numeric config key to draw", "muted")); return; }
  try { await chartsLoading; } catch (e) { div.replaceChildren(el("p", e.message, "error")); return; }
  const n = data.axes.length;
  const points = data.runs.map(r => [r.values[i], r.values[n - 1], !kept || kept.has(r.id)])
    .filter(([a, b]) => a !== null && b !== null).sort((a, b) => a[0] - b[0]);
  const out = points.some(p => !p[2]);  // a series of the runs left out, grey, only where there are some
  const xs = points.map(p => p[0]), log = xs.length > 0 && xs[0] > 0 && xs[xs.length - 1] / xs[0] >= 10;
  div.replaceChildren();
  div.chart = new uPlot({
    title: `${data.metric} against ${pick.value}`, width: div.clientWidth || 420, height: 240,
    // a sweep's values repeat (five seeds at each learning rate): the range reaches past the first and
    // the last, or uPlot, which draws the points between the indices of the scale's ends, draws one
    // point of each end's value
    scales: { x: { time: false, distr: log ? 3 : 1, range: (u, lo, hi) => (log ? [lo / 1.25, hi * 1.25] : [lo - (hi - lo || 1) * 0.05, hi + (hi - lo || 1) * 0.05]) } },
    series: [{ label: pick.value },
      { label: data.metric, stroke: shade(0.1), paths: () => null, points: { show: true, size: 7, fill: shade(0.1) }, value: (u, v) => fmtNum(v) },
      ...(out ? [{ label: "left out", stroke: "#c4c4c8", paths: () => null, points: { show: true, size: 6, fill: "#d4d4d8" }, value: (u, v) => fmtNum(v) }] : [])],
    axes: [{ values: (u, splits) => splits.map(short) }, { values: (u, splits) => splits.map(short), size: 60 }],
    cursor: { drag: { x: false, y: false } },
  }, [xs, points.map(p => (p[2] ? p[1] : null)), ...(out ? [points.map(p => (p[2] ? null : p[1]))] : [])], div);
  div.dataset.points = String(points.length);
  div.dataset.kept = String(points.filter(p => p[2]).length);
}
