import { align, api, bucketWidth, chartsReady, el, fetchSeries, lineChart, markDrawn, row, setLines } from "./common.js";
import { showSideBySide } from "./samples.js";

const chartsLoading = chartsReady();  // asked before the page has loaded (see chartsReady)
chartsLoading.catch(() => {});  // reported where the charts would be
const ids = (new URLSearchParams(location.search).get("ids") || "").split(",").filter(Boolean);

// One request per chart, carrying every run's series of that key; zooming fetches detail again. The runs'
// points are aligned on the union of their steps (uPlot shares one x array): a run without a point at a
// step has a hole there, which its line spans; a null it logged (NaN) stays a gap.
async function draw(chart) {
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
function zoom(chart, range) {
  if (!range && !chart.range) return;  // a double click on a chart that shows all it has
  chart.range = range;
  draw(chart).catch(e => { document.getElementById("error").textContent = `cannot zoom ${chart.key}: ${e.message}`; });
}
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
  await Promise.all(keys.map(async key => {
    const div = el("div", null, "chart");
    div.dataset.key = key;
    grid.appendChild(div);
    const chart = { key, div, runs: meta.runs.filter(r => r.keys.includes(key)), range: null };
    try { await draw(chart); } catch (e) { div.textContent = `cannot draw ${key}: ${e.message}`; }
  }));
}
load();
if (ids.length === 2) {  // two runs: their samples side by side (a step, a prompt), if both logged some
  const params = new URLSearchParams(location.search);
  const number = name => (params.get(name) === null ? null : Number(params.get(name)));
  showSideBySide(ids, { key: params.get("key"), step: number("step"), row: number("row") });
}
