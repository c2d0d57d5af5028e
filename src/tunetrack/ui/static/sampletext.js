// A row of samples' text as the Samples view reads it in full: a completion as its tokens, each
// coloured by one of its values per token (log-probability, entropy, advantage) on the viridis scale
// from the row's lowest to its highest, the exact value on hover; and a conversation as turns, an
// agent's trajectory with its tool calls, each call's result under it and a reward per turn. Which
// values go with which token the server says (GET /api/runs/{id}/samples/row's `tokens`,
// reader.tokens.tokens_of); this module only draws. User data is only ever inserted as text.
import { el, fmtNum, viridis } from "./common.js";

const LONG_TURN = 500;      // characters: a turn longer than this is folded (the first and last aside)
const LONG_LINES = 8;       // lines, likewise
const MANY_TURNS = 12;      // a conversation of this many turns folds all but its first and last
const PREVIEW = 120;        // characters of a folded turn said in its summary
const BRIEF_ITEMS = 12;     // items of a list a table cell shows

// The tokens of `tokens` ({column, tokens, values: {name: [number|null]}}) coloured by `chosen` (else
// the first of its values); `onChoose(name)` is told when another is picked, so the next row opened
// is coloured by it too.
export function tokenView(tokens, chosen, onChoose) {
  const names = Object.keys(tokens.values);
  let by = names.includes(chosen) ? chosen : names[0];
  const box = el("div", null, "tokens");
  box.id = "sample-tokens";
  const pick = el("select");
  pick.id = "token-by";
  pick.title = "the value per token the tokens are coloured by";
  pick.append(...names.map(n => Object.assign(el("option", n), { value: n })));
  pick.value = by;
  const legend = el("span", null, "token-legend");
  const text = el("div", null, "token-text");
  const head = el("div", null, "tokens-head");
  head.append(el("b", `${tokens.column}`), el("span", `${tokens.tokens.length.toLocaleString()} tokens, coloured by`), pick, legend);
  box.append(head, text);
  function draw() {
    const values = tokens.values[by];
    let low = Infinity, high = -Infinity;  // a loop: a spread of 100,000 values would overflow the stack
    for (const v of values) if (typeof v === "number") { low = Math.min(low, v); high = Math.max(high, v); }
    if (low > high) { low = 0; high = 1; }  // no value at all (each NaN or ±Inf, null on the wire)
    const span = high - low || 1;
    const scale = el("span", null, "token-scale");
    scale.style.backgroundImage = `linear-gradient(to right, ${Array.from({ length: 9 }, (_, i) => viridis(i / 8)).join(", ")})`;
    const lowEnd = el("span", null, "token-swatch scale-low"), highEnd = el("span", null, "token-swatch scale-high");
    lowEnd.style.backgroundColor = viridis(0);
    highEnd.style.backgroundColor = viridis(1);
    lowEnd.title = `lowest ${by}: ${low}`;
    highEnd.title = `highest ${by}: ${high}`;
    legend.replaceChildren(el("b", by, "token-legend-name"), el("span", "low", "muted"), el("span", fmtNum(low), "scale-value"), lowEnd, scale, highEnd,
                           el("span", fmtNum(high), "scale-value"), el("span", "high", "muted"));
    const others = names.filter(n => n !== by);
    text.replaceChildren(...tokens.tokens.map((token, i) => {
      const span_ = el("span", token, "tok");
      const v = values[i];
      const said = [`${by} ${v === null ? "none (NaN or ±Inf)" : String(v)}`,
                    ...others.map(n => `${n} ${tokens.values[n][i] === null ? "none" : String(tokens.values[n][i])}`)];
      span_.title = `token ${i + 1}: ${JSON.stringify(token)}\n${said.join("\n")}`;
      if (typeof v === "number") {
        const fraction = (v - low) / span;
        const colour = viridis(fraction);
        span_.style.backgroundColor = colour;
        span_.style.color = inkOn(colour);
      } else span_.classList.add("no-value");
      return span_;
    }));
    box.dataset.by = by;
  }
  pick.addEventListener("change", () => { by = pick.value; onChoose?.(by); draw(); });
  draw();
  return box;
}

