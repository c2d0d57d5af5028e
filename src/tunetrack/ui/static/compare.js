"use strict";
const ids = (new URLSearchParams(location.search).get("ids") || "").split(",").filter(Boolean);

// One request per chart, carrying every run's series of that key; zooming fetches detail again.
async function draw(chart) {
  const params = { x: "step", width: bucketWidth(document.getElementById("charts")), ...(chart.range || {}) };
  const entries = await fetchSeries(params, chart.runs.map(r => ({ run: r.id, key: chart.key })));
  const traces = entries.map((s, i) => ({ x: s.x || [], y: s.y || [], mode: "lines", type: "scatter",
                                          name: `${chart.runs[i].name} (${chart.runs[i].id})` }));
  await plotlyReady;
  await Plotly.react(chart.div, traces, chartLayout(chart.key, { showlegend: traces.length <= 10 }), PLOT_CONFIG);
  chart.div.dataset.traces = String(traces.length);
  chart.div.dataset.points = String(traces.reduce((n, t) => n + t.x.length, 0));
  markDrawn(chart.div);
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
  const keys = [...new Set(meta.runs.flatMap(r => r.keys))];
  await Promise.all(keys.map(async key => {
    const div = el("div", null, "chart");
    div.dataset.key = key;
    grid.appendChild(div);
    const chart = { key, div, runs: meta.runs.filter(r => r.keys.includes(key)), range: null };
    try {
      await draw(chart);
      onZoom(div, range => {
        chart.range = range;
        draw(chart).catch(e => { document.getElementById("error").textContent = `cannot zoom ${key}: ${e.message}`; });
      });
    } catch (e) { div.textContent = `cannot draw ${key}: ${e.message}`; }
  }));
}
load();
