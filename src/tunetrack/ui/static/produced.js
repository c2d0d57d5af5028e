// The run page's Checkpoints and Lineage tabs: what the run saved, the best one marked by a metric the
// reader picks, and what the run was made from and what was made from it. The server decides and
// words everything (GET /api/runs/ID/checkpoints and /lineage: the best, the order of the metrics,
// sizes, how an edge reads, each node's page), as `tunetrack checkpoints` and `tunetrack lineage` say
// it; this module lays it out. Text goes in as text.
import { api, el, plural } from "./common.js";

const TABS = ["overview", "checkpoints", "lineage"];
//: metric columns in the table; every metric at a checkpoint's step is in its row's details
const METRIC_COLUMNS = 4;
let runId = null;
let lineageAsked = false;

// The tab is the URL's hash (#checkpoints, #lineage; anything else, #samples included, is the overview):
// a reload, a link and the back button show the same tab. The other tabs' parts are hidden by CSS
// (main[data-tab]), which leaves each section's own `hidden` as it was.
function tabOf(hash) { const tab = hash.slice(1); return TABS.includes(tab) ? tab : "overview"; }
function showTab() {
  const tab = tabOf(location.hash);
  document.querySelector("main").dataset.tab = tab;
  for (const a of document.querySelectorAll("#tabs a")) a.setAttribute("aria-selected", String(a.dataset.tab === tab));
  if (tab === "lineage" && !lineageAsked) loadLineage();
}

export function showProduced(id, events) {
  runId = id;
  checkpointEvents = events.filter(e => CHECKPOINT_EVENTS.includes(e.kind)).length;
  window.addEventListener("hashchange", showTab);
  showTab();
  loadCheckpoints(new URLSearchParams(location.search).get("best") || "");
  for (const id of ["ckpt-key", "ckpt-way"]) document.getElementById(id).addEventListener("change", pickBest);
}

// A live run's checkpoints are asked for again when its events say a save, its files or a rotation
// came in since (the page's poll of the run has its events): the table follows the training.
const CHECKPOINT_EVENTS = ["checkpoint", "checkpoint_files", "checkpoint_deleted"];
let checkpointEvents = null;
export function followCheckpoints(events) {
  const seen = events.filter(e => CHECKPOINT_EVENTS.includes(e.kind)).length;
  if (checkpointEvents !== null && seen !== checkpointEvents) loadCheckpoints(new URLSearchParams(location.search).get("best") || "");
  checkpointEvents = seen;
}

// The best by the key picked (its direction the server's default: losses lowest), or by the
// direction picked too; kept in the URL (`best=eval_loss:min`).
function pickBest(e) {
  const key = document.getElementById("ckpt-key").value;
  const spec = !key ? "" : e.target.id === "ckpt-way" ? `${key}:${document.getElementById("ckpt-way").value}` : key;
  const q = new URLSearchParams(location.search);
  if (spec) q.set("best", spec); else q.delete("best");
  history.replaceState(null, "", `${location.pathname}${q.size ? `?${q}` : ""}${location.hash}`);
  loadCheckpoints(spec);
}

async function loadCheckpoints(spec) {
  const error = document.getElementById("ckpt-error");
  let data;
  try {
    data = await api(`/api/runs/${encodeURIComponent(runId)}/checkpoints${spec ? `?${new URLSearchParams({ best: spec })}` : ""}`);
  } catch (e) {
    error.textContent = `cannot show the checkpoints: ${e.message}`;
    return;
  }
  error.textContent = "";
  renderCheckpoints(data);
}

function renderCheckpoints(data) {
  const found = data.checkpoints;
  const tab = document.querySelector("#tabs a[data-tab='checkpoints']");
  tab.textContent = `checkpoints (${found.length})`;
  tab.hidden = !found.length && tabOf(location.hash) !== "checkpoints";  // a run that saved none: no tab
  const keySelect = document.getElementById("ckpt-key"), way = document.getElementById("ckpt-way");
  keySelect.replaceChildren(el("option", "—"), ...data.metrics.map(k => el("option", k)));
  keySelect.options[0].value = "";
  keySelect.value = data.best?.key ?? "";
  way.value = data.best && !data.best.minimize ? "max" : "min";
  way.disabled = !data.best;
  for (const node of [keySelect, way, document.querySelector("#checkpoints-panel .scroll-x")]) node.hidden = !found.length;
  document.getElementById("ckpt-best").textContent = !found.length ? "this run saved no checkpoint"
    : data.best ? `best: step ${data.best.step} (${data.best.minimize ? "lowest" : "highest"} ${data.best.key})`
    : data.metrics.length ? "pick a metric to mark the best checkpoint" : "no metric was logged at the checkpoints' steps";
  const shown = data.keys.slice(0, METRIC_COLUMNS);
  const head = el("tr");
  for (const name of ["step", "kind", ...shown, "size", "files", "state"]) {
    const th = el("th", null, shown.includes(name) || ["step", "size", "files"].includes(name) ? "num" : "");
    th.append(...breakable(name));
    head.append(th);
  }
  document.querySelector("#checkpoints thead").replaceChildren(head);
  const width = shown.length + 5;
  const rows = found.flatMap(c => checkpointRows(c, shown, data.keys, width));
  document.querySelector("#checkpoints tbody").replaceChildren(...rows);
  const step = new URLSearchParams(location.search).get("step");  // a checkpoint a lineage link points at
  const here = step !== null && document.querySelector(`#checkpoints tr.checkpoint[data-step="${CSS.escape(step)}"]`);
  if (here) {
    here.classList.add("here");
    if (tabOf(location.hash) === "checkpoints") here.scrollIntoView({ block: "center" });
  }
}

