// The run page's Samples view: one step's table of samples (a step slider), sorted by any column and
// filtered by a regex over the text on the server (the reader's one selection, as `tunetrack
// samples`), drawn virtually (only the rows in view exist, so 1,000 rows of 4 kB scroll smoothly),
// a row opened in full below (chat as a conversation, an agent's trajectory as turns with its tool
// calls, their results and rewards; a completion's tokens coloured by a value per token; images
// inline: sampletext.js) with the same prompt across training, or side by side with another run's (the compare page); the distribution of a numeric
// column at the step and its mean at every step. User data is only ever inserted as text.
import { api, chartsLoaded, dropChart, el, fmtNum, lineChart, plural } from "./common.js";
import { briefList, drawChat, isChat, tokenView } from "./sampletext.js";

const ROW_HEIGHT = 88;  // px: a row shows its first lines; a click shows all of it
const OVERSCAN = 8;     // rows drawn above and below the view
const BINS = 20;

export function showSamples(runId, summary) {
  const section = document.getElementById("samples-section");
  if (!summary || !summary.rows) { section.hidden = true; return; }
  section.hidden = false;
  const link = document.getElementById("samples-link");
  link.hidden = false;
  link.querySelector("a").textContent = `${plural(summary.rows, "sample")} at ${plural(summary.steps, "step")}`;
  if (section.dataset.ready) return;
  section.dataset.ready = "1";
  const view = new SamplesView(runId);
  view.load({ last: true });
}

