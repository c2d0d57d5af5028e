import { align, api, bucketWidth, chartsReady, dropChart, el, fetchSeries, lineChart, markDrawn, plural, row, setLines } from "./common.js";
import { showSideBySide } from "./samples.js";

const chartsLoading = chartsReady();  // asked before the page has loaded (see chartsReady)
chartsLoading.catch(() => {});  // reported where the charts would be
const query = new URLSearchParams(location.search);
const ids = (query.get("ids") || "").split(",").filter(Boolean);
// Grouped (`group=lr,lora.r` or `all-but-seed`, kept in the URL): every chart draws one line per group,
// the mean over its runs at each step, in a band from their min to their max, or of ± one standard
// deviation (`band=std`). The server folds the runs (GET /api/compare/groups, reader/sweeps.py).
// A group key no run has is the server's one line beside the box (once, not on every chart), and
// the charts stay as they were.
let groupBy = query.get("group") || "", band = query.get("band") === "std" ? "std" : "minmax";
document.getElementById("groupby").value = groupBy;
document.getElementById("band").value = band;
document.getElementById("band-choice").hidden = !groupBy;
let meta = null;  // the runs (GET /api/compare): their order gives each run its colour on every chart
let folded = null;  // the groups as the server last folded them ({label, runs} each), while grouped
const groupColors = new Map();  // a group's label -> its colour, the same on every chart of the page

function runColors(runs) { return runs.map(r => meta.runs.findIndex(m => m.id === r.id)); }
function groupColor(label) {
  if (!groupColors.has(label)) groupColors.set(label, groupColors.size);
  return groupColors.get(label);
}

// One request per chart, carrying every run's series of that key; zooming fetches detail again. The runs'
// points are aligned on the union of their steps (uPlot shares one x array): a run without a point at a
// step has a hole there, which its line spans; a null it logged (NaN) stays a gap.
async function draw(chart) {
  if (groupBy) return drawGroups(chart);
  const params = { x: "step", width: bucketWidth(document.getElementById("charts")), ...(chart.range || {}) };
  const entries = await fetchSeries(params, chart.runs.map(r => ({ run: r.id, key: chart.key })));
  const data = align(entries.map(s => [s.x || [], s.y || []]));
  if (chart.div.chart) setLines(chart.div.chart, data, chart.range);
  else {
    lineChart(chart.div, data, chart.range, { title: chart.key, x: "step", names: chart.runs.map(r => `${r.name} (${r.id})`),
                                              colors: runColors(chart.runs), onZoom: range => zoom(chart, range) });
  }
  chart.div.dataset.traces = String(entries.length);
  chart.div.dataset.points = String(entries.reduce((n, s) => n + (s.x || []).length, 0));
  markDrawn(chart.div);
}
function groupsQuery(by, key, runs) {
  const q = new URLSearchParams({ by, key, band, width: bucketWidth(document.getElementById("charts")) });
  for (const r of runs) q.append("id", r.id);
  return q;
}
// One line per group, its mean, and its band (uPlot bands between each group's high and low series).
async function drawGroups(chart, answer = null) {
  const got = answer || await api(`/api/compare/groups?${groupsQuery(groupBy, chart.key, chart.runs)}`);
  const data = align(got.groups.map(g => [g.x, g.mean, g.high, g.low]));
  dropChart(chart.div);
  chart.div.replaceChildren();
  lineChart(chart.div, data, chart.range, { title: chart.key, x: "step", names: got.groups.map(g => `${g.label} (n=${g.runs.length})`),
                                            colors: got.groups.map(g => groupColor(g.label)), bands: true,
                                            onZoom: range => zoom(chart, range) });
  chart.div.dataset.traces = String(got.groups.length);
  chart.div.dataset.bands = String(got.groups.length);
  chart.div.dataset.points = String(got.groups.reduce((n, g) => n + g.x.length, 0));
  markDrawn(chart.div);
}
function zoom(chart, range) {
  if (!range && !chart.range) return;  // a double click on a chart that shows all it has
  chart.range = range;
  draw(chart).catch(e => { document.getElementById("error").textContent = `cannot zoom ${chart.key}: ${e.message}`; });
}
let charts = [];
async function drawAll(first = null) {
  document.getElementById("error").textContent = "";
  await Promise.all(charts.map(async (chart, i) => {
    try {
      if (i === 0 && first) await drawGroups(chart, first);
      else await draw(chart);
    } catch (e) { chart.div.textContent = `cannot draw ${chart.key}: ${e.message}`; }
  }));
}
// Whether every run folds by `by` (the groups of the first chart's key), asked before any chart is
// dropped: a key no run has says so beside the box. The answer is the first chart's where that chart
// has every run.
async function fold(by) {
  const error = document.getElementById("groups-error");
  if (!by || !charts.length) { error.textContent = ""; return { ok: true, answer: null }; }
  try {
    const answer = await api(`/api/compare/groups?${groupsQuery(by, charts[0].key, meta.runs)}`);
    error.textContent = "";
    return { ok: true, answer };
  } catch (e) {
    error.textContent = e.message;
    return { ok: false, answer: null };
  }
}
function firstChart(answer) { return answer && charts[0].runs.length === meta.runs.length ? answer : null; }
function keepInUrl() {
  const next = new URLSearchParams(location.search);
  next.delete("group"); next.delete("band");
  if (groupBy) next.set("group", groupBy);
  if (groupBy && band !== "minmax") next.set("band", band);
  history.replaceState(null, "", `?${next}${location.hash}`);
}
async function regroup(by) {
  const { ok, answer } = await fold(by);
  if (!ok) return;  // the charts stay as they were; the box keeps what was typed, to be corrected
  groupBy = by;
  folded = answer ? answer.groups : null;
  keepInUrl();
  document.getElementById("band-choice").hidden = !groupBy;
  groupsStatus();
  drawDiff();
  for (const chart of charts) { dropChart(chart.div); chart.div.replaceChildren(); chart.range = null; }
  await drawAll(firstChart(answer));
}
function groupsStatus() {
  document.getElementById("groups-status").textContent = folded ? `${plural(folded.length, "group")} of ${plural(ids.length, "run")}` : "";
}
document.getElementById("groupby").addEventListener("change", e => regroup(e.target.value.trim()));
document.getElementById("band").addEventListener("change", e => { band = e.target.value; regroup(groupBy); });

