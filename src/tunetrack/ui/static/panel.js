import { NO_CHARTS, align, chartsLoaded, dropChart, el, lineChart, setLines } from "./common.js";
import { drawnFamily } from "./many.js";
import { drawnDistribution } from "./dist.js";
import { sampleCell } from "./sampletext.js";

const PANEL_CELLS = { number: "tt-num", text: "tt-text" };  // the panel's classes (panel.css)

// The notebook panel's front end: an anywidget ES module, which ui/notebook.py makes one file of
// (uPlot, then this with common.js inlined: the dashboard's charts, palette, point rule and alignment;
// and many.js and dist.js, the run page's cards).
// User data is inserted with textContent only. The model holds `runs` ([{id, name, project, state,
// step}]) and `series` ({run id: {key: [steps, values]}}, values null for NaN and ±Inf; a step logged
// as None is not sent, so the line joins its neighbours) and `samples` ([{run, name, key, step, steps,
// total, columns: [[name, type]], rows: [{index, cells}]}]: each run's latest samples, already worded
// and cut by the kernel, reader/as_text.py's samples_text) and `cards` ([{run, name, kind, ...}]: a
// family of keys, the run page's many.js card; a key's distributions, dist.js's; their data fitted to
// a card by the kernel, ui/notebook.py's _cards).

function render({ model, el: root }) {
  root.classList.add("tunetrack-panel");
  const head = el("div", null, "tt-head");
  const grid = el("div", null, "tt-grid");
  const cardBox = el("div", null, "tt-cards");
  const samples = el("div", null, "tt-samples");
  root.append(head, grid, cardBox, samples);
  let cards = [];  // the cards drawn: {fam} or {dist}
  const charts = new Map();  // key -> {box, ids: the run ids of its lines}

  function draw() {
    const runs = model.get("runs");
    const series = model.get("series");
    head.replaceChildren(...runs.map((r) => {
      const item = el("span", `${r.name} (${r.id})${r.project ? " in " + r.project : ""} `, "tt-run");
      item.append(el("span", r.state, `tt-state tt-state-${r.state}`));
      item.append(document.createTextNode(r.step === null || r.step === undefined ? "" : ` · step ${r.step}`));
      return item;
    }));
    if (!chartsLoaded()) {
      grid.replaceChildren(el("div", NO_CHARTS, "tt-note"));
      return;
    }
    const keys = [...new Set(runs.flatMap((r) => Object.keys(series[r.id] || {})))];
    let points = 0;
    for (const key of keys) {
      const withKey = runs.filter((r) => series[r.id] && series[r.id][key]);
      const data = align(withKey.map((r) => series[r.id][key]));
      points += withKey.reduce((n, r) => n + series[r.id][key][0].length, 0);
      const ids = withKey.map((r) => r.id).join(",");
      let chart = charts.get(key);
      if (chart && chart.ids !== ids) { dropChart(chart.box); chart.box.remove(); charts.delete(key); chart = undefined; }
      if (!chart) {
        chart = { box: el("div", null, "tt-chart"), ids };
        grid.append(chart.box);
        lineChart(chart.box, data, null, { title: key, x: "step", names: withKey.map((r) => r.name),
                                           colors: withKey.map((r) => runs.indexOf(r)), legend: withKey.length > 1 });
        charts.set(key, chart);
      } else {
        setLines(chart.box.chart, data, null);
      }
    }
    root.dataset.points = String(points);
    root.dataset.charts = String(charts.size);
  }

  function drawSamples() {
    const tables = model.get("samples") || [];
    const several = (model.get("runs") || []).length > 1;
    samples.replaceChildren(...tables.map((t) => {
      const box = el("div", null, "tt-sample");
      box.dataset.run = t.run;
      box.dataset.step = String(t.step);
      const shown = t.rows.length < t.total ? `${t.rows.length} of ${t.total}` : `${t.total}`;
      box.append(el("div", `${several ? t.name + ": " : ""}${t.key} at step ${t.step} (${shown} rows; samples at ${t.steps} step${t.steps === 1 ? "" : "s"})`, "tt-sample-title"));
      const table = box.appendChild(el("table"));
      const head = table.appendChild(el("thead")).appendChild(el("tr"));
      for (const [name] of t.columns) head.appendChild(el("th", name));
      const body = table.appendChild(el("tbody"));
      for (const r of t.rows) {
        const tr = body.appendChild(el("tr"));
        r.cells.forEach((text, i) => tr.appendChild(sampleCell(r, i, text, t.columns[i][1], PANEL_CELLS)));
      }
      return box;
    }));
    root.dataset.samples = String(tables.reduce((n, t) => n + t.rows.length, 0));
  }

  // The run page's cards: a family of keys as its band and heatmap (many.js; the band is a uPlot chart),
  // a key's distributions as a heatmap of value x step (dist.js), drawn from what the kernel sent.
  function drawCards() {
    for (const c of cards) if (c.fam) dropChart(c.fam.band);
    cardBox.replaceChildren();
    const several = (model.get("runs") || []).length > 1;
    cards = (model.get("cards") || []).map((d) => {
      if (d.kind === "family") {
        if (!chartsLoaded()) return {};
        const fam = drawnFamily(cardBox, d);
        if (several) fam.title.append(` · ${d.name}`);
        return { fam };
      }
      return { dist: drawnDistribution(cardBox, several ? { ...d, key: `${d.key} · ${d.name}` } : d) };
    });
    root.dataset.cards = String(cardBox.children.length);
  }

  model.on("change:series", draw);
  model.on("change:cards", drawCards);
  model.on("change:runs", draw);
  model.on("change:samples", drawSamples);
  draw();
  drawSamples();
  drawCards();
  return () => { charts.forEach((c) => dropChart(c.box)); cards.forEach((c) => c.fam && dropChart(c.fam.band)); };
}

export default { render };