class SamplesView {
  constructor(runId) {
    this.runId = runId;
    this.base = `/api/runs/${encodeURIComponent(runId)}/samples`;
    this.key = null; this.steps = []; this.sort = null; this.data = null; this.column = null;
    this.tokenBy = null;  // the value per token the tokens are coloured by, kept from row to row
    this.keySelect = document.getElementById("sample-key");
    this.slider = document.getElementById("sample-step");
    this.grep = document.getElementById("sample-grep");
    this.body = document.querySelector("#sample-table .vbody");
    this.space = document.querySelector("#sample-table .vspace");
    this.head = document.querySelector("#sample-table .vhead");
    // another table: its own columns, so a sort by one of the last table's is dropped
    this.keySelect.addEventListener("change", () => { this.key = this.keySelect.value; this.sort = null; this.load({ last: true }); });
    this.slider.addEventListener("input", () => this.stepLabel());
    this.slider.addEventListener("change", () => this.load({}));
    let timer = null;
    this.grep.addEventListener("input", () => { clearTimeout(timer); timer = setTimeout(() => this.load({}), 250); });
    this.body.addEventListener("scroll", () => this.drawRows());
    document.getElementById("sample-column").addEventListener("change", e => { this.column = e.target.value; this.stats(); });
  }
  step() { return this.steps[+this.slider.value]; }
  stepLabel() { document.getElementById("sample-step-label").textContent = `step ${this.step()} (${+this.slider.value + 1} of ${this.steps.length})`; }
  async load({ last = false }) {
    const q = new URLSearchParams();
    if (this.key !== null) q.set("key", this.key);
    if (last) q.set("last", "true"); else if (this.steps.length) q.set("step", String(this.step()));
    if (this.grep.value) q.set("grep", this.grep.value);
    if (this.sort) q.set("sort", `${this.sort.column}${this.sort.desc ? ":desc" : ""}`);
    const error = document.getElementById("sample-error");
    try { this.data = await api(`${this.base}?${q}`); } catch (e) { error.textContent = e.message; return; }
    error.textContent = "";
    const keyChanged = this.key !== this.data.key;
    this.key = this.data.key;
    this.keySelect.replaceChildren(...Object.keys(this.data.keys).map(k => Object.assign(el("option", k), { value: k })));
    this.keySelect.value = this.key;
    this.steps = this.data.keys[this.key].steps;
    this.slider.max = String(this.steps.length - 1);
    this.slider.value = String(Math.max(0, this.steps.indexOf(this.data.step)));
    this.stepLabel();
    document.getElementById("sample-count").textContent = plural(this.data.total, "row");
    this.columns = Object.keys(this.data.columns);
    this.drawHead();
    this.space.style.height = `${this.data.samples.length * ROW_HEIGHT}px`;
    this.body.scrollTop = 0;
    this.drawRows(true);
    document.getElementById("sample-detail").hidden = true;
    const numeric = this.columns.filter(c => this.data.columns[c] === "number" && c !== "step");
    if (keyChanged || !numeric.includes(this.column)) {
      this.column = numeric.find(c => /reward/i.test(c)) ?? numeric[0] ?? null;
      const pick = document.getElementById("sample-column");
      pick.replaceChildren(...numeric.map(c => Object.assign(el("option", c), { value: c })));
      if (this.column) pick.value = this.column;
      this.curve();
    }
    this.stats();
  }
  template() { return this.columns.map(c => (["number", "bool"].includes(this.data.columns[c]) ? "90px" : "minmax(160px, 1fr)")).join(" "); }
  drawHead() {
    this.head.style.gridTemplateColumns = this.template();
    this.head.replaceChildren(...this.columns.map(c => {
      const arrow = this.sort?.column === c ? (this.sort.desc ? " ▼" : " ▲") : "";
      const th = el("div", c + arrow, "vcell");
      th.dataset.sort = c;
      th.title = `${c} (${this.data.columns[c]}): click to sort`;
      th.addEventListener("click", () => {
        this.sort = this.sort?.column === c && !this.sort.desc ? { column: c, desc: true } : { column: c, desc: false };
        this.load({});
      });
      return th;
    }));
  }
  // Only the rows in view (and a few around) are elements: the scroll height is the whole table's.
  drawRows(force = false) {
    const rows = this.data.samples;
    const first = Math.max(0, Math.floor(this.body.scrollTop / ROW_HEIGHT) - OVERSCAN);
    const last = Math.min(rows.length, Math.ceil((this.body.scrollTop + this.body.clientHeight) / ROW_HEIGHT) + OVERSCAN);
    if (!force && this.drawn && this.drawn[0] === first && this.drawn[1] === last) return;
    this.drawn = [first, last];
    const template = this.template();
    const out = [];
    for (let i = first; i < last; i++) {
      const r = el("div", null, "vrow");
      r.style.top = `${i * ROW_HEIGHT}px`;
      r.style.height = `${ROW_HEIGHT}px`;
      r.style.gridTemplateColumns = template;
      r.dataset.index = String(i);
      for (const c of this.columns) r.appendChild(this.cell(rows[i].row[c], this.data.columns[c], true));
      r.addEventListener("click", () => this.open(rows[i]));
      out.push(r);
    }
    this.space.replaceChildren(...out);
  }
  cell(value, type, brief) {
    const box = el("div", null, brief ? "vcell" : "cell-full");
    if (value === null || value === undefined) { box.textContent = "—"; box.classList.add("muted"); return box; }
    if (type === "image" && typeof value === "string") {
      const img = el("img", null, brief ? "thumb" : "sample-image");
      img.src = `/api/runs/${encodeURIComponent(this.runId)}/media/${value.split("/").map(encodeURIComponent).join("/")}`;
      img.alt = value;
      box.appendChild(img);
    } else if (isChat(value)) {
      drawChat(value, box, brief);
    } else if (brief && Array.isArray(value)) {
      box.textContent = briefList(value);  // tokens, a value per token: their count and first few
    } else if (typeof value === "number") {
      box.textContent = fmtNum(value);
      box.classList.add("num");
    } else {
      box.textContent = typeof value === "string" ? value : JSON.stringify(value);
    }
    return box;
  }
  // A row in full: every cell wrapped, and the same prompt at every step of training.
  open(sample) {
    const detail = document.getElementById("sample-detail");
    detail.hidden = false;
    const parts = [el("h3", `${sample.key} · step ${sample.step} · row ${sample.index + 1}`)];
    if (this.columns.some(c => this.data.columns[c] === "sequence")) parts.push(this.tokens(sample));
    for (const c of this.columns) {
      const line = el("div", null, "detail-cell");
      line.append(el("div", c, "detail-name"), this.cell(sample.row[c], this.data.columns[c], false));
      parts.push(line);
    }
    const promptColumn = this.data.prompt_column;
    if (promptColumn && sample.row[promptColumn] != null) {
      const across = el("div", null, "across");
      across.id = "sample-across";
      const button = el("button", "this prompt across training");
      button.addEventListener("click", () => this.across(sample, across));
      parts.push(button, this.sideBySide(sample), across);
    }
    detail.replaceChildren(...parts);
    detail.scrollIntoView({ block: "nearest" });
  }
  // The row's tokens coloured by a value per token, once the server has said which (its row in full
  // carries `tokens`, aligned as reader.tokens.tokens_of aligns them); nothing where it has none.
  tokens(sample) {
    const box = el("div", null, "tokens");
    box.hidden = true;
    const q = new URLSearchParams({ key: sample.key, step: sample.step, index: sample.index });
    if (typeof sample.time === "number") q.set("time", String(sample.time));  // of the tables at the step, this one
    api(`${this.base}/row?${q}`).then(full => {
      if (!full.tokens || !box.isConnected) return;
      box.replaceWith(tokenView(full.tokens, this.tokenBy, by => { this.tokenBy = by; }));
    }).catch(e => { box.hidden = false; box.textContent = e.message; box.classList.add("error"); });
    return box;
  }
  // A link to the compare page: this row's prompt at this step, beside the same prompt in another run
  // (only the runs that have a table under this key are offered: GET /api/samples/runs).
  sideBySide(sample) {
    const pick = Object.assign(el("select"), { id: "sample-other", title: "another run with this table" });
    pick.appendChild(Object.assign(el("option", "side by side with another run…"), { value: "" }));
    api(`/api/samples/runs?${new URLSearchParams({ key: sample.key, run: this.runId })}`).then(({ runs }) => {
      for (const r of runs) {
        pick.appendChild(Object.assign(el("option", `${r.name} (${r.id})${r.project ? " in " + r.project : ""}`), { value: r.id }));
      }
      if (!runs.length) pick.options[0].textContent = `no other run has ${sample.key}`;
    }).catch(() => {});
    pick.addEventListener("change", () => {
      if (!pick.value) return;
      const q = new URLSearchParams({ ids: `${this.runId},${pick.value}`, key: sample.key, step: sample.step, row: sample.index });
      location.href = `/compare?${q}#samples`;
    });
    return pick;
  }
  async across(sample, box) {
    // the server finds the row's prompt (as text, a conversation included) and every row that has it
    const q = new URLSearchParams({ key: this.key, like_step: sample.step, like_index: sample.index, sort: "step" });
    let data;
    try { data = await api(`${this.base}?${q}`); } catch (e) { box.textContent = e.message; return; }
    const shown = this.columns.filter(c => c !== this.data.prompt_column && c !== "step");
    const table = el("table");
    table.appendChild(el("thead")).appendChild(rowOf(["step", ...shown], "th"));
    const body = table.appendChild(el("tbody"));
    for (const s of data.samples) {
      const tr = body.appendChild(el("tr"));
      tr.appendChild(el("td", String(s.step)));
      for (const c of shown) tr.appendChild(el("td")).appendChild(this.cell(s.row[c], data.columns[c], false));
    }
    box.replaceChildren(el("p", `${plural(data.total, "completion")} of this prompt over ${plural(new Set(data.samples.map(s => s.step)).size, "step")}`), table);
  }
  // The distribution of the chosen column over the step's rows (as filtered).
  stats() {
    const hist = document.getElementById("sample-hist");
    const values = this.column ? this.data.samples.map(s => s.row[this.column]).filter(v => typeof v === "number") : [];
    hist.replaceChildren();
    hist.dataset.count = String(values.length);
    if (!values.length) { hist.appendChild(el("p", "no numeric column", "muted")); return; }
    const lo = Math.min(...values), hi = Math.max(...values);
    const width = (hi - lo) / BINS || 1;
    const counts = new Array(BINS).fill(0);
    for (const v of values) counts[Math.min(BINS - 1, Math.floor((v - lo) / width))]++;
    const most = Math.max(...counts);
    const bars = el("div", null, "bars");
    counts.forEach((n, i) => {
      const bar = el("div", null, "bar-col");
      bar.style.height = `${(100 * n) / most}%`;
      bar.title = `${fmtNum(lo + i * width)} to ${fmtNum(lo + (i + 1) * width)}: ${n}`;
      bar.dataset.count = String(n);
      bars.appendChild(bar);
    });
    const mean = values.reduce((a, b) => a + b, 0) / values.length;
    hist.append(bars, el("div", `${this.column} at step ${this.data.step}: ${plural(values.length, "value")}, mean ${fmtNum(mean)}, from ${fmtNum(lo)} to ${fmtNum(hi)}`, "muted"));
  }
  async curve() {
    const box = document.getElementById("sample-curve");
    dropChart(box);
    box.replaceChildren();
    if (!this.column || !chartsLoaded()) return;
    box.classList.add("chart");  // a chart only where one can be drawn (a build without uPlot has none)
    const q = new URLSearchParams({ key: this.key, column: this.column });
    try {
      const data = await api(`${this.base}/curve?${q}`);
      lineChart(box, [data.x, data.y], null, { title: `mean ${this.column} per step`, x: "step", names: [this.column], legend: false });
      box.dataset.points = String(data.x.length);
    } catch (e) { box.textContent = e.message; }
  }
}

