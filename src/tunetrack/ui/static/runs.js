import { api, duration, failure, el, fmtNum, fmtTime, plural, row, stateBadge } from "./common.js";
import { drawParameters, short } from "./sweep.js";

// The runs table. A store may hold 10,000 runs: the page keeps every run's row data, but only the
// rows on screen (and a few either side) are in the DOM, so a filter, a sort or a scroll costs what
// is shown, not what is stored. Every row is one line of the same height; the padding of the box
// around the table stands for the rows above and below those drawn.
//
// Every choice is kept in the URL, so a reload (or a link) shows the same table: the metric columns
// (`key=train/loss&key=eval/loss:min`, KEY[:AGG]; an empty `key`: none), the sort (`sort=eval/loss:min`,
// `sort=created:desc`, as `tunetrack ls --sort`), the filter box (`where`), the group keys (`group`),
// the brushed axes of parallel coordinates (`brush`), the hyperparameters' metric (`hp`) and the ticked
// runs (`pick=ID,ID`). What the
// server computes (an expression's runs, the groups and their mean ± std, the axes, the importance) it
// computes with the reader's code (reader/where.py, groups.py, sweeps.py); this page only draws it.
const OVERSCAN = 10;  // rows drawn beyond each edge of the screen: a quick scroll shows no blank
const AGGS = ["last", "min", "max", "best"];
const url = new URLSearchParams(location.search);
// A column: {spec, key, agg}; without any in the URL, the loss-like keys the runs have (picked from the first rows).
let columns = url.has("key") ? url.getAll("key").filter(Boolean).map(column) : null;
const LOSS_LIKE = JSON.parse(document.body.dataset.lossLike);  // metric_keys.LOSS_LIKE, in the page
let runs = [], items = [];  // every run as the API gave it; the rows shown (runs, or groups and their runs)
let [sortKey, sortDir] = parseSort(url.get("sort") || "created:desc");
let groupBy = url.get("group") || "", groups = null, groupError = "";  // the server's groups, for groupBy
let whereIds = null;  // the ids the expression and brushes keep (null: no expression, no brush)
let brushes = url.getAll("brush");  // JSON each, as GET /api/select takes them
const expanded = new Set();  // the labels of the groups opened
const selected = new Set((url.get("pick") || "").split(",").filter(Boolean));
let rowHeight = 0, headHeight = 0;  // measured once a row is drawn
let drawn = "";  // which rows the DOM holds ("first last"): a scroll within them draws nothing
const search = document.getElementById("search");
search.value = url.get("where") || "";
document.getElementById("groupby").value = groupBy;

function column(spec) {  // "eval/loss:min" -> {spec, key: "eval/loss", agg: "min"}; "eval/loss": its last value
  const at = spec.lastIndexOf(":"), agg = spec.slice(at + 1);
  return at > 0 && AGGS.includes(agg) ? { spec, key: spec.slice(0, at), agg } : { spec: `${spec}:last`, key: spec, agg: "last" };
}
function urlSpec(c) { return c.agg === "last" ? c.key : c.spec; }  // a last value's column keeps the plain key
function parseSort(text) {
  const desc = text.endsWith(":desc"), field = text.replace(/:(asc|desc)$/, "");
  return [field, desc ? -1 : 1];
}
// An expression of the --where language, not text to look for: it compares something.
function isExpression(text) { return /[=<>~]|\sin\s/.test(text); }
function setUrl(name, values) {  // one parameter of the page's URL
  const query = new URLSearchParams(location.search);
  query.delete(name);
  for (const v of values) query.append(name, v);
  history.replaceState(null, "", `?${query}`);
}
// What GET /api/runs takes of the URL (the page preloads the same): project, state, the columns' keys and
// which way is best, in the page's own format (arrays: a fraction of the parse of as many objects).
function listingQuery() {
  const query = new URLSearchParams([["format", "table"]]);
  for (const [k, v] of new URLSearchParams(location.search)) if (["project", "state", "key", "best"].includes(k)) query.append(k, v);
  return `?${query}`;
}
// A run of the table format: its fields, and per key `last` and `summary` as /api/runs rows hold them.
function fromTable(table) {
  return table.rows.map(values => {
    const r = { last: {}, summary: {} };
    table.fields.forEach((f, i) => { r[f] = values[i]; });
    table.keys.forEach((key, i) => {
      const cell = values[table.fields.length + i];
      if (!cell) return;
      r.last[key] = cell[0];
      if (cell.length > 1) r.summary[key] = { min: cell[1], max: cell[2], best: cell[3], best_step: cell[4] };
    });
    return r;
  });
}
// What the server-side parts take: the project and state, the expression and the brushes.
function selectionQuery() {
  const query = new URLSearchParams();
  for (const k of ["project", "state"]) if (url.has(k)) query.set(k, url.get(k));
  const text = search.value.trim();
  if (isExpression(text)) query.set("where", text);
  for (const b of brushes) query.append("brush", b);
  for (const b of new URLSearchParams(location.search).getAll("best")) query.append("best", b);
  return query;
}

