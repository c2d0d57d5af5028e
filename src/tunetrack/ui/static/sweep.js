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
const HEIGHT = 300, TOP = 44, BOTTOM = 40, SIDE = 80;
const TICK_GAP = 13;  // px between two tick labels of an axis (11 px text): closer ones are left out
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
// A number in at most `digits` significant digits, without an exponent where it is short without one
// (0.0001, 12.5), with one where it is not (5.1e-5, 2.5e+5).
export function short(v, digits = 4) {
  if (v == null) return "";
  if (v === 0) return "0";
  const plain = String(Number(v.toPrecision(digits)));
  return Math.abs(v) >= 1e5 || (Math.abs(v) < 1e-3 && plain.length > 6) ? Number(v.toPrecision(digits)).toExponential() : plain;
}
// A colour from blue (the metric's lowest) to orange (its highest).
function shade(t) { return `hsl(${Math.round(220 - 190 * t)} 75% 45%)`; }

export function drawParameters(data, { kept, brushes, onBrush }) {
  if (!data) return;
  const box = document.getElementById("parcoords");
  drawCoordinates(box, informative(data, Math.max(3, Math.floor((box.clientWidth || 800) / 90))), kept, brushes, onBrush);
  drawImportance(data);
  drawScatter(data, kept);
}

