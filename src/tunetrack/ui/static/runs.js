"use strict";
let runs = [];
let sortKey = "created", sortDir = -1;
const selected = new Set();

function render() {
  const query = document.getElementById("search").value.toLowerCase();
  const rows = document.createDocumentFragment();  // one insertion: the table is laid out once
  const shown = runs.filter(r => !query || [r.name, r.project, r.state, ...(r.tags || [])].join(" ").toLowerCase().includes(query));
  shown.sort((a, b) => {
    const va = sortKey === "duration" ? (a.ended || Date.now() / 1000) - a.created : a[sortKey];
    const vb = sortKey === "duration" ? (b.ended || Date.now() / 1000) - b.created : b[sortKey];
    return (va > vb ? 1 : va < vb ? -1 : 0) * sortDir;
  });
  for (const r of shown) {
    const box = el("input"); box.type = "checkbox"; box.checked = selected.has(r.id);
    box.addEventListener("change", () => { box.checked ? selected.add(r.id) : selected.delete(r.id); update(); });
    const link = el("a", r.name); link.href = `/run/${encodeURIComponent(r.id)}`;
    const cells = [box, stateBadge(r.state), link].map(n => { const td = el("td"); td.appendChild(n); return td; });
    const tr = row([...cells, r.project ?? "—", (r.tags || []).join(", "), (r.hosts || []).join(", "),
                    fmtTime(r.created), duration(r), r.last_step ?? "—", fmtNum(r.loss)]);
    tr.dataset.run = r.id;
    rows.appendChild(tr);
  }
  document.querySelector("#runs tbody").replaceChildren(rows);
  document.getElementById("status").textContent = `${shown.length} of ${runs.length} runs`;
}
function update() { document.getElementById("compare").disabled = selected.size < 2; }
let shownJson = "";
async function load() {
  try {
    const fresh = await api("/api/runs");
    const json = JSON.stringify(fresh);
    if (json === shownJson && !runs.some(r => r.state === "running")) return;  // nothing changed: keep the DOM
    shownJson = json; runs = fresh; render();
  } catch (e) { document.getElementById("status").textContent = `cannot list runs: ${e.message}`; }
}
document.getElementById("search").addEventListener("input", render);
document.getElementById("compare").addEventListener("click", () => {
  location.href = `/compare?ids=${[...selected].map(encodeURIComponent).join(",")}`;
});
for (const th of document.querySelectorAll("th[data-sort]")) {
  th.addEventListener("click", () => { sortDir = sortKey === th.dataset.sort ? -sortDir : 1; sortKey = th.dataset.sort; render(); });
}
load();
setInterval(load, 3000);  // live states
