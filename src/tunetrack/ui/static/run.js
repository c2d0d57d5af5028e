import { followCheckpoints, showProduced } from "./produced.js";
import { showSamples } from "./samples.js";
import { offerEditing } from "./editing.js";
import { addFamily, drawFamily, loadFamily, searchFamily, setCount } from "./many.js";
import { addDistribution, drawDistribution, loadDistribution } from "./dist.js";
import { api, breathe, bucketWidth, chartsReady, constantValue, fmtClock, dropChart, el, fetchSeries, fmtTime, lineChart, markDrawn, row, setLines, showFacts, stateWorded, summaryRows, unitOf, withUnit } from "./common.js";

// Asked before the page has loaded (see chartsReady); awaited once the run is shown.
const chartsLoading = chartsReady();
chartsLoading.catch(() => {});  // reported where the charts would be
const runId = decodeURIComponent(location.pathname.split("/").pop());
const charts = new Map();  // chartId -> {key, node, div, title, cursor, raw: {x, y}, range, shape, seen}
// A family of keys (many.js: `moe/layer*/expert*/load`) is one card, not a chart per key.
const fams = new Map();  // glob -> {glob, info, match, shown, card, ..., data, seen}
// A key logged as tunetrack.Histogram (dist.js) is a card of its distributions over the steps.
const dists = new Map();  // key -> {key, histogram: true, card, canvas, ..., data, seen}
let run = null;
// Whether this server changes nothing (`tunetrack ui --read-only`): then no Stop button. Asked at once,
// beside the run; until the answer, nothing is offered that the server might refuse.
let readOnly = true;
const serverAsked = api("/api/server").then(s => { readOnly = s.read_only; }, () => {});
const EVENT_COLORS = { checkpoint: "#16a34a", evaluation: "#2563eb", rewind: "#d97706", health: "#dc2626" };

