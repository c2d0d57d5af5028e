// The artifacts page: each artifact's latest version (kind, aliases, size or "reference", the run that
// made it, the runs that used it), and one artifact's versions with their files once its name is
// clicked (kept in the URL: /artifacts?name=NAME, #v3 for one version). What `tunetrack artifacts`
// prints, worded by the server (GET /api/artifacts, /api/artifacts/versions); read-only: an alias
// moves with `tunetrack artifacts NAME:VERSION --alias ALIAS`. Text goes in as text.
import { api, el, plural } from "./common.js";

const params = () => new URLSearchParams(location.search);

// A run named by the store: a link to its page, or its id alone where the store no longer holds it.
function runLink(run) {
  if (!run) return el("span", "—", "muted");
  if (!run.name) return Object.assign(el("span", run.id, "muted"), { title: "not in this store any more" });
  const a = el("a", run.name);
  a.href = `/run/${encodeURIComponent(run.id)}`;
  a.title = run.id;
  return a;
}
function aliases(list) {
  const td = el("td", null, "aliases");
  td.append(...list.map(a => el("span", a, "alias")));
  return td;
}
function cell(node, cls) {
  const td = el("td", null, cls);
  td.append(node);
  return td;
}
// The runs that used a version: a count that opens a row of links under its own row.
function usedBy(v, width) {
  const td = el("td", null, "num"), detail = el("tr", null, "users-row");
  if (!v.used_by.length) { td.textContent = "0"; return [td, null]; }
  const toggle = el("button", String(v.used_by.length), "expand");
  toggle.title = `the ${plural(v.used_by.length, "run")} that used ${v.spec}`;
  toggle.setAttribute("aria-expanded", "false");
  td.append(toggle);
  detail.hidden = true;
  const users = el("td", null, "users");
  users.colSpan = width;
  users.append(el("span", "used by ", "muted"), ...v.used_by.map(runLink));
  detail.append(users);
  toggle.addEventListener("click", () => {
    detail.hidden = !detail.hidden;
    toggle.setAttribute("aria-expanded", String(!detail.hidden));
  });
  return [td, detail];
}

async function loadList() {
  const kind = document.getElementById("kind").value;
  let data;
  try {
    data = await api(`/api/artifacts${kind ? `?${new URLSearchParams({ kind })}` : ""}`);
  } catch (e) {
    document.getElementById("error").textContent = `cannot list the artifacts: ${e.message}`;
    return;
  }
  document.getElementById("error").textContent = "";
  const found = data.artifacts;
  document.getElementById("status").textContent = found.length ? plural(found.length, "artifact")
    : "no artifact in this store: runs log them with log_artifact, and the adapters record their inputs";
  const kinds = document.getElementById("kind");
  if (!kind) {  // the kinds there are, offered once every artifact is listed
    const seen = [...new Set(found.map(v => v.kind).filter(Boolean))].sort();
    kinds.replaceChildren(el("option", "every kind"), ...seen.map(k => el("option", k)));
    kinds.options[0].value = "";
  }
  const chosen = params().get("name");
  document.querySelector("#artifacts tbody").replaceChildren(...found.flatMap(v => {
    const tr = el("tr", null, v.name === chosen ? "chosen" : "");
    tr.dataset.name = v.name;
    const name = el("a", v.name);
    name.href = `/artifacts?${new URLSearchParams({ name: v.name })}`;
    name.addEventListener("click", e => { e.preventDefault(); choose(v.name); });
    const [used, users] = usedBy(v, 9);
    tr.append(cell(name, "name"), el("td", v.kind ?? "—"), el("td", `v${v.version}`), aliases(v.aliases),
              el("td", v.size, "num"), el("td", v.files, "num"), cell(runLink(v.run)), used, el("td", v.created));
    if (v.reference) tr.children[4].title = v.reference;
    return users ? [tr, users] : [tr];
  }));
}

function choose(name) {
  history.pushState(null, "", `/artifacts?${new URLSearchParams({ name })}`);
  for (const tr of document.querySelectorAll("#artifacts tbody tr[data-name]")) tr.classList.toggle("chosen", tr.dataset.name === name);
  loadVersions();
}

// One artifact's versions, newest first, each with its files (name, size, short hash) behind its count.
async function loadVersions() {
  const name = params().get("name"), section = document.getElementById("versions-section");
  section.hidden = !name;
  if (!name) return;
  document.getElementById("versions-title").textContent = `${name}: versions`;
  let data;
  try {
    data = await api(`/api/artifacts/versions?${new URLSearchParams({ name })}`);
  } catch (e) {
    document.getElementById("versions-error").textContent = e.message;
    document.querySelector("#versions tbody").replaceChildren();
    return;
  }
  document.getElementById("versions-error").textContent = "";
  document.querySelector("#versions tbody").replaceChildren(...[...data.versions].reverse().flatMap(v => {
    const tr = el("tr");
    tr.id = `v${v.version}`;
    const files = el("button", plural(v.files, "file"), "expand");
    files.setAttribute("aria-expanded", "false");
    const list = el("tr", null, "files-row");
    list.hidden = true;
    const listCell = el("td");
    listCell.colSpan = 8;
    if (v.reference) listCell.append(el("p", `reference: ${v.reference}`));
    const table = el("table", null, "artifact-files");
    const body = el("tbody");
    body.append(...v.file_list.map(f => {
      const row = el("tr");
      row.append(el("td", f.name), el("td", f.size, "num"), el("td", f.hash, "hash"));
      return row;
    }));
    table.append(body);
    listCell.append(table);
    list.append(listCell);
    files.addEventListener("click", () => {
      list.hidden = !list.hidden;
      files.setAttribute("aria-expanded", String(!list.hidden));
    });
    const [used, users] = usedBy(v, 8);
    const digest = el("td", v.digest.slice(0, 12), "hash");
    digest.title = v.digest;
    tr.append(el("td", `v${v.version}`), aliases(v.aliases), el("td", v.size, "num"), cell(files, "num"),
              cell(runLink(v.run)), used, el("td", v.created), digest);
    return [tr, list, ...(users ? [users] : [])];
  }));
  const here = location.hash && document.getElementById(location.hash.slice(1));
  if (here) {
    here.classList.add("chosen");
    here.scrollIntoView({ block: "center" });
  }
}

document.getElementById("kind").addEventListener("change", loadList);
window.addEventListener("popstate", () => { loadList(); loadVersions(); });
loadList();
loadVersions();