// The config keys whose values differ: one column per run, or, grouped, one per group (a key whose
// runs in a group differ shows each of their values).
function drawDiff() {
  const head = document.querySelector("#diff thead tr"), body = document.querySelector("#diff tbody");
  const byId = new Map(meta.runs.map((r, i) => [r.id, i]));
  const columns = folded
    ? folded.map(g => ({ label: `${g.label} (n=${g.runs.length})`, at: g.runs.map(id => byId.get(id)).filter(i => i !== undefined) }))
    : meta.runs.map((r, i) => ({ label: `${r.name} (${r.id})`, at: [i] }));
  head.replaceChildren(el("th", "key"), ...columns.map(c => el("th", c.label)));
  const rows = [];
  for (const d of meta.rows) {
    const cells = columns.map(c => [...new Set(c.at.map(i => d.values[i] ?? "—"))]);
    if (folded && cells.every(v => v.length === 1 && v[0] === cells[0][0])) continue;  // the same in every group
    const tr = row([d.key, ...cells.map(v => v.join(" | "))]);
    tr.dataset.key = d.key;
    rows.push(tr);
  }
  if (!rows.length) rows.push(row([el("td", folded ? "the groups differ in no config key" : "the runs have the same config", "muted")]));
  body.replaceChildren(...rows);
}
// Nothing to compare, or runs that cannot be read: one line that says what to do, and none of the page's empty parts.
function cannot(message) {
  document.getElementById("error").textContent = message;
  for (const node of document.querySelectorAll("main > :not(#error)")) node.hidden = true;
  document.getElementById("report").hidden = true;
}
async function load() {
  if (!ids.length) {
    cannot("pick runs to compare: tick them on the runs page (/), or open /compare?ids=a,b");
    return;
  }
  try { meta = await api(`/api/compare?${ids.map(id => `id=${encodeURIComponent(id)}`).join("&")}`); }
  catch (e) { cannot(`cannot compare: ${e.message}`); return; }
  if (ids.length === 2) {  // two runs: their samples side by side (a step, a prompt), if both logged some
    const number = name => (query.get(name) === null ? null : Number(query.get(name)));
    showSideBySide(ids, { key: query.get("key"), step: number("step"), row: number("row") });
  }
  drawDiff();
  const grid = document.getElementById("charts");
  try { await chartsLoading; } catch (e) { grid.replaceChildren(el("p", e.message, "error")); return; }
  const keys = [...new Set(meta.runs.flatMap(r => r.keys))];
  charts = keys.map(key => {
    const div = el("div", null, "chart");
    div.dataset.key = key;
    grid.appendChild(div);
    return { key, div, runs: meta.runs.filter(r => r.keys.includes(key)), range: null };
  });
  const asked = groupBy;
  groupBy = "";
  const { ok, answer } = await fold(asked);
  if (ok) { groupBy = asked; folded = answer ? answer.groups : null; }
  document.getElementById("band-choice").hidden = !groupBy;
  groupsStatus();
  if (folded) drawDiff();
  await drawAll(firstChart(answer));
  // opened at #samples (from a run's Samples view): the charts above have their height now
  if (location.hash === "#samples" && !document.getElementById("samples-section").hidden) {
    document.getElementById("samples").scrollIntoView({ block: "start" });
  }
}
load();
