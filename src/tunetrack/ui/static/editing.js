// The run page's changes besides Stop: its name, tags and a note (Edit), and on a team's dashboard, for
// those the team file lets, Delete. What this person may do comes with the run's history (`may`); the
// server decides again on every request (a 403 is shown as the line it sends).
import { api } from "./common.js";

export function offerEditing(runId, run, may, readOnly) {
  const edit = document.getElementById("edit");
  const remove = document.getElementById("delete");
  const form = document.getElementById("edit-form");
  const error = document.getElementById("edit-error");
  edit.hidden = readOnly || !may.edit;
  remove.hidden = readOnly || !may.delete;
  edit.dataset.offered = "1";  // decided: what a test (or a script) waits on
  if (edit.dataset.wired) return;  // the history is read again after each change: wire once
  edit.dataset.wired = "1";
  const close = () => { form.hidden = true; error.textContent = ""; };
  edit.addEventListener("click", () => {
    document.getElementById("edit-name").value = run.name;
    document.getElementById("edit-tags").value = "";
    document.getElementById("edit-note").value = "";
    form.hidden = false;
    document.getElementById("edit-name").focus();
  });
  document.getElementById("edit-cancel").addEventListener("click", close);
  form.addEventListener("keydown", e => { if (e.key === "Escape") close(); });
  form.addEventListener("submit", async e => {
    e.preventDefault();
    const name = document.getElementById("edit-name").value.trim();
    const words = document.getElementById("edit-tags").value.split(/\s+/).filter(Boolean);
    const bad = words.find(w => !/^[+-]./.test(w));
    if (bad) { error.textContent = `tags are +TAG (add) or -TAG (remove), not ${bad}`; return; }
    const body = {
      add: words.filter(w => w[0] === "+").map(w => w.slice(1)),
      remove: words.filter(w => w[0] === "-").map(w => w.slice(1)),
    };
    if (name && name !== run.name) body.name = name;
    const note = document.getElementById("edit-note").value.trim();
    if (note) body.note = note;
    if (!body.name && !body.note && !body.add.length && !body.remove.length) { close(); return; }
    try {
      await api(`/api/runs/${encodeURIComponent(runId)}/edit`, body);
      location.reload();  // the header, overview and history as they now are
    } catch (err) {
      error.textContent = `could not change the run: ${err.message}`;
    }
  });
  remove.addEventListener("click", async () => {
    if (!confirm(`Delete run ${run.id} (${run.name}) and everything of it? This cannot be undone.`)) return;
    try {
      await api(`/api/runs/${encodeURIComponent(runId)}/delete`, {});
      location.assign("/");
    } catch (err) {
      form.hidden = false;
      error.textContent = `could not delete the run: ${err.message}`;
    }
  });
}
