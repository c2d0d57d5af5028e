// A run of many keys (a mixture-of-experts run's load per layer per expert: 40 x 250 = 10,000 keys):
// the keys that differ only in their numbers are a family (`moe/layer*/expert*/load`), drawn as ONE
// card rather than a chart per key: the band of their percentiles at each step (p5, p50, p95, and the
// max, the one expert that runs hot) and a heatmap of key x step (which one, and when), both from one
// request, GET /api/runs/{id}/across, whose server fits the matrix to the card (reader.across.heat).
// Which keys make a family the server says (the run's `families`, reader.families), and which of them a
// search over the keys leaves (GET /api/runs/{id}/families): the page is never sent every key.
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

// The card of a family in `container`: `info` is what the server folded it into (the run's
// `families[glob]`: how many keys, the first and the last, their summary), not its keys: a run of
// 10,240 keys sends their names only where a search needs them (GET /api/runs/{id}/families), and the
// card asks for what it draws once it is in view.
export function addFamily(container, glob, info) {
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
  // match: the search the card draws (null: every key), shown: how many keys it leaves;
  // answers: the server's answer per search, so clearing a search draws the whole family at once
  const fam = { glob, info, match: null, shown: info.keys, answers: new Map(), asked: null,
                card, title, band, heatBox, canvas, steps, legend, readout, status, data: null };
  setCount(fam, info);
  return fam;
}
// The title: the glob and how many keys (of how many, under a search); a live run's count grows.
export function setCount(fam, info) {
  if (fam.info.keys !== info.keys) fam.answers.clear();  // a live run's family grew: drawn anew
  fam.info = info;
  const shown = fam.match === null ? info.keys : fam.shown;
  fam.card.dataset.keys = String(shown);
  fam.title.textContent = `${fam.glob} · ${shown === info.keys ? plural(info.keys, "key") : `${shown.toLocaleString()} of ${plural(info.keys, "key")}`}`;
  fam.title.title = `${info.first} … ${info.last}: one card for ${plural(info.keys, "key")} that differ only in their numbers`;
}
// The run page's search over the keys (a regular expression, any case): the card draws only the keys
// it matches (`shown` of them), or all of them (`match` null).
export function searchFamily(runId, fam, match, shown, log) {
  if (fam.match === match && (match === null || fam.shown === shown)) return;
  fam.match = match;
  fam.shown = match === null ? fam.info.keys : shown;
  setCount(fam, fam.info);
  if (fam.seen) loadFamily(runId, fam, log);
}
// The request's size: the band about as many points as the card is wide, the heatmap a cell per pixel
// across (at most one a step) and a row per few pixels down.
export function acrossParams(fam) {
  const width = Math.max(100, Math.round(fam.heatBox.clientWidth || fam.band.clientWidth || 600));
  return { pattern: fam.glob, width: String(width), rows: String(Math.min(80, Math.floor(HEAT_HEIGHT / 2.5))),
           ...(fam.match === null ? {} : { match: fam.match }) };
}
// What the card draws, from the server; `again`: asked anew (a live run's), not from what it has.
export async function loadFamily(runId, fam, log, again = false) {
  const query = String(new URLSearchParams(acrossParams(fam)));
  fam.asked = query;
  if (again) fam.answers.clear();
  let data = fam.answers.get(query);
  try {
    data ??= await api(`/api/runs/${encodeURIComponent(runId)}/across?${query}`);
  } catch (e) {
    if (fam.asked !== query) return;  // another search was typed meanwhile
    fam.status.textContent = `cannot draw ${fam.glob}: ${e.message}`;
    fam.card.classList.add("failed");
    return;
  }
  fam.answers.set(query, data);
  if (fam.asked !== query) return;
  fam.status.textContent = "";
  fam.card.classList.remove("failed");
  fam.data = data;
  drawFamily(fam, log);
}
// Both views from what the card has (a log scale redraws the band, nothing is fetched again).
export function drawFamily(fam, log) {
  const data = fam.data;
  if (!data) return;
  const ys = BAND_NAMES.map(name => data.band[name].map(v => (log && !(v > 0) ? null : v)));
  const shape = `${log} ${data.keys}`;  // a search that changes how many keys: a new title
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
  const fam = addFamily(container, data.pattern, { keys: data.keys, first: data.first, last: data.last });
  fam.data = data;
  drawFamily(fam, false);
  return fam;
}