function rowOf(cells, tag) {
  const tr = el("tr");
  for (const c of cells) tr.appendChild(el(tag, c));
  return tr;
}

// The compare page's samples: two runs at one step, one prompt, the i-th completion of each side by
// side with the words the other has not marked (the server compares them: reader/samples.word_diff).
// `start`: the key, step and row (of the first run) the page was opened at, from the run's Samples view.
// The URL keeps the key, the step and the first run's row of the prompt shown (`row`), so a reload
// shows the same; a page opened at #samples is scrolled to them once they are drawn.
export function showSideBySide(ids, start) {
  const section = document.getElementById("samples-section");
  const keySelect = document.getElementById("sample-key");
  const stepSelect = document.getElementById("sample-step");
  const promptSelect = document.getElementById("sample-prompt");
  const error = document.getElementById("sample-error");
  const state = { key: start.key || null, step: start.step ?? null, row: start.row ?? null, prompt: null, data: null };
  let landed = location.hash !== "#samples";
  async function load() {
    const q = new URLSearchParams();
    for (const id of ids) q.append("id", id);
    if (state.key !== null) q.set("key", state.key);
    if (state.step !== null) q.set("step", String(state.step));
    if (state.row !== null) q.set("like_index", String(state.row));
    else if (state.prompt !== null) q.set("prompt", state.prompt);
    let data;
    try { data = await api(`/api/samples/compare?${q}`); } catch (e) { section.hidden = false; error.textContent = e.message; return; }
    error.textContent = "";
    if (!data.keys.length || !data.steps.length) { section.hidden = true; return; }
    section.hidden = false;
    state.data = data; state.key = data.key; state.step = data.step; state.prompt = data.prompt; state.row = null;
    keySelect.replaceChildren(...data.keys.map(k => Object.assign(el("option", k), { value: k })));
    keySelect.value = data.key;
    stepSelect.replaceChildren(...data.steps.map(s => Object.assign(el("option", String(s)), { value: String(s) })));
    stepSelect.value = String(data.step);
    const prompts = data.prompts.includes(data.prompt) || data.prompt === null ? data.prompts : [data.prompt, ...data.prompts];
    promptSelect.hidden = !prompts.length;
    promptSelect.replaceChildren(...prompts.map((p, i) => {
      const option = el("option", p.length > 100 ? `${p.slice(0, 99)}…` : p);
      option.value = String(i);
      return option;
    }));
    promptSelect.value = String(Math.max(0, prompts.indexOf(data.prompt)));
    promptSelect.prompts = prompts;
    document.getElementById("sample-prompt-text").textContent = data.prompt ?? "";
    document.getElementById("sample-count").textContent = `${data.total[0].toLocaleString()} and ${plural(data.total[1], "row")}`;
    draw(data);
    if (!landed) {  // the section was hidden when the browser looked for the #samples anchor
      landed = true;
      document.getElementById("samples").scrollIntoView({ block: "start" });
    }
  }
  function draw(data) {
    const grid = el("div", null, "pairs");
    for (const r of data.runs) grid.appendChild(el("div", `${r.name} (${r.id})`, "pair-head"));
    const shown = Object.keys(data.columns).filter(c => c !== data.prompt_column && c !== data.completion_column && c !== "step");
    data.pairs.forEach((pair, i) => {
      for (const side of ["a", "b"]) {
        const box = el("div", null, "side");
        box.dataset.pair = String(i);
        box.dataset.side = side;
        const sample = pair[side];
        if (!sample) { box.append(el("span", "no such row in this run", "muted")); grid.appendChild(box); continue; }
        const text = el("div", null, "diff-text");
        if (pair.diff) {
          for (const [part, changed] of pair.diff[side]) text.appendChild(changed ? el("mark", part, `changed ${side === "a" ? "gone" : "new"}`) : document.createTextNode(part));
        } else text.textContent = String(sample.row[data.completion_column] ?? "");
        const brief = v => (typeof v === "number" ? fmtNum(v) : Array.isArray(v) ? briefList(v) : v !== null && typeof v === "object" ? JSON.stringify(v) : v ?? "—");
        const meta = shown.filter(c => sample.row[c] !== undefined).map(c => `${c} ${brief(sample.row[c])}`);
        box.append(el("div", `row ${sample.index + 1}${meta.length ? " · " + meta.join(" · ") : ""}`, "side-meta"), text);
        grid.appendChild(box);
      }
    });
    if (!data.pairs.length) grid.appendChild(el("p", "no rows of this prompt at this step", "muted"));
    document.getElementById("sample-pairs").replaceChildren(grid);
    const q = new URLSearchParams(location.search);
    q.set("key", data.key); q.set("step", String(data.step));
    const first = data.pairs.find(p => p.a)?.a;  // the first run's row of the prompt shown
    if (first && data.prompt !== null) q.set("row", String(first.index)); else q.delete("row");
    history.replaceState(null, "", `?${q}${location.hash}`);
  }
  keySelect.addEventListener("change", () => { state.key = keySelect.value; state.step = null; state.prompt = null; load(); });
  stepSelect.addEventListener("change", () => { state.step = +stepSelect.value; load(); });
  promptSelect.addEventListener("change", () => { state.prompt = promptSelect.prompts[+promptSelect.value]; load(); });
  load();
}
