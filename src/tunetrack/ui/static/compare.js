"use strict";
const ids = (new URLSearchParams(location.search).get("ids") || "").split(",").filter(Boolean);

async function load() {
  let runs;
  try { runs = await Promise.all(ids.map(id => api(`/api/runs/${encodeURIComponent(id)}`))); }
  catch (e) { document.getElementById("error").textContent = `cannot compare: ${e.message}`; return; }
  const head = document.querySelector("#diff thead tr");
  for (const r of runs) head.appendChild(el("th", `${r.name} (${r.id})`));
  const keys = [...new Set(runs.flatMap(r => Object.keys(r.flat_config)))].sort();
  const body = document.querySelector("#diff tbody");
  for (const key of keys) {
    const values = runs.map(r => r.flat_config[key] ?? "—");
    if (values.every(v => v === values[0])) continue;  // only what differs
    const tr = row([key, ...values]);
    tr.dataset.key = key;
    body.appendChild(tr);
  }
  const metricKeys = [...new Set(runs.flatMap(r => r.keys))];
  const grid = document.getElementById("charts");
  for (const key of metricKeys) {
    const div = el("div", null, "chart");
    div.dataset.key = key;
    grid.appendChild(div);
    const traces = await Promise.all(runs.filter(r => r.keys.includes(key)).map(async r => {
      const s = await api(`/api/runs/${encodeURIComponent(r.id)}/series?key=${encodeURIComponent(key)}&width=1000`);
      return { x: s.x, y: s.y, mode: "lines", name: `${r.name} (${r.id})`, type: s.x.length > 2000 ? "scattergl" : "scatter" };
    }));
    await Plotly.newPlot(div, traces, { title: { text: key, font: { size: 13 } }, margin: { l: 50, r: 10, t: 30, b: 30 } },
                         { responsive: true, displaylogo: false });
    div.dataset.traces = String(traces.length);
  }
}
load();
