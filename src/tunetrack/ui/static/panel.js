// The notebook panel's front end (an anywidget ES module; ui/notebook.py prepends uPlot to it).
// User data is inserted with textContent only. The model holds `runs` ([{id, name, project, state,
// step}]) and `series` ({run id: {key: [steps, values]}}, values null for NaN and ±Inf).

const COLORS = ["#2563eb", "#dc2626", "#16a34a", "#9333ea", "#ea580c", "#0891b2", "#4d7c0f", "#be185d"];

function element(tag, className, text) {
  const node = document.createElement(tag);
  if (className) node.className = className;
  if (text !== undefined) node.textContent = text;
  return node;
}

// One x axis for several runs: the union of their steps, each run's values at them (null elsewhere).
function aligned(parts) {
  const xs = [...new Set(parts.flatMap(([steps]) => steps))].sort((a, b) => a - b);
  const at = new Map(xs.map((x, i) => [x, i]));
  const ys = parts.map(([steps, values]) => {
    const y = new Array(xs.length).fill(null);
    steps.forEach((s, i) => { y[at.get(s)] = values[i]; });
    return y;
  });
  return [xs, ...ys];
}

function render({ model, el }) {
  el.classList.add("tunetrack-panel");
  const head = element("div", "tt-head");
  const grid = element("div", "tt-grid");
  el.append(head, grid);
  const charts = new Map();  // key -> {plot, runs: run ids in series order}

  function draw() {
    const runs = model.get("runs");
    const series = model.get("series");
    head.replaceChildren(...runs.map((r) => {
      const item = element("span", "tt-run", `${r.name} (${r.id})${r.project ? " in " + r.project : ""} `);
      item.append(element("span", `tt-state tt-state-${r.state}`, r.state));
      item.append(document.createTextNode(r.step === null || r.step === undefined ? "" : ` · step ${r.step}`));
      return item;
    }));
    const keys = [...new Set(runs.flatMap((r) => Object.keys(series[r.id] || {})))];
    let points = 0;
    if (typeof uPlot === "undefined") {
      grid.replaceChildren(element("div", "tt-note", "charts need the charting library (a build with npm)"));
      return;
    }
    for (const key of keys) {
      const withKey = runs.filter((r) => series[r.id] && series[r.id][key]);
      const data = aligned(withKey.map((r) => series[r.id][key]));
      points += withKey.reduce((n, r) => n + series[r.id][key][0].length, 0);
      const ids = withKey.map((r) => r.id).join(",");
      let chart = charts.get(key);
      if (chart && chart.ids !== ids) { chart.box.remove(); charts.delete(key); chart = undefined; }
      if (!chart) {
        const box = element("div", "tt-chart");
        box.append(element("div", "tt-title", key));
        grid.append(box);
        const opts = {
          width: 420, height: 200, legend: { show: withKey.length > 1 },
          scales: { x: { time: false } },
          series: [{ label: "step" }, ...withKey.map((r, i) => ({
            // steps logged as None are not sent (the line joins its neighbours); NaN is null: a gap
            label: r.name, stroke: COLORS[i % COLORS.length], width: 1.5, spanGaps: false,
            // a point with no drawn neighbour (a metric logged at a few steps) still shows
            points: { show: (u, si, i0, i1) => i1 - i0 < 300, size: 5 },
          }))],
        };
        chart = { box, ids, plot: new uPlot(opts, data, box) };
        charts.set(key, chart);
      } else {
        chart.plot.setData(data);
      }
    }
    el.dataset.points = String(points);
    el.dataset.charts = String(charts.size);
  }

  model.on("change:series", draw);
  model.on("change:runs", draw);
  draw();
  return () => charts.forEach((c) => c.plot.destroy());
}

export default { render };