// A metric's name that may wrap after its "_" and "/" (eval_mean_token_accuracy over two lines
// rather than cut short): text, and <wbr> elements.
function breakable(name) {
  return name.split(/(?<=[_/])/).flatMap((part, i) => (i ? [document.createElement("wbr"), part] : [part]));
}

// A checkpoint's row, and the row of its details (its path, every metric at its step, its files with
// their sizes and hashes), shown by the row's files button.
function checkpointRows(c, shown, keys, width) {
  const tr = el("tr", null, `checkpoint${c.best ? " best" : ""}${c.deleted ? " deleted" : ""}`);
  tr.dataset.step = String(c.step);
  tr.title = c.path;
  const num = text => el("td", text, "num");
  const state = el("td");
  state.append(el("span", c.state, `ckpt-state ckpt-${c.state}`));
  if (c.best) state.append(" ", el("span", "best", "ckpt-best"));
  const toggle = el("button", c.files ? plural(c.files.length, "file") : "…", "expand");
  toggle.setAttribute("aria-expanded", "false");
  toggle.title = c.files ? "show the files, the path and every metric at this step" : "not listed yet (still being hashed), or at a URL";
  const files = el("td", null, "num");
  files.append(toggle);
  tr.append(num(c.step), el("td", c.kind ?? "—"), ...shown.map(k => num(c.texts[k] ?? "—")), num(c.size), files, state);
  const detail = el("tr", null, "ckpt-detail");
  detail.hidden = true;
  const cell = el("td");
  cell.colSpan = width;
  cell.append(detailOf(c, keys));
  detail.append(cell);
  toggle.addEventListener("click", () => {
    detail.hidden = !detail.hidden;
    toggle.setAttribute("aria-expanded", String(!detail.hidden));
  });
  return [tr, detail];
}

function detailOf(c, keys) {
  const box = el("div", null, "ckpt-detail-box");
  const path = el("p");
  path.append(el("b", "path "), el("code", c.path));
  const metrics = el("dl", null, "ckpt-metrics");
  for (const k of keys) {
    if (!(k in c.texts)) continue;
    const pair = el("div");  // a name and its value side by side, in columns across the row
    pair.append(el("dt", k), el("dd", c.texts[k]));
    metrics.append(pair);
  }
  box.append(path, metrics);
  if (c.files) {
    const table = el("table", null, "ckpt-files");
    table.append(el("thead"), el("tbody"));
    const head = el("tr");
    head.append(el("th", "file"), el("th", "size", "num"), el("th", "sha256"));
    table.tHead.append(head);
    for (const f of c.files) {
      const tr = el("tr");
      const hash = el("td", f.hash, "hash");
      if (f.sha256) hash.title = f.sha256;
      tr.append(el("td", f.name), el("td", f.size_text, "num"), hash);
      table.tBodies[0].append(tr);
    }
    box.append(table);
  }
  return box;
}

// Lineage, asked for when its tab is first shown: building it reads the whole store's events.
async function loadLineage() {
  lineageAsked = true;
  const status = document.getElementById("lineage-status");
  status.textContent = "reading what the runs recorded…";
  let data;
  try {
    data = await api(`/api/runs/${encodeURIComponent(runId)}/lineage`);
  } catch (e) {
    status.textContent = `cannot show the lineage: ${e.message}`;
    status.className = "error";
    lineageAsked = false;  // asked again the next time the tab is shown
    return;
  }
  status.textContent = "";
  lineageSide(document.getElementById("made-from"), data.made_from, data.nodes);
  lineageSide(document.getElementById("made-into"), data.made_into, data.nodes);
}

// One side of the lineage as an indented tree, in `tunetrack lineage`'s order and words: each line how
// the edge reads from here ("input:", "saved", "used by"), the node's type, its label linked to its
// page (a run's, a checkpoint's run's Checkpoints tab, an artifact's versions), and its kind or state.
function lineageSide(list, rows, nodes) {
  if (!rows.length) {
    list.replaceChildren(el("li", "nothing recorded", "muted"));
    return;
  }
  list.replaceChildren(...rows.map(r => {
    const n = nodes[r.node];
    const li = el("li", null, r.depth ? "deep" : "");
    li.style.paddingLeft = `${r.depth * 20}px`;
    li.dataset.node = r.node;
    li.dataset.type = n.type;
    const link = el("a", n.label);
    link.href = n.href;
    li.append(el("span", r.words, "words"), " ", el("span", n.type, `node-type node-${n.type}`), " ", link);
    if (n.note) li.append(el("span", n.note, "muted"));
    return li;
  }));
}
