// A run of many keys (a mixture-of-experts run's load per layer per expert: 40 x 250 = 10,000 keys):
// the keys that differ only in their numbers are a family (`moe/layer*/expert*/load`), drawn as ONE
// card rather than a chart per key: the band of their percentiles at each step (p5, p50, p95, and the
// max, the one expert that runs hot) and a heatmap of key x step (which one, and when), both from one
// request, GET /api/runs/{id}/across, whose server fits the matrix to the card (reader.across.heat).
// Which keys make a family the server says (the run's `families`, reader.families).
import { api, dropChart, el, fmtNum, heatLegend, lineChart, markDrawn, paintCells, plural, setLines, viridis } from "./common.js";

const NO_NUMBER = "#f3f4f6";  // a cell where no key of its row has a number at its steps
const HEAT_HEIGHT = 220;  // as tall as the band's plot
// the band's lines: the percentiles in one blue, the median bolder, p5 to p95 filled; the max apart,
// orange and dashed (told from the blue by colour and by dash, whatever the reader's colour vision)
const BAND_NAMES = ["p5", "p50", "p95", "max"];
const NO_DOTS = { show: false };  // a band is lines, never dots at its steps
const BAND_STYLES = [{ stroke: "#6b9bc3", width: 1, points: NO_DOTS }, { stroke: "#2b5d8a", width: 1.5, points: NO_DOTS },
                     { stroke: "#6b9bc3", width: 1, points: NO_DOTS }, { stroke: "#e8590c", width: 1.5, dash: [5, 3], points: NO_DOTS }];
const BAND_FILL = "rgb(78 121 167 / 0.14)";

