import { align, breathe, chartsReady, constantValue, el, fmtTime, lineChart, markDrawn, row, showFacts, stateBadge, summaryRows, unitOf, withUnit } from "./common.js";
import { drawnFamily } from "./many.js";
import { drawnDistribution } from "./dist.js";
import { sampleCell } from "./sampletext.js";

// The report's page (`tunetrack report`, GET /api/report): everything it shows comes from the JSON
// block in the same file, and every string of it goes in as text (el, row). common.js (inlined into
// this script by ui/assets.py) draws the charts: the same charts as the dashboard's, from points
// thinned when the report was made (M4: every spike kept), so a drag zooms into what the file holds.
// So are the run page's cards (many.js: a family of keys; dist.js: a key's distributions) and its
// samples' views (sampletext.js: tokens coloured by a value per token, a conversation as turns), drawn
// from data fitted to a card when the report was made (report.py), the same modules inlined too.
const REPORT = JSON.parse(document.getElementById("report-data").textContent);
const several = REPORT.runs.length > 1;

function label(run) { return `${run.name} (${run.id})`; }
function show(id) { document.getElementById(id).hidden = false; }
// Each run as `tunetrack show` words it (reader/as_text.py, when the report was made): its overview,
// its summary, its error. A report of one run shows it before the charts; of several, each run's
// facts fold away under its name and state (a click opens them) and come after the charts, as does the
// table of the config keys that differ (in a box of its own that scrolls: Trainer runs differ in hundreds).
function overview() {
  const box = document.getElementById("runs");
  if (several) document.getElementById("system-section").after(box);
  for (const run of REPORT.runs) {
    const section = box.appendChild(el(several ? "details" : "section", null, "run"));
    section.dataset.run = run.id;
    const heading = el("h2", label(run));
    if (several) section.appendChild(el("summary")).append(heading, " ", stateBadge(run.state, run.failure));
    else section.appendChild(heading);
    const body = section.appendChild(el("div", null, "run-body"));
    showFacts(body.appendChild(el("dl", null, "facts")), run.overview.facts);
    if (run.overview.summary.length) {
      const table = body.appendChild(el("table", null, "summary"));
      table.appendChild(el("thead")).appendChild(row(["metric", "last", "min", "max", "at step", "points"].map(h => el("th", h))));
      table.appendChild(el("tbody")).append(...summaryRows(run.overview.summary));
    }
    if (run.error) section.appendChild(el("pre", run.error, "traceback error"));
    if (run.overview.last_lines.length) {  // a run that failed, was killed or crashed: what it printed last
      section.appendChild(el("h3", "last lines of its console"));
      section.appendChild(el("pre", run.overview.last_lines.join("\n"), "console-tail"));
    }
  }
}
// The config keys whose values differ between the runs (config.diff, as `tunetrack diff` compares).
function configDiff() {
  if (!several) return;
  show("diff-section");
  const head = document.querySelector("#diff thead tr");
  for (const run of REPORT.runs) head.appendChild(el("th", label(run)));
  const body = document.querySelector("#diff tbody");
  for (const d of REPORT.diff) {
    const tr = body.appendChild(row([d.key, ...d.values.map(v => (v === null ? el("td", "(not set)", "muted") : v))]));
    tr.dataset.key = d.key;
  }
  if (!REPORT.diff.length) body.appendChild(row([el("td", "the runs have the same config", "muted")]));
}
function events() {  // every run's, in time order (the report's data holds them so)
  if (!REPORT.events.length) return;
  show("events-section");
  if (!several) document.querySelector("#events thead th").remove();
  const body = document.querySelector("#events tbody");
  for (const e of REPORT.events) {
    body.appendChild(row([...(several ? [e.run] : []), e.step, e.kind, e.time, el("td", e.details, "details")]));
  }
}
// Each run's table of samples at one step (reader/as_text.py's samples_text, when the report was made):
// its first rows, every cell as text, long ones already cut with a marker saying how much was left out.
function samples() {
  if (!REPORT.samples.length) return;
  show("samples-section");
  const box = document.getElementById("samples");
  const limits = REPORT.sample_limits;
  for (const t of REPORT.samples) {
    const part = box.appendChild(el("div", null, "sample-run"));
    part.dataset.run = t.run;
    if (t.note) { part.appendChild(el("p", `${t.label}: ${t.note}`, "muted")); continue; }
    part.dataset.step = String(t.step);
    part.appendChild(el("h3", `${several ? t.label + " · " : ""}${t.key} at step ${t.step}`));
    const cut = t.rows.length < t.total ? `the first ${t.rows.length} of ` : "";
    part.appendChild(el("p", `${cut}${t.total} rows (samples at ${t.steps} step${t.steps === 1 ? "" : "s"}; a report shows at most ${limits.rows} rows and ${limits.chars.toLocaleString()} characters a cell)`, "muted"));
    const table = part.appendChild(el("table", null, "samples"));
    table.appendChild(el("thead")).appendChild(row(["#", ...t.columns.map(c => c[0])].map(h => el("th", h))));
    const body = table.appendChild(el("tbody"));
    for (const r of t.rows) {
      const tr = body.appendChild(el("tr"));
      tr.appendChild(el("td", String(r.index + 1), "num"));
      r.cells.forEach((text, i) => tr.appendChild(sampleCell(r, i, text, t.columns[i][1])));
    }
  }
}
// A family of keys as one card (the run page's, many.js), from the band and heatmap in the data; the
// report holds the family's first and last key and how many, not every name.
async function families() {
  for (const f of REPORT.families) {
    const fam = drawnFamily(document.getElementById("charts"), f);
    fam.card.dataset.run = f.run;
    if (several) fam.title.append(` · ${f.label}`);
    await breathe();
  }
}
// Each key logged as tunetrack.Histogram, a card each (the run page's, dist.js): a heatmap of value x
// step, or a ridgeline (its buttons redraw from what the card holds).
function distributions() {
  if (!REPORT.distributions.length) return;
  show("dist-section");
  for (const d of REPORT.distributions) {
    const dist = drawnDistribution(document.getElementById("distributions"), several ? { ...d, key: `${d.key} · ${d.label}` } : d);
    dist.card.dataset.run = d.run;
  }
}
function config() {
  const box = document.getElementById("config");
  for (const run of REPORT.runs) {
    const details = box.appendChild(el("details"));
    details.open = !several;
    details.appendChild(el("summary", several ? label(run) : "every key"));
    const entries = Object.entries(run.config);
    if (!entries.length) details.appendChild(el("p", "no config", "muted"));
    for (const [key, value] of entries) {
      const entry = details.appendChild(el("div", null, "cfg-entry"));
      entry.append(el("span", key), el("span", value, "cfg-value"));
    }
  }
}
// One chart per metric, each run's line overlaid (aligned on the union of their x: a run without a
// point at an x is spanned there, a null it holds is a gap), each run in its colour on every chart
// (its place in the report's runs). A system metric that never changed is a line of text, not a chart.
async function charts() {
  try { await chartsReady(); } catch (e) {
    for (const id of ["charts", "system"]) document.getElementById(id).replaceChildren(el("p", e.message, "error"));
    return;
  }
  const order = REPORT.runs.map(r => r.id);
  for (const chart of REPORT.charts) {
    const grid = document.getElementById(chart.group === "system" ? "system" : "charts");
    if (chart.group === "system") show("system-section");
    const unit = unitOf(chart.key);
    if (chart.group === "system" && chart.lines.every(l => constantValue(l.y) !== undefined)) {
      const facts = document.getElementById("system-facts");
      facts.hidden = false;
      for (const l of chart.lines) {
        const fact = facts.appendChild(el("li", `${chart.key}${several || chart.lines.length > 1 ? ` · ${l.label}` : ""}: ${withUnit(constantValue(l.y), unit)}`));
        fact.dataset.key = chart.key;
      }
      continue;
    }
    const div = grid.appendChild(el("div", null, "chart"));
    div.dataset.key = chart.key;
    const data = align(chart.lines.map(l => [l.x, l.y]));
    lineChart(div, data, null, { title: chart.key, x: chart.x, names: chart.lines.map(l => l.label),
                                 colors: chart.lines.map(l => order.indexOf(l.run)), unit });
    div.dataset.traces = String(chart.lines.length);
    div.dataset.points = String(chart.lines.reduce((n, l) => n + l.x.length, 0));
    markDrawn(div);
    await breathe();
  }
  await families();
}

document.title = `${REPORT.runs.map(label).join(", ")} · tunetrack report`;
document.getElementById("title").textContent = REPORT.runs.map(label).join(" · ");
document.getElementById("generated").textContent =
  `Made by tunetrack ${REPORT.version} on ${fmtTime(REPORT.generated)}; charts hold at most ${4 * REPORT.width} points a line.`;
overview();
configDiff();
events();
samples();
distributions();
config();
charts().catch(e => { document.getElementById("error").textContent = `cannot draw the charts: ${e.message}`; });