function metricValue(r, c) {
  return c.agg === "last" ? r.last?.[c.key] : r.summary?.[c.key]?.[c.agg];
}
function sortValue(r, key) {
  if (key === "duration") return (r.ended || Date.now() / 1000) - r.created;
  if (key in r) return r[key];
  return metricValue(r, columns.find(c => c.spec === key) || column(key));  // a metric not shown: as --sort takes it
}
function compare(va, vb) {  // missing values go last, whichever the direction (as --sort and pandas)
  if (va == null || vb == null) return (va == null) - (vb == null);
  return (va > vb ? 1 : va < vb ? -1 : 0) * sortDir;
}
function byColumn(a, b) { return compare(sortValue(a, sortKey), sortValue(b, sortKey)); }
function groupValue(g, key) {
  const stats = g.stats[key];
  if (stats) return stats.mean;
  if (key === "name") return g.label;
  return g.members.length;  // any other column: the group's size
}
function byGroup(a, b) { return compare(groupValue(a, sortKey), groupValue(b, sortKey)); }

// Filters and sorts every run (or folds them into groups), then draws the rows on screen.
function update() {
  const text = search.value.trim(), quick = isExpression(text) ? "" : text.toLowerCase();
  const keep = r => (!whereIds || whereIds.has(r.id)) && (!quick || r.haystack.includes(quick));
  let status;
  if (groupBy && groups) {
    const byId = new Map(runs.map(r => [r.id, r]));
    const shown = groups.groups.map(g => ({ ...g, members: g.runs.map(id => byId.get(id)).filter(r => r && keep(r)) }))
      .filter(g => g.members.length);
    shown.sort(byGroup);
    items = [];
    for (const g of shown) {
      items.push({ group: g });
      if (expanded.has(g.label)) items.push(...g.members.sort(byColumn));
    }
    status = `${plural(shown.length, "group")} of ${plural(shown.reduce((n, g) => n + g.members.length, 0), "run")} (${runs.length.toLocaleString()} in all)`;
  } else {
    items = runs.filter(keep).sort(byColumn);
    status = `${items.length.toLocaleString()} of ${plural(runs.length, "run")}`;
  }
  document.getElementById("status").textContent = status;
  markSorted();
  drawn = "";
  draw();
}
function draw() {
  const box = document.getElementById("rows"), body = box.querySelector("tbody");
  const top = box.getBoundingClientRect().top + headHeight;  // where the first row's top would be
  const height = rowHeight || 30;
  const first = Math.max(0, Math.min(items.length, Math.floor(-top / height) - OVERSCAN));
  const last = Math.max(first, Math.min(items.length, Math.ceil((innerHeight - top) / height) + OVERSCAN));
  if (drawn === `${first} ${last}`) return;
  drawn = `${first} ${last}`;
  if (!items.length) {  // nothing to show: say why, and how to see runs again
    box.style.paddingTop = box.style.paddingBottom = "0px";
    body.replaceChildren(emptyRow());
    return;
  }
  box.style.paddingTop = `${first * height}px`;
  box.style.paddingBottom = `${(items.length - last) * height}px`;
  // a row drawn the same as before stays the same element (the whole table after its first screen, a
  // poll): nothing under the pointer or a focused box is swapped away
  const drawnRows = [...body.rows];
  body.replaceChildren(...items.slice(first, last).map((item, i) => {
    const row = item.group ? groupRow(item.group) : tableRow(item);
    return drawnRows[i]?.isEqualNode(row) ? drawnRows[i] : row;
  }));
  if (!rowHeight && body.rows.length) {  // now it can be measured: draw again at the true height
    rowHeight = body.rows[0].getBoundingClientRect().height;
    headHeight = box.querySelector("thead").getBoundingClientRect().height;
    drawn = "";
    draw();
  }
}
// The one row of a table with no run to show: what left them out (the filter box, brushed axes, the
// project or state of the URL), with a button that clears it; or an empty store.
function emptyRow() {
  const text = search.value.trim(), td = el("td", null, "empty");
  td.colSpan = document.querySelector("#runs thead tr").cells.length;
  const tr = el("tr", null, "empty");
  tr.appendChild(td);
  if (!runs.length) {
    const scope = ["project", "state"].filter(k => url.has(k)).map(k => `${k} ${url.get(k)}`).join(", ");
    td.append(scope ? `no runs with ${scope}` : "no runs in this store yet: a Tracker(...) records one into it");
    if (scope) td.append(" ", clearButton("show every run", () => { location.search = ""; }));
    return tr;
  }
  const why = [text && `no runs match ${text}`, brushes.length && `the brushed ${brushes.length === 1 ? "axis" : "axes"}`].filter(Boolean);
  td.append(`${why.join(" and ") || "no runs match"} `);
  td.append(clearButton(text && brushes.length ? "clear both" : brushes.length ? "clear the brushes" : "clear the filter", () => {
    search.value = "";
    setUrl("where", []);
    brushes = [];
    setUrl("brush", []);
    drawBrushes();
    asked = false;
    refresh();
  }));
  return tr;
}
function clearButton(text, onClick) {
  const button = el("button", text, "clear");
  button.addEventListener("click", onClick);
  return button;
}
function metricCell(r, c) {
  const td = el("td", fmtNum(metricValue(r, c)), "num");
  const s = r.summary?.[c.key];
  td.title = c.agg === "best" && s?.best_step != null ? `best at step ${s.best_step}` : td.textContent;
  return td;
}
function tableRow(r) {
  const box = el("input"); box.type = "checkbox"; box.checked = selected.has(r.id);
  box.addEventListener("change", () => { box.checked ? selected.add(r.id) : selected.delete(r.id); updateCompare(); });
  const link = el("a", r.name); link.href = `/run/${encodeURIComponent(r.id)}`;
  const cells = [box, stateBadge(r.state, r.failure), link].map(n => { const td = el("td"); td.appendChild(n); return td; });
  const tr = row([...cells, r.project ?? "—", (r.tags || []).join(", "), (r.hosts || []).join(", "),
                  fmtTime(r.created), duration(r), r.last_step ?? "—"]);
  for (const td of tr.cells) td.title = td.textContent;  // a cell cut short by the column's width
  for (const c of columns) tr.appendChild(metricCell(r, c));
  tr.dataset.run = r.id;
  if (groupBy) tr.className = "member";
  return tr;
}
// A group: its runs ticked together, opened and closed with its button, n and mean ± std per column.
function groupRow(g) {
  const ids = g.members.map(r => r.id);
  const box = el("input"); box.type = "checkbox"; box.checked = ids.every(id => selected.has(id));
  box.title = "select the group's runs";
  box.addEventListener("change", () => {
    for (const id of ids) box.checked ? selected.add(id) : selected.delete(id);
    updateCompare();
    drawn = "";
    draw();  // its runs' boxes, where they are open
  });
  const open = el("button", `${expanded.has(g.label) ? "▾" : "▸"} ${ids.length}`, "expand");
  open.title = `${expanded.has(g.label) ? "hide" : "show"} the group's ${ids.length} runs`;
  open.addEventListener("click", () => { expanded.has(g.label) ? expanded.delete(g.label) : expanded.add(g.label); update(); });
  const cells = [box, open].map(n => { const td = el("td"); td.appendChild(n); return td; });
  const name = el("td", g.label);  // over the name, project, tags and hosts columns
  name.colSpan = 4;
  name.title = g.label;
  const tr = row([...cells, name, "", "", ""]);
  for (const c of columns) {
    const s = g.stats[c.spec];
    const td = el("td", s && s.n ? `${fmtNum(s.mean)}${s.std == null ? "" : ` ± ${fmtNum(s.std)}`}` : "—", "num");
    if (s && s.n) td.title = `${c.key} ${c.agg} over ${s.n} runs: mean ${fmtNum(s.mean)}, std ${fmtNum(s.std)}, min ${fmtNum(s.min)}, max ${fmtNum(s.max)}`;
    td.dataset.n = String(s?.n ?? 0);
    tr.appendChild(td);
  }
  tr.className = "group";
  tr.dataset.group = g.label;
  return tr;
}
function markSorted() {
  for (const th of document.querySelectorAll("#runs thead th[data-sort]")) {
    th.classList.toggle("sorted", th.dataset.sort === sortKey);
    th.dataset.dir = th.dataset.sort === sortKey ? (sortDir > 0 ? "asc" : "desc") : "";
    th.tabIndex = 0;  // sorted from the keyboard too: Enter or Space on a focused header
    th.setAttribute("aria-sort", th.dataset.sort === sortKey ? (sortDir > 0 ? "ascending" : "descending") : "none");
  }
}
// What "best" is per key: the min where lower is better (the server's list, `lower`, of /api/keys),
// else the max; the URL's `best=KEY:min|max` overrides a key, as `tunetrack ls --best` does.
let lowerKeys = null;  // null until /api/keys answers
function bestIsMin(key) {
  const chosen = new URLSearchParams(location.search).getAll("best").find(b => b.slice(0, b.lastIndexOf(":")) === key);
  if (chosen) return chosen.endsWith(":min");
  return lowerKeys ? lowerKeys.has(key) : null;
}
function flipBest(key) {
  const lower = !bestIsMin(key);
  const others = new URLSearchParams(location.search).getAll("best").filter(b => b.slice(0, b.lastIndexOf(":")) !== key);
  setUrl("best", lowerKeys && lowerKeys.has(key) === lower ? others : [...others, `${key}:${lower ? "min" : "max"}`]);
  drawHead();
  shownTag = null;
  load();  // the rows' best of this key
  if (whereIds || groupBy) refresh();
  if (hpShown) loadParameters();
}
function drawHead() {
  const head = document.querySelector("#runs thead tr");
  for (const th of head.querySelectorAll("th.metric")) th.remove();
  for (const c of columns) {
    const th = el("th", null, "metric");
    th.dataset.sort = c.spec;
    th.title = `${c.key} (${c.agg})`;
    const agg = el("select", null, "agg");
    agg.title = "last, min, max or best (the min of a loss, else the max)";
    for (const a of AGGS) agg.appendChild(Object.assign(el("option", a), { value: a, selected: a === c.agg }));
    agg.addEventListener("click", e => e.stopPropagation());
    agg.addEventListener("change", () => {
      const spec = `${c.key}:${agg.value}`;
      if (columns.some(o => o.spec === spec)) { agg.value = c.agg; return; }
      if (sortKey === c.spec) sortKey = spec;
      setColumns(columns.map(o => (o === c ? column(spec) : o)));
    });
    const way = el("button", null, "way");
    if (c.agg === "best") {  // which way is best, for this key: a click turns it round
      const lower = bestIsMin(c.key);
      way.textContent = lower === null ? "" : lower ? "↓" : "↑";
      way.title = lower === null ? "" : `best is the ${lower ? "min" : "max"}: click for the ${lower ? "max" : "min"}`;
      way.addEventListener("click", e => { e.stopPropagation(); flipBest(c.key); });
    } else way.hidden = true;
    const drop = el("button", "×", "drop");
    drop.title = `remove the column ${c.key} (${c.agg})`;
    drop.addEventListener("click", e => { e.stopPropagation(); setColumns(columns.filter(o => o !== c)); });
    const label = el("div", null, "metric-head");
    label.append(el("span", c.key), agg, way, drop);
    th.appendChild(label);
    head.appendChild(th);
  }
  document.getElementById("runs").style.setProperty("--metrics", String(columns.length));  // its width (app.css)
  markSorted();
  hpPlaceholder();
}
function setColumns(chosen) {
  const before = columns.map(c => c.key).join("\n");
  columns = chosen;
  setUrl("key", chosen.length ? chosen.map(urlSpec) : [""]);
  if (!["state", "name", "project", "tags", "hosts", "created", "duration", "last_step"].includes(sortKey)
      && !chosen.some(c => c.spec === sortKey)) setSort("created", -1);
  drawHead();
  listKeys();
  if (groupBy) refresh();  // the groups' stats of these columns
  if (columns.map(c => c.key).join("\n") !== before) { shownTag = null; load(); }  // the rows again, with these keys
  else update();
}
function setSort(key, dir) {
  [sortKey, sortDir] = [key, dir];
  setUrl("sort", key === "created" && dir < 0 ? [] : [`${key}${dir < 0 ? ":desc" : ""}`]);
}
let metricKeys = [];
function listKeys() {  // the keys a column can be added for, and the metrics the hyperparameters can be read against
  document.getElementById("metric-keys").replaceChildren(
    ...metricKeys.map(k => Object.assign(el("option"), { value: k })));
  document.getElementById("hp-metrics").replaceChildren(
    ...metricKeys.flatMap(k => AGGS.map(a => Object.assign(el("option"), { value: `${k}:${a}` }))));
}
// The compare button says how many runs it compares; the ticked runs are kept in the URL.
function updateCompare() {
  const button = document.getElementById("compare");
  button.disabled = selected.size < 2;
  button.textContent = selected.size ? `compare ${plural(selected.size, "run")}` : "compare selected";
  setUrl("pick", selected.size ? [[...selected].join(",")] : []);
}
function showError(text) { document.getElementById("where-error").textContent = text; }
function showGroupError(text) { document.getElementById("group-error").textContent = text; }

