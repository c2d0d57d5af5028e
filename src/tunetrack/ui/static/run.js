"use strict";
const runId = decodeURIComponent(location.pathname.split("/").pop());
const charts = new Map();  // key -> {div, node, cursor, raw: {x, y}}
let run = null;
const EVENT_COLORS = { checkpoint: "#16a34a", evaluation: "#2563eb", rewind: "#d97706", health: "#dc2626" };

function opts() {
  return { x: document.getElementById("xaxis").value, log: document.getElementById("logy").checked,
           smooth: +document.getElementById("smooth").value };
}
function smoothed(ys, alpha) {
  if (!alpha) return ys;
  let last = null;
  return ys.map(v => (v === null ? null : (last = last === null ? v : alpha * last + (1 - alpha) * v)));
}
function xsFor(xs) {
  const o = opts();
  if (o.x === "time") return xs.map(t => new Date(t * 1000));
  if (o.x === "relative") return xs.map(t => t - run.created);
  return xs;
}
function eventShapes() {
  if (opts().x !== "step") return [];
  return run.events.filter(e => EVENT_COLORS[e.kind]).map(e => ({
    type: "line", x0: e.step, x1: e.step, yref: "paper", y0: 0, y1: 1,
    line: { color: EVENT_COLORS[e.kind], width: 1, dash: "dot" } }));
}
function layout(title) {
  const o = opts();
  return { title: { text: title, font: { size: 13 } }, margin: { l: 50, r: 10, t: 30, b: 30 },
           yaxis: { type: o.log ? "log" : "linear" }, xaxis: { title: { text: o.x } }, shapes: eventShapes(),
           showlegend: false, uirevision: title };
}
function seriesUrl(key, node, extra, div) {
  const x = opts().x === "step" ? "step" : "time";
  // About one bucket per horizontal pixel: M4 then sends at most four points per pixel.
  const width = String(Math.max(100, Math.round((div && div.clientWidth) || 600)));
  const q = new URLSearchParams({ key, x, width, ...extra });
  if (node) q.set("node", node);
  return `/api/runs/${encodeURIComponent(runId)}/series?${q}`;
}
async function draw(chart) {
  const data = await api(seriesUrl(chart.key, chart.node, chart.range || {}, chart.div));
  chart.raw = { x: data.x, y: data.y };
  chart.cursor = data.cursor;
  const trace = { x: xsFor(data.x), y: smoothed(data.y, opts().smooth), mode: "lines", name: chart.key,
                  type: data.x.length > 2000 ? "scattergl" : "scatter" };
  await Plotly.react(chart.div, [trace], layout(chart.title), { responsive: true, displaylogo: false });
  chart.div.dataset.points = String(data.x.length);
}
async function poll(chart) {
  if (chart.range) return;  // zoomed in: the user is looking at history
  const data = await api(seriesUrl(chart.key, chart.node, { cursor: String(chart.cursor) }));
  if (data.reset) return draw(chart);
  if (!data.x.length) return;
  chart.cursor = data.cursor;
  chart.raw.x.push(...data.x); chart.raw.y.push(...data.y);
  await Plotly.extendTraces(chart.div, { x: [xsFor(data.x)], y: [data.y] }, [0]);
  chart.div.dataset.points = String(chart.raw.x.length);
}
function addChart(container, key, node) {
  const div = el("div", null, "chart");
  div.dataset.key = key;
  container.appendChild(div);
  const chart = { key, node, div, title: node ? `${key} · ${node}` : key, cursor: 0, raw: { x: [], y: [] } };
  charts.set(node ? `${node}/${key}` : key, chart);
  draw(chart).then(() => {
    div.on("plotly_relayout", ev => {
      if (ev["xaxis.range[0]"] !== undefined && opts().x === "step") {
        chart.range = { start: String(ev["xaxis.range[0]"]), end: String(ev["xaxis.range[1]"]) };
        draw(chart);  // re-fetch detail for the zoomed range
      } else if (ev["xaxis.autorange"]) { chart.range = null; draw(chart); }
    });
  }).catch(e => { div.textContent = `cannot draw ${key}: ${e.message}`; });
}
function renderEvents() {
  const body = document.querySelector("#events tbody");
  body.replaceChildren();
  for (const e of run.events) {
    if (e.kind === "text") continue;
    const details = Object.entries(e).filter(([k]) => !["kind", "step", "time"].includes(k))
      .map(([k, v]) => `${k}=${typeof v === "object" ? JSON.stringify(v) : v}`).join(", ");
    body.appendChild(row([e.step, e.kind, details]));
  }
}
function renderMedia() {
  const box = document.getElementById("media");
  box.replaceChildren();
  for (const e of run.events) {
    if (e.kind === "text") {
      box.appendChild(el("h3", `${e.key} · step ${e.step}`));
      for (const r of e.rows || []) box.appendChild(el("pre", Object.entries(r).map(([k, v]) => `${k}: ${v}`).join("\n")));
    } else if (e.kind === "image") {
      const img = el("img", null, "sample");
      img.src = `/api/runs/${encodeURIComponent(runId)}/media/${e.path.split("/").map(encodeURIComponent).join("/")}`;
      img.alt = `${e.key} step ${e.step}`;
      box.appendChild(img);
    }
  }
}
function renderConfig() {
  const query = document.getElementById("cfgsearch").value.toLowerCase();
  const body = document.querySelector("#config tbody");
  body.replaceChildren();
  for (const [k, v] of Object.entries(run.flat_config)) {
    if (!query || k.toLowerCase().includes(query) || v.toLowerCase().includes(query)) body.appendChild(row([k, v]));
  }
}
async function load() {
  try {
    run = await api(`/api/runs/${encodeURIComponent(runId)}`);
  } catch (e) {
    document.getElementById("error").textContent = `cannot show this run: ${e.message}`;
    return;
  }
  document.getElementById("title").textContent = `${run.name} (${run.id})`;
  document.getElementById("state").replaceWith(Object.assign(stateBadge(run.state), { id: "state" }));
  if (run.error) document.getElementById("error").textContent = run.error;
  for (const key of run.keys) addChart(document.getElementById("charts"), key, null);
  for (const node of run.nodes) for (const key of run.system_keys) addChart(document.getElementById("system"), key, node);
  renderEvents(); renderMedia(); renderConfig();
}
async function refresh() {
  if (!run || run.state !== "running") return;
  try {
    const fresh = await api(`/api/runs/${encodeURIComponent(runId)}`);
    for (const key of fresh.keys) if (!charts.has(key)) addChart(document.getElementById("charts"), key, null);
    run.events = fresh.events; run.state = fresh.state;
    document.getElementById("state").replaceWith(Object.assign(stateBadge(run.state), { id: "state" }));
    renderEvents();
    await Promise.all([...charts.values()].map(poll));
    document.getElementById("status").textContent = `live · ${new Date().toLocaleTimeString()}`;
  } catch (e) { document.getElementById("status").textContent = `live update failed: ${e.message}`; }
}
for (const id of ["xaxis", "logy", "smooth"]) {
  document.getElementById(id).addEventListener("change", () => charts.forEach(draw));
}
document.getElementById("cfgsearch").addEventListener("input", renderConfig);
load();
setInterval(refresh, 1000);