// The card of a family in `container`, its glob and count in the title; drawn once it is in view.
export function addFamily(container, glob, keys) {
  const card = el("div", null, "chart family");
  card.dataset.family = glob;
  const title = el("div", null, "family-title");
  const band = el("div", null, "family-band");
  const heatBox = el("div", null, "family-heat");
  const canvas = el("canvas", null, "heat-canvas");
  canvas.setAttribute("role", "img");
  const steps = el("div", null, "heat-steps");
  const legend = el("div", null, "heat-legend");
  const readout = el("div", null, "heat-readout muted");
  heatBox.append(el("div", null, "heat-title"), canvas, steps, legend, readout);
  const status = el("p", "", "muted family-status");
  card.append(title, el("div", null, "family-body"), status);
  card.querySelector(".family-body").append(band, heatBox);
  container.appendChild(card);
  const fam = { glob, keys, card, title, band, heatBox, canvas, steps, legend, readout, status, data: null };
  setCount(fam, keys);
  return fam;
}
export function setCount(fam, keys) {
  fam.keys = keys;
  fam.card.dataset.keys = String(keys.length);
  fam.title.textContent = `${fam.glob} · ${plural(keys.length, "key")}`;
  fam.title.title = `${keys[0]} … ${keys[keys.length - 1]}: one card for ${plural(keys.length, "key")} that differ only in their numbers`;
}
// The request's size: the band about as many points as the card is wide, the heatmap a cell per pixel
// across (at most one a step) and a row per few pixels down.
export function acrossParams(fam) {
  const width = Math.max(100, Math.round(fam.heatBox.clientWidth || fam.band.clientWidth || 600));
  return { pattern: fam.glob, width: String(width), rows: String(Math.min(80, Math.floor(HEAT_HEIGHT / 2.5))) };
}
export async function loadFamily(runId, fam, log) {
  try {
    fam.data = await api(`/api/runs/${encodeURIComponent(runId)}/across?${new URLSearchParams(acrossParams(fam))}`);
  } catch (e) {
    fam.status.textContent = `cannot draw ${fam.glob}: ${e.message}`;
    fam.card.classList.add("failed");
    return;
  }
  fam.status.textContent = "";
  drawFamily(fam, log);
}
// Both views from what the card has (a log scale redraws the band, nothing is fetched again).
export function drawFamily(fam, log) {
  const data = fam.data;
  if (!data) return;
  const ys = BAND_NAMES.map(name => data.band[name].map(v => (log && !(v > 0) ? null : v)));
  const shape = String(log);
  if (fam.band.chart && fam.shape === shape) setLines(fam.band.chart, [data.steps, ...ys], null);
  else {
    dropChart(fam.band);
    fam.band.replaceChildren();
    fam.shape = shape;
    lineChart(fam.band, [data.steps, ...ys], null, {
      title: `across ${plural(data.keys, "key")}: p5, p50, p95 and max at each step`, x: "step", names: BAND_NAMES,
      log, styles: BAND_STYLES, fills: [[2, 0, BAND_FILL]] });
  }
  fam.band.dataset.points = String(data.steps.length);
  drawHeat(fam, data);
  fam.card.dataset.drawn = String(Number(fam.card.dataset.drawn || 0) + 1);
  markDrawn(fam.band);
}
// The heatmap: a row per few neighbouring keys (in natural order: layer by layer, expert by expert),
// their max; a column per few steps, their mean; coloured by viridis from the lowest to the highest cell.
function drawHeat(fam, data) {
  const { heat, keys } = data, { canvas } = fam, rows = heat.rows.length, cols = heat.starts.length;
  const width = Math.max(100, fam.heatBox.clientWidth), span = heat.high - heat.low || 1;
  paintCells(canvas, width, HEAT_HEIGHT, rows, cols, (r, c) => {
    const v = heat.values[r][c];
    return v === null ? NO_NUMBER : viridis((v - heat.low) / span);
  });
  const most = Math.max(...heat.rows.map(([, n]) => n));
  fam.heatBox.querySelector(".heat-title").textContent = `${plural(keys, "key")} × step`;
  canvas.setAttribute("aria-label", `heatmap of ${plural(keys, "key")} by step, from ${fmtNum(heat.low)} to ${fmtNum(heat.high)}`);
  const first = heat.starts[0], last = heat.starts[cols - 1];
  fam.steps.replaceChildren(el("span", cols ? `step ${first}` : "no steps"),
                            el("span", `rows from ${data.first} to ${data.last}`, "muted"), el("span", cols > 1 ? `step ${last}` : ""));
  heatLegend(fam.legend, heat.low, heat.high,
             `${most > 1 ? `a row: the max of ${plural(most, "key")}; ` : ""}a cell: the mean over its steps`);
  canvas.onmousemove = e => {
    const box = canvas.getBoundingClientRect();
    const r = Math.min(rows - 1, Math.floor((e.clientY - box.top) / box.height * rows));
    const c = Math.min(cols - 1, Math.floor((e.clientX - box.left) / box.width * cols));
    if (r < 0 || c < 0) return;
    const [key, n] = heat.rows[r], v = heat.values[r][c];
    const end = c + 1 < cols ? heat.starts[c + 1] - 1 : null;
    const steps = end === null || end <= heat.starts[c] ? `step ${heat.starts[c]}${end === null ? " on" : ""}` : `steps ${heat.starts[c]}–${end}`;
    fam.readout.textContent = `${key}${n > 1 ? ` and the next ${n - 1}` : ""} · ${steps} · ${v === null ? "no number" : fmtNum(v)}`;
  };
  canvas.onmouseleave = () => { fam.readout.textContent = ""; };
}
// A card drawn from data already at hand (the report's file, the notebook panel's model), `data` as
// GET /api/runs/{id}/across answers: it names the family's first and last key and how many, which is
// all the card's title says of them.
export function drawnFamily(container, data) {
  const keys = Object.assign(new Array(data.keys), { 0: data.first, [data.keys - 1]: data.last });
  const fam = addFamily(container, data.pattern, keys);
  fam.data = data;
  drawFamily(fam, false);
  return fam;
}
