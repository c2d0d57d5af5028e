import { api, duration, el, fmtNum, fmtTime, row, stateBadge } from "./common.js";

// The runs table. A store may hold 10,000 runs: the page keeps every run's row data, but only the
// rows on screen (and a few either side) are in the DOM, so a filter, a sort or a scroll costs what
// is shown, not what is stored. Every row is one line of the same height; the padding of the box
// around the table stands for the rows above and below those drawn.
const OVERSCAN = 10;  // rows drawn beyond each edge of the screen: a quick scroll shows no blank
const keyQuery = new URLSearchParams(location.search);
// The metric columns, kept in the URL (`?key=train/loss&key=eval/loss`; an empty `key`: none); without
// any, the loss-like keys the runs have (the server says which).
let columns = keyQuery.has("key") ? keyQuery.getAll("key").filter(Boolean) : null;
let runs = [], shown = [];  // every run as the API gave it; those the filter keeps, sorted
let sortKey = "created", sortDir = -1;
const selected = new Set();
let rowHeight = 0, headHeight = 0;  // measured once a row is drawn
let drawn = "";  // which rows the DOM holds ("first last"): a scroll within them draws nothing

function sortValue(r, key) {
  if (key === "duration") return (r.ended || Date.now() / 1000) - r.created;
  if (key.startsWith("last:")) return r.last[key.slice("last:".length)];
  return r[key];
}
function byColumn(a, b) {  // runs without a value go last, whichever the direction
  const va = sortValue(a, sortKey), vb = sortValue(b, sortKey);
  if (va == null || vb == null) return (va == null) - (vb == null);
  return (va > vb ? 1 : va < vb ? -1 : 0) * sortDir;
}
// Filters and sorts every run, then draws the rows on screen.
function update() {
  const query = document.getElementById("search").value.toLowerCase();
  shown = query ? runs.filter(r => r.haystack.includes(query)) : runs.slice();
  shown.sort(byColumn);
  document.getElementById("status").textContent = `${shown.length} of ${runs.length} runs`;
  drawn = "";
  draw();
}
function draw() {
  const box = document.getElementById("rows"), body = box.querySelector("tbody");
  const top = box.getBoundingClientRect().top + headHeight;  // where the first row's top would be
  const height = rowHeight || 30;
  const first = Math.max(0, Math.min(shown.length, Math.floor(-top / height) - OVERSCAN));
  const last = Math.max(first, Math.min(shown.length, Math.ceil((innerHeight - top) / height) + OVERSCAN));
  if (drawn === `${first} ${last}`) return;
  drawn = `${first} ${last}`;
  box.style.paddingTop = `${first * height}px`;
  box.style.paddingBottom = `${(shown.length - last) * height}px`;
  body.replaceChildren(...shown.slice(first, last).map(tableRow));
  if (!rowHeight && body.rows.length) {  // now it can be measured: draw again at the true height
    rowHeight = body.rows[0].getBoundingClientRect().height;
    headHeight = box.querySelector("thead").getBoundingClientRect().height;
    drawn = "";
    draw();
  }
}
function tableRow(r) {
  const box = el("input"); box.type = "checkbox"; box.checked = selected.has(r.id);
  box.addEventListener("change", () => { box.checked ? selected.add(r.id) : selected.delete(r.id); updateCompare(); });
  const link = el("a", r.name); link.href = `/run/${encodeURIComponent(r.id)}`;
  const cells = [box, stateBadge(r.state), link].map(n => { const td = el("td"); td.appendChild(n); return td; });
  const tr = row([...cells, r.project ?? "—", (r.tags || []).join(", "), (r.hosts || []).join(", "),
                  fmtTime(r.created), duration(r), r.last_step ?? "—", ...columns.map(k => fmtNum(r.last[k]))]);
  for (const td of tr.cells) td.title = td.textContent;  // a cell cut short by the column's width
  tr.dataset.run = r.id;
  return tr;
}
function drawHead() {
  const head = document.querySelector("#runs thead tr");
  for (const th of head.querySelectorAll("th.metric")) th.remove();
  for (const key of columns) {
    const th = el("th", null, "metric");
    th.dataset.sort = `last:${key}`;
    th.title = key;
    const drop = el("button", "×", "drop");
    drop.title = `remove the column ${key}`;
    drop.addEventListener("click", e => { e.stopPropagation(); setColumns(columns.filter(k => k !== key)); });
    const label = el("div", null, "metric-head");
    label.append(el("span", key), drop);
    th.appendChild(label);
    head.appendChild(th);
  }
}
function setColumns(keys) {
  columns = keys;
  const query = new URLSearchParams(location.search);
  query.delete("key");
  for (const key of keys.length ? keys : [""]) query.append("key", key);
  history.replaceState(null, "", `?${query}`);
  if (sortKey.startsWith("last:") && !keys.includes(sortKey.slice("last:".length))) sortKey = "created";
  drawHead();
  listKeys();
  shownJson = "";
  load();  // the rows again, with these keys' last values
}
let metricKeys = [];
function listKeys() {  // the keys a column can be added for
  document.getElementById("metric-keys").replaceChildren(
    ...metricKeys.filter(k => !columns.includes(k)).map(k => Object.assign(el("option"), { value: k })));
}
function updateCompare() { document.getElementById("compare").disabled = selected.size < 2; }
let shownJson = "";
async function load(request = api(`/api/runs${location.search}`)) {
  try {
    const fresh = await request;
    const json = JSON.stringify(fresh);
    if (json === shownJson && !runs.some(r => r.state === "running")) return;  // nothing changed: keep the DOM
    shownJson = json;
    for (const r of fresh) r.haystack = [r.name, r.project, r.state, ...(r.tags || [])].join(" ").toLowerCase();
    runs = fresh;
    update();
  } catch (e) { document.getElementById("status").textContent = `cannot list runs: ${e.message}`; }
}
async function start() {
  const rows = api(`/api/runs${location.search}`);  // the URL the page preloads
  rows.catch(() => {});  // reported by load()
  try {
    const keys = await api("/api/keys");
    metricKeys = keys.keys;
    columns ??= keys.default;
  } catch (e) {
    columns ??= [];
    document.getElementById("status").textContent = `cannot list the metric keys: ${e.message}`;
  }
  drawHead();
  listKeys();
  await load(rows);
  setInterval(() => load(), 3000);  // live states
}
document.getElementById("search").addEventListener("input", update);
document.getElementById("addkey").addEventListener("change", e => {
  const key = e.target.value;
  if (metricKeys.includes(key) && !columns.includes(key)) setColumns([...columns, key]);
  e.target.value = "";
});
document.getElementById("compare").addEventListener("click", () => {
  location.href = `/compare?ids=${[...selected].map(encodeURIComponent).join(",")}`;
});
document.querySelector("#runs thead").addEventListener("click", e => {
  const th = e.target.closest("th[data-sort]");
  if (!th) return;
  sortDir = sortKey === th.dataset.sort ? -sortDir : 1;
  sortKey = th.dataset.sort;
  update();
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