// The server-side parts: the runs the expression and the brushes keep, the groups, the axes. A bad
// expression, or a name no run has (the server's 422: "no run has metric 'lr'; did you mean
// config.lr?"), shows the reader's one line beside its box, the filter's or the group box's, and the
// table keeps what it showed.
let refreshes = 0;
async function refresh() {
  const token = ++refreshes, query = selectionQuery();
  const groupQuery = new URLSearchParams(query);
  groupQuery.set("by", groupBy);
  for (const c of columns || []) groupQuery.append("key", c.spec);
  const asking = (wanted, path) => (wanted ? api(path).catch(error => ({ error })) : null);
  const [chosen, grouped] = await Promise.all([
    asking(query.has("where") || query.has("brush"), `/api/select?${query}`),
    asking(groupBy, `/api/groups?${groupQuery}`),
  ]);
  if (token !== refreshes) return;  // a later refresh is on its way
  if (chosen?.error) showError(chosen.error.message);
  else { whereIds = chosen ? new Set(chosen.ids) : null; showError(""); }
  // the groups' request carries the filter too: its error is the group box's only when it is not the filter's
  if (grouped?.error) showGroupError(grouped.error.message === chosen?.error?.message ? "" : grouped.error.message);
  else { groups = groupBy ? grouped : null; showGroupError(""); }
  update();
  if (!hpShown) return;
  if (query.get("where") !== hpWhere || !hpData) loadParameters();  // other runs: other axes
  else drawParameters(hpData, { kept: whereIds, brushes, onBrush });  // a brush: the same lines, greyed anew
}
// The listing's ETag names the server's version of the table: the same tag, the same rows, so a poll
// of 10,000 unchanged runs parses nothing (the browser revalidates it with If-None-Match: a 304).
let shownTag = null;
const listing = () => fetch(`/api/runs${listingQuery()}`, { credentials: "same-origin" });
// A first screen before the whole table (100,000 runs: 27 MB that the server builds in seconds): the
// newest runs, which the server opens alone, while the table is newest first and nothing needs every
// run (a sort, a filter, groups). The server's page preloads the same URL (ui/routes/pages.py).
const NEWEST = 100;
const firstScreen = !["where", "group", "brush"].some(k => url.has(k)) && (url.get("sort") || "created:desc") === "created:desc";
const newestListing = () => fetch(`/api/runs${listingQuery()}&newest=${NEWEST}`, { credentials: "same-origin" });
async function load(request = listing(), partial = false) {
  try {
    const response = await request;
    if (!response.ok) throw await failure(response);
    const tag = response.headers.get("etag");
    if (tag && tag === shownTag) {  // nothing changed: keep the DOM (a running run's duration still ticks)
      if (runs.some(r => r.state === "running")) update();
      return;
    }
    const changed = shownTag !== null;
    const fresh = fromTable(await response.json());
    shownTag = tag;
    for (const r of fresh) r.haystack = [r.name, r.project, r.state, r.failure, ...(r.tags || [])].join(" ").toLowerCase();
    runs = fresh;
    document.getElementById("runs").classList.toggle("failures", runs.some(r => r.failure));
    if (!columns) {  // none in the URL: the loss-like keys the runs have (the listing's default keys), training first
      columns = LOSS_LIKE.filter(k => runs.some(r => r.last && k in r.last)).map(column);
      drawHead();
    }
    if (changed && (whereIds || groupBy)) refresh();  // new runs or values: what the server picks may change
    else update();
    // fewer than asked for: they are all there are (the whole table follows all the same, for its tag)
    if (partial && runs.length >= NEWEST) document.getElementById("status").textContent = `the newest ${plural(runs.length, "run")}; listing the rest…`;
  } catch (e) { document.getElementById("status").textContent = `cannot list runs: ${e.message}`; }
}