// black on the light end of the scale, white on the dark (as the terminal view chooses)
function inkOn(colour) {
  const [r, g, b] = colour.match(/\d+/g).map(Number);
  return 0.299 * r + 0.587 * g + 0.114 * b > 140 ? "black" : "white";
}

// A list in a table cell: its length and first items, not the whole of it.
export function briefList(value) {
  const items = value.slice(0, BRIEF_ITEMS).map(v => (typeof v === "number" ? String(fmtNum(v)) : typeof v === "string" ? JSON.stringify(v) : v === null ? "—" : JSON.stringify(v)));
  return `[${value.length}] ${items.join(", ")}${value.length > BRIEF_ITEMS ? ", …" : ""}`;
}

// Whether a value is a conversation: a list of messages, each with a role.
export function isChat(value) {
  return Array.isArray(value) && value.length > 0 && value.every(m => m && typeof m === "object" && !Array.isArray(m) && "role" in m);
}

// A message's content as text: a string as it is, a list of parts (text, an image's address) each
// on its line, anything else as JSON.
function contentText(content) {
  if (content === null || content === undefined) return "";
  if (typeof content === "string") return content;
  if (Array.isArray(content)) {
    return content.map(p => (p && typeof p === "object" && typeof p.text === "string" ? p.text : typeof p === "string" ? p : JSON.stringify(p))).join("\n");
  }
  return JSON.stringify(content);
}
// A tool call's name and arguments, in OpenAI's shape ({id, type, function: {name, arguments}}) or
// flat ({name, arguments}); arguments as the model wrote them (a JSON string), laid out when long.
function callParts(call) {
  const fn = call && typeof call === "object" ? (call.function && typeof call.function === "object" ? call.function : call) : {};
  let args = fn.arguments ?? fn.args ?? "";
  if (typeof args !== "string") args = JSON.stringify(args, null, 2);
  else if (args.length > 80) { try { args = JSON.stringify(JSON.parse(args), null, 2); } catch { /* as written */ } }
  return { id: call?.id, name: String(fn.name ?? "?"), args };
}
function rewardBadge(reward) {
  const badge = el("span", fmtNum(reward), `reward-badge${reward > 0 ? " good" : reward < 0 ? " bad" : ""}`);
  badge.title = `reward of this turn: ${reward}`;
  return badge;
}

// One line per message for a table cell: `role content → name(arguments) [reward]`.
function briefChat(messages, box) {
  for (const m of messages) {
    const msg = el("div", null, `msg msg-${String(m.role).replace(/[^a-z]/gi, "")}`);
    let line = contentText(m.content);
    for (const call of Array.isArray(m.tool_calls) ? m.tool_calls : []) {
      const { name, args } = callParts(call);
      line += ` → ${name}(${args})`;
    }
    msg.append(el("b", String(m.role)), el("span", line));
    if (typeof m.reward === "number") msg.append(rewardBadge(m.reward));
    box.appendChild(msg);
  }
}

// A conversation in `box`: in a table cell one line a message; in full, a turn each (a <details>,
// long ones folded but the first and the last, and all but those in a conversation of many turns),
// its role, its reward as a badge, its text, the tools it called (name and arguments) with each
// result under its call (a tool message naming the call's id; one naming none is a turn of its own).
export function drawChat(messages, box, brief) {
  box.classList.add("chat");
  if (brief) { briefChat(messages, box); return; }
  const calls = new Set();
  for (const m of messages) for (const c of Array.isArray(m.tool_calls) ? m.tool_calls : []) if (c?.id != null) calls.add(String(c.id));
  const results = new Map();  // a call's id: its tool message
  for (const m of messages) if (m.role === "tool" && m.tool_call_id != null && calls.has(String(m.tool_call_id)) && !results.has(String(m.tool_call_id))) results.set(String(m.tool_call_id), m);
  const attached = new Set(results.values());
  const turns = messages.filter(m => !attached.has(m));
  const turnEls = turns.map((m, i) => turn(m, i, turns.length, results));
  if (turns.length >= 3) {
    const bar = el("div", null, "chat-bar muted");
    const rewards = turns.filter(m => typeof m.reward === "number").length;
    const toolCalls = turns.reduce((n, m) => n + (Array.isArray(m.tool_calls) ? m.tool_calls.length : 0), 0);
    bar.append(el("span", `${turns.length} turns${toolCalls ? `, ${toolCalls} tool call${toolCalls === 1 ? "" : "s"}` : ""}${rewards ? `, ${rewards} rewarded` : ""}`));
    for (const [label, open] of [["open all", true], ["fold all", false]]) {
      const button = el("button", label, "link-button");
      button.type = "button";
      button.addEventListener("click", () => { for (const d of turnEls) d.open = open; });
      bar.append(button);
    }
    box.appendChild(bar);
  }
  box.append(...turnEls);
}