// The axes worth drawing: the config keys that vary among the runs that have the metric (a key that
// differs only between runs without it says nothing of it), at most `most` of them (about one per 90
// px), the strongest rank correlation first, then the categorical ones; `shown` says how many of how
// many. (Runs of several projects differ in hundreds of keys: a Trainer's whole config.)
function informative(data, most) {
  const n = data.axes.length, measured = data.runs.filter(r => r.values[n - 1] != null);
  const varies = i => new Set(measured.map(r => JSON.stringify(r.values[i] ?? null))).size > 1;
  const rho = new Map(data.importance.map(e => [e.key, e.rho]));
  const strength = a => (rho.get(a.key) == null ? -1 : Math.abs(rho.get(a.key)));
  let keep = data.axes.slice(0, -1).map((a, i) => i).filter(varies);
  if (keep.length > most) keep = [...keep].sort((i, j) => strength(data.axes[j]) - strength(data.axes[i])).slice(0, most).sort((i, j) => i - j);
  const at = [...keep, n - 1];
  return { ...data, axes: at.map(i => data.axes[i]), runs: data.runs.map(r => ({ ...r, values: at.map(i => r.values[i]) })),
           shown: [keep.length, n - 1] };
}
// Labels never collide: an axis's name is cut to the room between its neighbours, a tick label to the
// room left of its axis (the first axis's, to the picture's edge), each with an ellipsis and the whole
// text on hover; ticks too close to the one above are left out. A legend under the picture says what
// the colours of the lines are.
function drawCoordinates(box, data, kept, brushes, onBrush) {
  const width = Math.max(400, box.clientWidth || 800), n = data.axes.length;
  const root = svg("svg", { width, height: HEIGHT, viewBox: `0 0 ${width} ${HEIGHT}`, class: "parcoords" });
  if (n < 2 || !data.runs.length) {
    box.replaceChildren(el("p", data.runs.length ? "no config key varies among the runs that have the metric" : "no runs", "muted"));
    return;
  }
  const x = i => SIDE + (i * (width - 2 * SIDE)) / (n - 1);
  const gap = (width - 2 * SIDE) / (n - 1);  // between two axes
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
  const fits = [];  // [text element, the room it has]: cut once the picture is in the page and can be measured
  data.axes.forEach((axis, i) => {
    const g = svg("g", { class: "axis" });
    g.dataset.key = axis.key;
    g.appendChild(svg("line", { x1: x(i), x2: x(i), y1: y(0), y2: y(1), stroke: "#333" }));
    const name = svg("text", { x: x(i), y: 16, "text-anchor": "middle", class: i === n - 1 ? "axis-name metric" : "axis-name" }, axis.name);
    g.appendChild(name);
    fits.push([name, 2 * Math.min(x(i), width - x(i), gap / 2) - 8, axis.key]);
    if (scales[i].log) g.appendChild(svg("text", { x: x(i), y: 30, "text-anchor": "middle", class: "axis-note" }, "log"));
    const ticks = scales[i].ticks.map(([t, label]) => [y(t), label, "tick"]);
    if (data.runs.some(r => r.values[i] == null)) ticks.push([y(NONE), "none", "tick none"]);  // where runs without a value cross
    let above = -Infinity;
    for (const [at, label, cls] of ticks.sort((a, b) => a[0] - b[0])) {
      if (at - above < TICK_GAP && cls === "tick") continue;  // too close to the label above: left out
      above = at;
      const tick = svg("text", { x: x(i) - 6, y: at + 4, "text-anchor": "end", class: cls }, label);
      g.appendChild(tick);
      fits.push([tick, (i ? gap : x(0)) - 12, String(label)]);
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
  const [shown, of] = data.shown || [n - 1, n - 1];
  const note = shown < of ? el("span", `${shown} of the ${of} keys that vary: those that vary among the runs with the metric, the strongest first`, "muted") : "";
  box.replaceChildren(root, scaleLegend(data, note));
  for (const [text, room, whole] of fits) fit(text, room, whole);
}
// Cuts an SVG text to `room` px with an ellipsis; the whole text (or `whole`) on hover.
function fit(text, room, whole) {
  const full = text.textContent;
  text.appendChild(svg("title", {}, whole || full));
  if (text.getComputedTextLength() <= room) return;
  const node = text.firstChild;  // the text itself, before its title
  let lo = 0, hi = full.length;
  while (lo < hi) {  // the longest start of the text that fits with its ellipsis
    const mid = Math.ceil((lo + hi) / 2);
    node.textContent = `${full.slice(0, mid)}…`;
    if (text.getComputedTextLength() <= room) lo = mid; else hi = mid - 1;
  }
  node.textContent = lo ? `${full.slice(0, lo)}…` : "…";
}
// What the colours of the lines say: the metric from its lowest (blue) to its highest (orange).
function scaleLegend(data, note) {
  const values = data.runs.map(r => r.values[data.axes.length - 1]).filter(v => typeof v === "number" && Number.isFinite(v));
  const legend = el("div", null, "scale-legend");
  if (!values.length) return legend;
  const bar = el("span", null, "scale-bar");
  bar.style.background = `linear-gradient(to right, ${[0, 0.25, 0.5, 0.75, 1].map(shade).join(", ")})`;
  legend.append(el("span", `line colour: ${data.metric}`, "muted"), el("span", short(Math.min(...values))), bar,
                el("span", short(Math.max(...values))), el("span", "grey: no value, or left out by the filter or a brush", "muted"), note);
  return legend;
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
  // a key no run has with the metric, or that is the same in all that have it, says nothing of it
  const keys = data.importance.filter(({ n, rho }) => n > 0 && rho !== null);
  body.replaceChildren(...keys.map(({ key, rho, n }) => {
    const bar = el("span", null, rho === null ? "" : rho < 0 ? "bar neg" : "bar");
    bar.style.width = `${Math.round(Math.abs(rho ?? 0) * 60)}px`;
    const value = el("td", null, "num");
    value.append(bar, el("span", rho === null ? "—" : rho.toFixed(3)));
    const tr = document.createElement("tr");
    tr.append(el("td", key), value, el("td", n, "num"));
    tr.dataset.key = key;
    return tr;
  }));
  if (!keys.length) body.replaceChildren(row(["no numeric config key varies", "", ""]));
}

// One hyperparameter against the metric: uPlot, points only (its x sorted, as uPlot wants).
// One point per run; the runs the brushes and the filter leave out (not in `kept`) are grey, as their lines are.
async function drawScatter(data, kept) {
  const pick = document.getElementById("scatter-key"), div = document.getElementById("scatter");
  const numeric = data.importance.filter(e => e.n > 0 && e.rho !== null).map(e => e.key);  // strongest first
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
  const distinct = [...new Set(xs)], whole = xs.every(Number.isInteger);
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
    // a sweep's few values are the x ticks, each labelled (1e-5, 3e-5, 1e-4); a key of whole numbers
    // (a LoRA rank, a batch size) has no ticks between them
    // (uPlot's own filter labels only 1, 2, 5 x 10^k on a log scale)
    axes: [{ splits: distinct.length <= 8 ? () => distinct : undefined, filter: distinct.length <= 8 ? (u, splits) => splits : undefined,
             values: (u, splits) => splits.map(v => (whole && !Number.isInteger(v) ? "" : short(v))) },
           { values: (u, splits) => splits.map(v => short(v)), size: 60 }],
    cursor: { drag: { x: false, y: false } },
  }, [xs, points.map(p => (p[2] ? p[1] : null)), ...(out ? [points.map(p => (p[2] ? null : p[1]))] : [])], div);
  div.dataset.points = String(points.length);
  div.dataset.kept = String(points.filter(p => p[2]).length);
}