// Hyperparameters against the result (sweep.js draws them): parallel coordinates, a scatter, importance.
let hpShown = url.has("hp"), hpData = null, hpWhere = null;  // hpWhere: the expression hpData is of
function hpMetric() {
  const chosen = document.getElementById("hp-metric").value.trim();
  return chosen || defaultMetric();
}
function defaultMetric() { const first = columns?.[0]; return first ? `${first.key}:best` : ""; }
// The box's placeholder is the metric the views use while it is empty (the first column's best).
function hpPlaceholder() {
  const metric = defaultMetric();
  document.getElementById("hp-metric").placeholder = metric ? `${metric} (KEY:AGG)` : "KEY:AGG, e.g. eval/loss:min";
}
async function loadParameters() {
  const metric = hpMetric(), status = document.getElementById("hp-status");
  if (!metric) { status.textContent = "choose a metric"; return; }
  const query = selectionQuery();
  query.delete("brush");  // the view shows what the brushes leave out, greyed
  query.set("metric", metric);
  hpWhere = query.get("where");
  try {
    hpData = await api(`/api/params?${query}`);
    status.textContent = `${hpData.runs.length} runs, ${hpData.axes.length - 1} varying config keys`;
  } catch (e) { status.textContent = `cannot read the hyperparameters: ${e.message}`; return; }
  drawParameters(hpData, { kept: whereIds, brushes, onBrush });
}
function showParameters(show) {
  hpShown = show;
  document.getElementById("hp").hidden = !show;
  document.getElementById("hp-toggle").setAttribute("aria-expanded", String(show));
  setUrl("hp", show ? [hpMetric()] : []);
  if (show) loadParameters();
}
// A brush drawn (or cleared, `spec` null) on the axis of `field`: one per axis.
function onBrush(field, spec) {
  brushes = brushes.filter(b => JSON.parse(b)[0] !== field);
  if (spec) brushes.push(JSON.stringify(spec));
  setUrl("brush", brushes);
  drawBrushes();
  refresh();
}
// The chips above the table: the project and state the URL keeps to (each cleared by its ×, which
// shows every run again), then one per brushed axis.
function drawBrushes() {
  const scope = ["project", "state"].filter(k => url.has(k)).map(k => {
    const chip = el("span", `${k}: ${url.get(k)}`, "chip scope");
    chip.dataset.field = k;
    const drop = el("button", "×", "drop");
    drop.title = `show the runs of every ${k}`;
    drop.addEventListener("click", () => {
      const next = new URLSearchParams(location.search);
      next.delete(k);
      location.search = `?${next}`;
    });
    chip.appendChild(drop);
    return chip;
  });
  document.getElementById("brushes").replaceChildren(...scope, ...brushes.map(b => {
    const [field, ...range] = JSON.parse(b);
    const text = range.length === 1 ? `${field} in ${range[0].join(", ")}` : `${short(range[0], 2)} ≤ ${field} ≤ ${short(range[1], 2)}`;
    const chip = el("span", text, "chip");
    chip.dataset.field = field;
    const drop = el("button", "×", "drop");
    drop.title = "clear this brush";
    drop.addEventListener("click", () => onBrush(field, null));
    chip.appendChild(drop);
    return chip;
  }));
}

