"use strict";
// Shared helpers. User data is only ever inserted with textContent, never as HTML.
async function api(path) {
  const response = await fetch(path, { credentials: "same-origin" });
  const body = await response.json().catch(() => ({ detail: response.statusText }));
  if (!response.ok) throw new Error(body.detail || response.statusText);
  return body;
}
function el(tag, text, cls) {
  const node = document.createElement(tag);
  if (text !== undefined && text !== null) node.textContent = String(text);
  if (cls) node.className = cls;
  return node;
}
function row(cells) {
  const tr = document.createElement("tr");
  for (const cell of cells) tr.appendChild(cell instanceof Node ? cell : el("td", cell));
  return tr;
}
function fmtTime(t) { return t ? new Date(t * 1000).toLocaleString() : "—"; }
function fmtNum(v) { return typeof v === "number" ? (Math.abs(v) >= 1e4 || (v !== 0 && Math.abs(v) < 1e-3) ? v.toExponential(3) : +v.toFixed(4)) : (v ?? "—"); }
function duration(run) {
  const end = run.ended || (run.state === "running" ? Date.now() / 1000 : null);
  if (!end || !run.created) return "—";
  const s = Math.max(0, Math.round(end - run.created));
  return s >= 3600 ? `${Math.floor(s / 3600)}h${String(Math.floor(s % 3600 / 60)).padStart(2, "0")}m` : `${Math.floor(s / 60)}m${String(s % 60).padStart(2, "0")}s`;
}
function stateBadge(state) { return el("span", state, `state state-${state}`); }