function opts() {
  return { x: document.getElementById("xaxis").value, log: document.getElementById("logy").checked,
           smooth: +document.getElementById("smooth").value };
}
// The x axis, log scale and smoothing are kept in the URL (`x=relative&log=1&smooth=0.6`): a reload
// or a link shows the charts the same way.
function optsFromUrl() {
  const q = new URLSearchParams(location.search);
  if (["step", "time", "relative"].includes(q.get("x"))) document.getElementById("xaxis").value = q.get("x");
  document.getElementById("logy").checked = q.get("log") === "1";
  document.getElementById("chartsearch").value = q.get("keys") ?? "";
  const smooth = Number(q.get("smooth"));
  if (smooth > 0 && smooth < 1) document.getElementById("smooth").value = String(smooth);
}
function optsToUrl() {
  const o = opts(), q = new URLSearchParams(location.search);
  for (const k of ["x", "log", "smooth", "keys"]) q.delete(k);
  if (o.x !== "step") q.set("x", o.x);
  if (o.log) q.set("log", "1");
  if (o.smooth) q.set("smooth", String(o.smooth));
  const keys = document.getElementById("chartsearch").value;
  if (keys) q.set("keys", keys);
  history.replaceState(null, "", `${location.pathname}${q.size ? `?${q}` : ""}${location.hash}`);
}
optsFromUrl();
// A learning rate is a schedule, not a noisy measurement: smoothing would only bend it.
function isLearningRate(key) { return /(^|[/._])(lr|learning_rate)$/i.test(key); }
function smoothed(ys, alpha) {
  if (!alpha) return ys;
  let last = null;
  return ys.map(v => (v === null ? null : (last = last === null ? v : alpha * last + (1 - alpha) * v)));
}
// The server's x is a step or a wall time; relative time is a wall time less the run's start.
function xOffset() { return opts().x === "relative" ? run.created : 0; }
function chartData(chart) {
  const o = opts(), offset = xOffset();
  const ys = smoothed(chart.raw.y, isLearningRate(chart.key) ? 0 : o.smooth);
  return [offset ? chart.raw.x.map(t => t - offset) : chart.raw.x,
          o.log ? ys.map(v => (v > 0 ? v : null)) : ys];  // a log scale has no place for v <= 0
}
function eventMarkers() {
  return run.events.filter(e => EVENT_COLORS[e.kind]).map(e => ({ x: eventX(e), color: EVENT_COLORS[e.kind] }));
}
// Where an event is on the x axis: its step, or its time. A health event is stamped when the writer
// checked the row, a moment after the row was logged: on a time axis it is drawn at its row's time, the
// time of the point of its key that holds its value (a NaN or ±Inf: a gap), the nearest to its stamp.
function eventX(e) {
  if (opts().x === "step") return e.step;
  let time = e.time;
  const chart = e.kind === "health" && e.key ? charts.get(chartId(e.key, null)) : null;
  if (chart?.raw.x.length) {
    const value = typeof e.value === "number" && Number.isFinite(e.value) ? e.value : null;
    let best = null;
    chart.raw.x.forEach((x, i) => {
      if (chart.raw.y[i] === value && (best === null || Math.abs(x - e.time) < Math.abs(best - e.time))) best = x;
    });
    if (best !== null) time = best;
  }
  return time - xOffset();
}
function chartId(key, node) { return node ? `${node}/${key}` : key; }
function seriesParams(extra) {
  return { run: runId, x: opts().x === "step" ? "step" : "time", width: bucketWidth(document.getElementById("charts")), ...extra };
}
// Draws a chart from what the page has; a new uPlot when its axes change kind (step or time, log or not).
function draw(chart) {
  const o = opts();
  const shape = `${o.x} ${o.log}`;
  if (chart.div.chart && chart.shape === shape) return setLines(chart.div.chart, chartData(chart), chart.range);
  dropChart(chart.div);
  chart.div.replaceChildren();
  chart.shape = shape;
  lineChart(chart.div, chartData(chart), chart.range, { title: chart.title, x: o.x, names: [chart.key], log: o.log, unit: unitOf(chart.key),
                                                        markers: eventMarkers, onZoom: range => zoom(chart, range),
                                                        onPick: x => o.x !== "step" && showLogsAt(x + xOffset()) });
}
function zoom(chart, range) {
  if (!range && !chart.range) return;  // a double click on a chart that shows all it has
  chart.range = range;
  load([chart]);  // detail for the zoomed range, or the whole range again
}
function fail(chart, message) {
  dropChart(chart.div);
  chart.div.textContent = message;
}
function plot(chart, data) {
  if (data.error) return fail(chart, `cannot draw ${chart.title}: ${data.error}`);
  chart.raw = { x: data.x, y: data.y };
  chart.cursor = data.cursor;
  chart.div.dataset.points = String(chart.raw.x.length);
  chart.div.dataset.x = opts().x;  // the x-axis the points are on (a switch fetches them again)
  if (constant(chart)) return;
  draw(chart);
  markDrawn(chart.div);
}
// A system metric that never changed (a node's CPU count, its total memory) is a fact, not a chart: it
// is listed above the system charts, and drawn as a chart again once it changes.
function constant(chart) {
  if (!chart.node) return false;
  const value = constantValue(chart.raw.y);
  const facts = document.getElementById("system-facts");
  const id = `constant-${chartId(chart.key, chart.node)}`;
  let fact = [...facts.children].find(f => f.dataset.id === id);
  if (value === undefined) {
    fact?.remove();
    chart.div.hidden = false;
    facts.hidden = !facts.children.length;
    return false;
  }
  dropChart(chart.div);
  chart.div.hidden = true;
  if (!fact) {
    fact = facts.appendChild(el("li"));
    fact.dataset.id = id;
  }
  fact.dataset.key = chart.key;
  fact.textContent = `${chart.title}: ${withUnit(value, unitOf(chart.key))}`;
  facts.hidden = false;
  return true;
}
// (Re)loads charts: one request for all that show their whole range, one per zoomed chart.
async function load(list) {
  const offset = xOffset();
  const whole = list.filter(c => !c.range);
  const groups = list.filter(c => c.range).map(c => [[c], { start: c.range.start + offset, end: c.range.end + offset }]);
  if (whole.length) groups.push([whole, {}]);
  await Promise.all(groups.map(async ([group, range]) => {
    try {
      const entries = await fetchSeries(seriesParams(range), group.map(c => ({ key: c.key, node: c.node })));
      for (let i = 0; i < group.length; i++) { plot(group[i], entries[i]); await breathe(); }
    } catch (e) { for (const c of group) fail(c, `cannot draw ${c.title}: ${e.message}`); }
  }));
}
// Live: appends what is new since each chart's cursor; a rewind (reset) reloads the chart.
async function extend(chart, data) {
  if (data.error) return;
  if (data.reset) return load([chart]);
  if (!data.x.length) return;
  chart.cursor = data.cursor;
  chart.raw.x.push(...data.x); chart.raw.y.push(...data.y);
  // Hours of live points would pile up past what M4 sends: thin the chart again on the server.
  if (chart.raw.x.length > 8 * Math.max(100, chart.div.clientWidth || 600)) return load([chart]);
  chart.div.dataset.points = String(chart.raw.x.length);
  if (constant(chart)) return;
  draw(chart);
}
function addChart(container, key, node) {
  const div = el("div", null, "chart");
  div.dataset.key = key;
  if (node) div.dataset.node = node;
  container.appendChild(div);
  const chart = { key, node, div, title: node ? `${key} · ${node}` : key, cursor: 0, raw: { x: [], y: [] }, range: null,
                  shape: null };
  charts.set(chartId(key, node), chart);
  return chart;
}
function addCharts(meta) {
  const added = [], box = document.getElementById("charts");
  // The server folds the families of keys (`?fold=1`; reader.families: keys that differ only in their
  // numbers): `keys` are the others, `families` each glob's count, first and last key, and `at`, how
  // many of the others come before it. A key charted on its own before its family had four keys (a
  // live run) gives its chart up to the family's card.
  const loose = new Set(meta.keys);
  for (const [id, chart] of charts) {
    if (chart.node || loose.has(chart.key)) continue;
    dropChart(chart.div);
    chart.div.remove();
    charts.delete(id);
  }
  const before = new Map();  // a place among the keys -> the families that come there
  for (const [glob, info] of Object.entries(meta.families || {})) {
    const at = Math.min(info.at, meta.keys.length);
    before.set(at, [...(before.get(at) || []), [glob, info]]);
  }
  const family = (glob, info) => {
    const fam = fams.get(glob);
    if (fam) { if (fam.info.keys !== info.keys) setCount(fam, info); return; }
    const made = addFamily(box, glob, info);
    fams.set(glob, made);
    whenSeen(made.card, made);
  };
  meta.keys.forEach((key, i) => {
    for (const [glob, info] of before.get(i) || []) family(glob, info);
    if (!charts.has(key)) added.push(addChart(box, key, null));
  });
  for (const [glob, info] of before.get(meta.keys.length) || []) family(glob, info);
  for (const node of meta.nodes) {
    for (const key of meta.system_keys) {
      if (!charts.has(chartId(key, node))) added.push(addChart(document.getElementById("system"), key, node));
    }
  }
  for (const chart of added) whenSeen(chart.div, chart);
  for (const key of meta.histogram_keys || []) {
    if (dists.has(key)) continue;
    const dist = addDistribution(document.getElementById("distributions"), key);
    dists.set(key, dist);
    whenSeen(dist.card, dist);
  }
  document.getElementById("dist-section").hidden = !dists.size;
  filterCharts();
  return added;
}
// Charts and family cards are fetched and drawn once they come near the screen (a viewport's height
// ahead): a run of 10,000 keys asks for what is looked at. Those that come into view together are
// fetched together: every chart in one request, each family card in one.
const owners = new WeakMap();  // a card's node -> its chart or family
const due = new Set();
let dueTimer = 0;
const near = new IntersectionObserver(entries => {
  for (const entry of entries) {
    if (!entry.isIntersecting) continue;
    near.unobserve(entry.target);
    due.add(owners.get(entry.target));
  }
  if (due.size) { clearTimeout(dueTimer); dueTimer = setTimeout(drawDue, 20); }
}, { rootMargin: "100% 0px" });
function whenSeen(node, owner) {
  owners.set(node, owner);
  near.observe(node);
}
function drawDue() {
  const list = [...due];
  due.clear();
  const shown = list.filter(c => !c.glob && !c.histogram);
  for (const c of shown) { c.seen = true; draw(c); }  // axes, title and legend while the server reads
  if (shown.length) load(shown);
  for (const fam of list.filter(c => c.glob)) { fam.seen = true; loadFamily(runId, fam, opts().log); }
  for (const dist of list.filter(c => c.histogram)) { dist.seen = true; loadDistribution(runId, dist, opts().log); }
}
// The search over the charts: a regular expression (any case) over the keys. A family's card is kept
// when some of its keys match, and then draws only those (all of them where its glob matches): the
// server says how many of each family's keys match (GET /api/runs/{id}/families, one request for every
// family, once typing pauses) and draws the card from them; the page never holds every key.
let searches = 0;  // the latest search's number: the answer to an older one is dropped
let searchTimer = 0;
function filterCharts() {
  const box = document.getElementById("chartsearch"), error = document.getElementById("chartsearch-error");
  let re = null;
  try {
    re = box.value ? new RegExp(box.value, "i") : null;
  } catch (e) {
    error.textContent = e.message;  // "Invalid regular expression: /(/i: Unterminated group"
    box.setAttribute("aria-invalid", "true");
    return;
  }
  error.textContent = "";
  box.removeAttribute("aria-invalid");
  let shown = 0, all = 0;
  for (const c of charts.values()) {
    const keep = !re || re.test(c.key) || (c.node !== null && re.test(c.title));
    c.div.classList.toggle("filtered", !keep);
    all++; shown += keep;
  }
  for (const dist of dists.values()) {
    const keep = !re || re.test(dist.key);
    dist.card.classList.toggle("filtered", !keep);
    all++; shown += keep;
  }
  const search = ++searches;
  clearTimeout(searchTimer);
  const counted = matched => {
    if (search !== searches) return;
    let kept = shown;
    for (const fam of fams.values()) {
      const n = matched ? matched[fam.glob] ?? 0 : fam.info.keys;
      fam.card.classList.toggle("filtered", n === 0);
      searchFamily(runId, fam, n && n < fam.info.keys ? box.value : null, n, opts().log);
      kept += n > 0;
    }
    document.getElementById("chartcount").textContent = re ? `${kept} of ${all + fams.size} charts` : "";
    document.getElementById("charts-empty").hidden = !re || kept > 0;
  };
  if (!re || !fams.size) return counted(null);
  searchTimer = setTimeout(async () => {
    try {
      counted(await api(`/api/runs/${encodeURIComponent(runId)}/families?${new URLSearchParams({ match: box.value })}`));
    } catch (e) {
      if (search === searches) error.textContent = e.message;  // a pattern JavaScript reads and Python does not
    }
  }, 150);
}
async function renderHistory() {  // who renamed, tagged, noted or stopped the run, when and from where
  let history;
  try { history = await api(`/api/runs/${encodeURIComponent(runId)}/history`); } catch (e) { return; }
  offerEditing(runId, run, history.may, readOnly);
  const items = history.entries.map(e => el("li",
    `${fmtTime(e.time)}  ${e.by}${e.origin ? ` (${e.origin})` : ""}: ${e.what}`));
  document.getElementById("history").replaceChildren(...items);
  document.getElementById("history-section").hidden = !items.length;
}
function renderEvents() {  // samples show in their own view, below; a run without events has no such section
  const rows = run.overview.events.filter(e => e.kind !== "text");
  document.querySelector("#events tbody").replaceChildren(...rows.map(e => row([e.step, e.kind, e.details])));
  document.getElementById("events-section").hidden = !rows.length;
}
// A section the run has nothing for is left out, heading and all.
function showSystem() {
  document.getElementById("system-section").hidden = !(run.nodes.length && run.system_keys.length);
}
function renderMedia() {  // images logged one by one (tables of samples are the Samples view's)
  const box = document.getElementById("media");
  box.replaceChildren();
  for (const e of run.events) {
    if (e.kind !== "image") continue;
    const img = el("img", null, "sample");
    img.src = `/api/runs/${encodeURIComponent(runId)}/media/${e.path.split("/").map(encodeURIComponent).join("/")}`;
    img.alt = `${e.key} step ${e.step}`;
    box.appendChild(img);
  }
  document.getElementById("media-section").hidden = !box.children.length;
}
// The overview as the server words it (`tunetrack show`'s words), marked where it needs a second look.
function renderOverview() {
  const list = document.getElementById("facts");
  showFacts(list, run.overview.facts, id => `/run/${encodeURIComponent(id)}`);
  const git = run.provenance.git, gitFact = list.querySelector("[data-fact='git']");
  if (git) gitFact.title = [git.commit, git.remote].filter(Boolean).join("\n");
  gitFact.classList.toggle("warn", Boolean(git?.dirty));  // the code that ran is not the commit
  list.querySelector("[data-fact='not kept']").classList.toggle("warn", Object.keys(run.counters).length > 0);
  document.querySelector("#summary tbody").replaceChildren(...summaryRows(run.overview.summary));
}
// The config as it was logged, nested: each section folds open and shut. A search keeps the entries
// whose dotted path or value contains it, and the sections that lead to them.
function renderConfig() {
  const query = document.getElementById("cfgsearch").value.toLowerCase();
  const nodes = configNodes(run.config, "", query, 0);
  if (!nodes.length) nodes.push(el("p", query ? "nothing in the config matches" : "no config", "muted"));
  document.getElementById("config").replaceChildren(...nodes);
}
function configNodes(config, path, query, depth) {
  const indent = `${depth * 18}px`;  // of the keys only: the values of every level line up
  const out = [];
  for (const [key, value] of Object.entries(config)) {
    const full = path ? `${path}.${key}` : key;
    if (value && typeof value === "object" && !Array.isArray(value) && Object.keys(value).length) {
      const children = configNodes(value, full, query, depth + 1);
      if (!children.length) continue;
      const section = Object.assign(el("details", null, "cfg-section"), { open: true });
      section.dataset.path = full;
      const summary = el("summary", key);
      summary.style.paddingLeft = indent;
      section.append(summary, ...children);
      out.push(section);
      continue;
    }
    const text = run.flat_config[full];  // as the server prints it: numbers without float noise
    if (query && !full.toLowerCase().includes(query) && !text.toLowerCase().includes(query)) continue;
    const entry = el("div", null, "cfg-entry");
    entry.dataset.path = full;
    const name = el("span", key, "cfg-key");
    name.style.paddingLeft = indent;
    const shown = el("span", text, "cfg-value");
    if (typeof value === "number" && Number(text) !== value) shown.title = String(value);  // exact, on hover
    entry.append(name, shown);
    out.push(entry);
  }
  return out;
}
// The console: the last lines the run's processes printed, selected on the server as `tunetrack logs`
// selects them; followed while the run runs, and scrolled to a time picked on a wall-time chart.
let logsLoading = false;
// The box opens at its last line and follows new ones while the reader is at the bottom; scrolled up
// (to read, or to a line picked on a chart), it stays where it is until they scroll back down.
let following = true;
document.getElementById("logs").addEventListener("scroll", e => {
  const box = e.target;
  following = box.scrollTop + box.clientHeight >= box.scrollHeight - 4;
}, { passive: true });
function logFilters() {
  const grep = document.getElementById("loggrep").value, rank = document.getElementById("logrank").value;
  return { tail: document.getElementById("logtail").value, ...(grep ? { grep } : {}), ...(rank ? { rank } : {}) };
}
let logsAgain = false;  // asked for while a request was out: its answer may be of other filters
async function loadLogs() {
  if (logsLoading) { logsAgain = true; return; }
  logsLoading = true;
  logsAgain = false;
  const status = document.getElementById("logstatus");
  try {
    const filters = logFilters();
    showLogs(await api(`/api/runs/${encodeURIComponent(runId)}/logs?${new URLSearchParams(filters)}`), filters);
    status.textContent = "";
  } catch (e) { status.textContent = e.message; } finally {
    logsLoading = false;
    if (logsAgain) loadLogs();
  }
}
function showLogs(data, filters) {
  const box = document.getElementById("logs"), ranks = document.getElementById("logrank");
  if (ranks.options.length !== data.ranks.length + 1) {
    ranks.replaceChildren(el("option", "all"), ...data.ranks.map(r => el("option", r)));
    ranks.options[0].value = "";
    ranks.value = filters.rank ?? "";
  }
  const several = data.ranks.length > 1;
  // shown before it is filled: a hidden box has no height, and cannot be scrolled to its end
  document.getElementById("logs-section").hidden = !data.lines.length && !filters.grep && !filters.rank;
  const follow = following, top = box.scrollTop;
  box.replaceChildren(...data.lines.map(line => {
    const div = el("div", null, `line ${line.stream.replace("+", "-")}`);
    div.dataset.time = String(line.time);
    div.append(el("span", fmtClock(line.time), "at"),
               ...(several ? [el("span", `rank ${line.rank}`, "rank")] : []), el("span", line.text, "text"));
    return div;
  }));
  box.scrollTop = follow ? box.scrollHeight : top;  // (a run that printed nothing has no such section, unless a filter emptied it)
  following = follow;  // the scroll events of this redraw say nothing of the reader
}
function showLogsAt(time) {
  const lines = [...document.querySelectorAll("#logs .line")];
  if (!lines.length) return;
  const near = lines.reduce((a, b) => (Math.abs(b.dataset.time - time) < Math.abs(a.dataset.time - time) ? b : a));
  for (const line of lines) line.classList.toggle("here", line === near);
  near.scrollIntoView({ block: "center" });
  const box = document.getElementById("logs");
  following = box.scrollTop + box.clientHeight >= box.scrollHeight - 4;
}
// The header's state as the overview words it: who asked a live run to stop, who stopped one and why.
function showState() {
  const worded = run.overview.facts.find(([label]) => label === "state")?.[1] ?? run.state;
  document.getElementById("state").replaceWith(Object.assign(stateWorded(worded), { id: "state" }));
  // Stop: offered for a running run nobody has asked yet (the first request is the one that counts)
  const offered = !readOnly && run.state === "running" && !run.stop;
  document.getElementById("stop").hidden = !offered;
  if (!offered) document.getElementById("stop-form").hidden = true;
}
// The Stop button opens a line that asks for a reason (optional) and sends the request; the state then
// says who asked, and once the run has ended, how it ended.
const stopForm = document.getElementById("stop-form");
function closeStop() {
  stopForm.hidden = true;
  document.getElementById("stop-error").textContent = "";
}
document.getElementById("stop").addEventListener("click", () => {
  stopForm.hidden = false;
  document.getElementById("stop-reason").focus();
});
document.getElementById("stop-cancel").addEventListener("click", closeStop);
stopForm.addEventListener("keydown", e => { if (e.key === "Escape") closeStop(); });
stopForm.addEventListener("submit", async e => {
  e.preventDefault();
  const send = stopForm.querySelector("button[type=submit]");
  send.disabled = true;
  try {
    await api(`/api/runs/${encodeURIComponent(runId)}/stop`, { reason: document.getElementById("stop-reason").value });
    closeStop();
    document.getElementById("stop").hidden = true;
    refresh();  // the state says who asked, now rather than at the next poll
  } catch (err) {
    document.getElementById("stop-error").textContent = `could not stop the run: ${err.message}`;
  } finally { send.disabled = false; }
});
// A run that cannot be shown: the one line that says why, and none of the page's empty parts.
function cannot(message) {
  const error = document.getElementById("error");
  error.textContent = message;
  for (const node of document.querySelectorAll("main > :not(#error)")) node.hidden = true;
  document.getElementById("report").hidden = true;
}
async function start() {
  // The charts' data is asked for once the run's keys are known, for the charts near the screen only.
  const meta = api(`/api/runs/${encodeURIComponent(runId)}?fold=1`);
  try {
    run = await meta;
  } catch (e) {
    cannot(`cannot show this run: ${e.message}`);
    return;
  }
  document.getElementById("title").textContent = `${run.name} (${run.id})`;
  document.getElementById("title").title = `${run.name} (${run.id})`;
  document.title = `${run.name} · tunetrack`;
  await serverAsked;
  showState();
  const traceback = document.getElementById("traceback");
  traceback.textContent = run.error || "";
  traceback.scrollTop = traceback.scrollHeight;  // the exception's own line is its last: in view
  renderOverview(); renderEvents(); renderMedia(); renderConfig(); showSystem(); renderHistory();
  loadLogs();
  showSamples(runId, run.samples);
  showProduced(runId, run.events);
  try { await chartsLoading; } catch (e) {  // shows all but the charts, and does not follow the run
    for (const id of ["charts", "system"]) document.getElementById(id).replaceChildren(el("p", e.message, "error"));
    return;
  }
  addCharts(run);
  setInterval(refresh, 1000);
}
let refreshing = false;
let ticks = 0;  // a family card (10,000 keys a read) or distribution of a live run: read again every FAMILY_EVERY polls
const FAMILY_EVERY = 5;  // a slow poll must not overlap the next: both would append the same points
async function refresh() {
  if (!run || run.state !== "running" || refreshing) return;
  refreshing = true;
  try {
    const fresh = await api(`/api/runs/${encodeURIComponent(runId)}?fold=1`);
    run = fresh;
    addCharts(fresh);
    document.getElementById("traceback").textContent = run.error || "";
    showState();
    renderOverview(); renderEvents(); showSystem(); loadLogs();
    showSamples(runId, run.samples);
    followCheckpoints(run.events);
    const live = [...charts.values()].filter(c => !c.range && c.div.dataset.points !== undefined);
    if (live.length) {
      const entries = await fetchSeries({ run: runId, x: opts().x === "step" ? "step" : "time" },
                                        live.map(c => ({ key: c.key, node: c.node, cursor: c.cursor })));
      await Promise.all(live.map((c, i) => extend(c, entries[i])));
    }
    if (++ticks % FAMILY_EVERY === 0) {
      for (const fam of fams.values()) if (fam.data) loadFamily(runId, fam, opts().log, true);
      for (const dist of dists.values()) if (dist.data) loadDistribution(runId, dist, opts().log);
    }
    // live while it runs; once it has ended, its state says so, and nothing is live any more
    document.getElementById("status").textContent = run.state === "running" ? `live · ${fmtClock(Date.now() / 1000)}` : "";
  } catch (e) {
    document.getElementById("status").textContent = `live update failed: ${e.message}`;
  } finally { refreshing = false; }
}
document.getElementById("xaxis").addEventListener("change", () => {
  optsToUrl();
  for (const c of charts.values()) c.range = null;  // a zoom in steps means nothing in time
  load([...charts.values()].filter(c => c.seen));  // the others are drawn on the new axis once in view
});
for (const id of ["logy", "smooth"]) {  // drawn again from what the page has: nothing to fetch
  document.getElementById(id).addEventListener("change", () => {
    optsToUrl();
    for (const c of charts.values()) if (c.div.dataset.points !== undefined && !c.div.hidden) draw(c);
    for (const fam of fams.values()) drawFamily(fam, opts().log);  // a family's band is over steps, never smoothed
    for (const dist of dists.values()) drawDistribution(dist, opts().log);  // its counts' colours, on a log scale
  });
}
document.getElementById("cfgsearch").addEventListener("input", renderConfig);
document.getElementById("chartsearch").addEventListener("input", () => { filterCharts(); optsToUrl(); });
for (const id of ["loggrep", "logrank", "logtail"]) document.getElementById(id).addEventListener("change", loadLogs);
let grepping = 0;  // the filter applies as it is typed, once typing pauses (as the samples' filter does)
document.getElementById("loggrep").addEventListener("input", () => { clearTimeout(grepping); grepping = setTimeout(loadLogs, 250); });
start();
