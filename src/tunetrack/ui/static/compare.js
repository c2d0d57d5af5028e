import { align, api, bucketWidth, chartsReady, dropChart, el, fetchSeries, lineChart, markDrawn, row, setLines } from "./common.js";
import { showSideBySide } from "./samples.js";

const chartsLoading = chartsReady();  // asked before the page has loaded (see chartsReady)
chartsLoading.catch(() => {});  // reported where the charts would be
const query = new URLSearchParams(location.search);
const ids = (query.get("ids") || "").split(",").filter(Boolean);
// Grouped (`group=lr,lora.r` or `all-but-seed`, kept in the URL): every chart draws one line per group,
// the mean over its runs at each step, in a band from their min to their max, or of ± one standard
// deviation (`band=std`). The server folds the runs (GET /api/compare/groups, reader/sweeps.py).
let groupBy = query.get("group") || "", band = query.get("band") === "std" ? "std" : "minmax";
document.getElementById("groupby").value = groupBy;
document.getElementById("band").value = band;
document.getElementById("band-choice").hidden = !groupBy;

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
                                              onZoom: range => zoom(chart, range) });
  }
  chart.div.dataset.traces = String(entries.length);
  chart.div.dataset.points = String(entries.reduce((n, s) => n + (s.x || []).length, 0));
  markDrawn(chart.div);
}
// One line per group, its mean, and its band (uPlot bands between each group's high and low series).
async function drawGroups(chart) {
  const q = new URLSearchParams({ by: groupBy, key: chart.key, band, width: bucketWidth(document.getElementById("charts")) });
  for (const r of chart.runs) q.append("id", r.id);
  const folded = await api(`/api/compare/groups?${q}`);
  const data = align(folded.groups.map(g => [g.x, g.mean, g.high, g.low]));
  dropChart(chart.div);
  chart.div.replaceChildren();
  lineChart(chart.div, data, chart.range, { title: chart.key, x: "step", names: folded.groups.map(g => `${g.label} (n=${g.runs.length})`),
                                            bands: true, onZoom: range => zoom(chart, range) });
  chart.div.dataset.traces = String(folded.groups.length);
  chart.div.dataset.bands = String(folded.groups.length);
  chart.div.dataset.points = String(folded.groups.reduce((n, g) => n + g.x.length, 0));
  markDrawn(chart.div);
  document.getElementById("groups-status").textContent = `${folded.groups.length} groups of ${ids.length} runs`;
}
function zoom(chart, range) {
  if (!range && !chart.range) return;  // a double click on a chart that shows all it has
  chart.range = range;
  draw(chart).catch(e => { document.getElementById("error").textContent = `cannot zoom ${chart.key}: ${e.message}`; });
}
let charts = [];
async function drawAll() {
  document.getElementById("error").textContent = "";
  await Promise.all(charts.map(async chart => {
    try { await draw(chart); } catch (e) { chart.div.textContent = `cannot draw ${chart.key}: ${e.message}`; }
  }));
}
function regroup() {
  const next = new URLSearchParams(location.search);
  next.delete("group"); next.delete("band");
  if (groupBy) next.set("group", groupBy);
  if (groupBy && band !== "minmax") next.set("band", band);
  history.replaceState(null, "", `?${next}`);
  document.getElementById("band-choice").hidden = !groupBy;
  document.getElementById("groups-status").textContent = "";
  for (const chart of charts) { dropChart(chart.div); chart.div.replaceChildren(); chart.range = null; }
  drawAll();
}
document.getElementById("groupby").addEventListener("change", e => { groupBy = e.target.value.trim(); regroup(); });
document.getElementById("band").addEventListener("change", e => { band = e.target.value; regroup(); });
async function load() {
  let meta;
  try { meta = await api(`/api/compare?${ids.map(id => `id=${encodeURIComponent(id)}`).join("&")}`); }
  catch (e) { document.getElementById("error").textContent = `cannot compare: ${e.message}`; return; }
  const head = document.querySelector("#diff thead tr");
  for (const r of meta.runs) head.appendChild(el("th", `${r.name} (${r.id})`));
  const body = document.querySelector("#diff tbody");
  for (const d of meta.rows) {  // only the keys whose values differ
    const tr = row([d.key, ...d.values.map(v => v ?? "—")]);
    tr.dataset.key = d.key;
    body.appendChild(tr);
  }
  const grid = document.getElementById("charts");
  try { await chartsLoading; } catch (e) { grid.replaceChildren(el("p", e.message, "error")); return; }
  const keys = [...new Set(meta.runs.flatMap(r => r.keys))];
  charts = keys.map(key => {
    const div = el("div", null, "chart");
    div.dataset.key = key;
    grid.appendChild(div);
    return { key, div, runs: meta.runs.filter(r => r.keys.includes(key)), range: null };
  });
  await drawAll();
}
load();
if (ids.length === 2) {  // two runs: their samples side by side (a step, a prompt), if both logged some
  const params = new URLSearchParams(location.search);
  const number = name => (params.get(name) === null ? null : Number(params.get(name)));
  showSideBySide(ids, { key: params.get("key"), step: number("step"), row: number("row") });
}