async function configKeys() {  // the group keys to choose from: what varies first, and all-but-seed
  try {
    const keys = await api(`/api/config-keys?${new URLSearchParams([...url].filter(([k]) => k === "project"))}`);
    const rest = keys.keys.filter(k => !keys.varying.includes(k));
    document.getElementById("config-keys").replaceChildren(
      ...[...keys.special, ...keys.varying, ...rest].map(k => Object.assign(el("option"), { value: k })));
  } catch { /* the box still takes keys typed in */ }
}
async function start() {
  const rows = firstScreen ? newestListing() : listing();  // the URL the page preloads
  rows.catch(() => {});  // reported by load()
  // the keys a column can be added for: the rows do not wait for them (the default columns come from the rows)
  api("/api/keys").then(keys => { metricKeys = keys.keys; lowerKeys = new Set(keys.lower); listKeys(); if (columns) drawHead(); })
    .catch(e => { document.getElementById("status").textContent = `cannot list the metric keys: ${e.message}`; });
  document.getElementById("hp-metric").value = url.get("hp") || "";
  if (columns) drawHead();  // the URL's; else load() picks them from the rows and draws them
  drawBrushes();
  updateCompare();
  await load(rows, firstScreen);
  if (firstScreen) await load();  // the whole table
  if (!columns) { columns = []; drawHead(); }  // no rows could be listed
  if (isExpression(search.value) || brushes.length || groupBy) await refresh();
  if (hpShown) showParameters(true);
  setInterval(() => load(), 3000);  // live states
}
let typing = 0, asked = isExpression(search.value.trim());  // whether the server holds an expression
search.addEventListener("input", () => {
  setUrl("where", search.value ? [search.value] : []);
  clearTimeout(typing);
  const expression = isExpression(search.value.trim());
  if (!expression && !asked) { update(); return; }  // text: filtered here, at once
  asked = expression;
  typing = setTimeout(refresh, expression ? 250 : 0);  // an expression: asked once typing pauses
});
document.getElementById("addkey").addEventListener("change", e => {
  const key = e.target.value, spec = `${key}:${document.getElementById("addagg").value}`;
  if (metricKeys.includes(key) && !columns.some(c => c.spec === spec)) setColumns([...columns, column(spec)]);
  e.target.value = "";
});
document.getElementById("groupby").addEventListener("change", e => {
  groupBy = e.target.value.trim();  // the groups shown stay until the server has folded these
  setUrl("group", groupBy ? [groupBy] : []);
  refresh();
});
document.getElementById("groupby").addEventListener("focus", configKeys, { once: true });
document.getElementById("hp-toggle").addEventListener("click", () => showParameters(!hpShown));
document.getElementById("hp-metric").addEventListener("change", () => { setUrl("hp", [hpMetric()]); loadParameters(); });
document.getElementById("compare").addEventListener("click", () => {
  const query = new URLSearchParams({ ids: [...selected].join(",") });
  if (groupBy) query.set("group", groupBy);
  location.href = `/compare?${query}`;
});
function sortBy(e) {
  const th = e.target.closest("th[data-sort]");
  if (!th) return;
  setSort(th.dataset.sort, sortKey === th.dataset.sort ? -sortDir : 1);
  update();
}
document.querySelector("#runs thead").addEventListener("click", sortBy);
document.querySelector("#runs thead").addEventListener("keydown", e => {
  if ((e.key === "Enter" || e.key === " ") && e.target.matches("th[data-sort]")) { e.preventDefault(); sortBy(e); }
});
let pending = false;  // one draw per frame, however many scroll events come
function scrolled() {
  if (pending) return;
  pending = true;
  requestAnimationFrame(() => { pending = false; draw(); });
}
addEventListener("scroll", scrolled, { passive: true });
addEventListener("resize", scrolled);
start();