function turn(m, i, count, results) {
  const role = String(m.role);
  const details = el("details", null, `msg msg-${role.replace(/[^a-z]/gi, "")}`);
  details.dataset.turn = String(i);
  const text = contentText(m.content);
  const calls = (Array.isArray(m.tool_calls) ? m.tool_calls : []).map(callParts);
  const size = text.length + calls.reduce((n, c) => n + c.args.length, 0);
  const long = size > LONG_TURN || text.split("\n").length > LONG_LINES;
  details.open = i === 0 || i === count - 1 || (!long && count < MANY_TURNS);
  const summary = el("summary", null, "turn-head");
  summary.append(el("b", role));
  if (typeof m.reward === "number") summary.append(rewardBadge(m.reward));
  if (m.role === "tool" && m.tool_call_id != null) summary.append(el("span", `result of ${m.tool_call_id}`, "muted"));
  for (const c of calls) summary.append(el("code", `→ ${c.name}`, "tool-chip"));
  const preview = text.replace(/\s+/g, " ").trim();
  if (preview) summary.append(el("span", preview.length > PREVIEW ? `${preview.slice(0, PREVIEW - 1)}…` : preview, "turn-preview muted"));
  details.append(summary);
  if (text) details.append(el("div", text, "turn-text"));
  for (const c of calls) {
    const box = el("div", null, "tool-call");
    const head = el("div", null, "tool-call-head");
    head.append(el("span", "calls", "muted"), el("code", c.name, "tool-name"));
    if (c.id != null) head.append(el("span", String(c.id), "muted tool-id"));
    box.append(head, el("pre", c.args, "tool-args"));
    const result = c.id != null ? results.get(String(c.id)) : undefined;
    if (result) {
      const out = el("div", null, "tool-result");
      out.append(el("span", "result", "muted"), el("pre", contentText(result.content), "tool-output"));
      if (typeof result.reward === "number") out.append(rewardBadge(result.reward));
      box.append(out);
    } else box.append(el("div", "no result", "muted tool-result"));
    details.append(box);
  }
  return details;
}

// A table cell of a row of samples where a page holds many rows at once (the report, the notebook
// panel): its text; a conversation as turns (an agent's trajectory: tool calls with their results, a
// reward per turn); the row's tokens coloured by a value per token (reader/tokens.py's rich_cells:
// the first tokens, as many as a cell's characters). `classes`: the page's own for a number's cell
// and a text's.
let tokenBy = null;  // the value per token last picked: the next view drawn is coloured by it too
export function sampleCell(r, i, text, type, classes = { number: "num", text: "sample-text" }) {
  const td = el("td", null, type === "number" ? classes.number : classes.text);
  const chat = r.chats?.[String(i)];
  if (chat) drawChat(chat, td, false);
  else if (r.tokens && r.tokens.index === i) {
    td.classList.add("token-cell");
    const view = tokenView(r.tokens, tokenBy, by => { tokenBy = by; });
    view.removeAttribute("id");  // ids the dashboard's one view has: these pages have a view a row
    view.querySelector("select").removeAttribute("id");
    td.appendChild(view);
    if (r.tokens.tokens.length < r.tokens.total) td.appendChild(el("p", `the first ${r.tokens.tokens.length.toLocaleString()} of ${r.tokens.total.toLocaleString()} tokens`, "muted"));
  } else td.textContent = text;
  return td;
}
