// The game view as an MCP App: JSON-RPC 2.0 over postMessage with the host (the
// io.modelcontextprotocol/ui extension, as @modelcontextprotocol/ext-apps speaks it),
// written by hand so the view loads nothing from anywhere. The host pushes the
// arguments and results of the tool calls made by the model; a button calls `step`
// through the host, and its answer is drawn the same way.
"use strict";

const APPS_PROTOCOL = "2026-01-26";
const VIEW_META = "openenv-mcp/view";
const $ = (id) => document.getElementById(id);
const num = (v) => (typeof v === "number" ? (Number.isInteger(v) ? String(v) : v.toFixed(3).replace(/\.?0+$/, "")) : String(v));
const el = (tag, props = {}, ...children) => {
  const node = document.createElement(tag);
  for (const [k, v] of Object.entries(props)) {
    if (k === "dataset") Object.assign(node.dataset, v);
    else node[k] = v;
  }
  node.append(...children);
  return node;
};

const state = { episode: null, tool: null, busy: false, done: false, torn: false, replay: null, replayTimer: null, recording: null };

// -- JSON-RPC with the host ----------------------------------------------------------------

let nextId = 1;
const pending = new Map();

function post(message) {
  window.parent.postMessage({ jsonrpc: "2.0", ...message }, "*");
}

function request(method, params = {}) {
  const id = nextId++;
  post({ id, method, params });
  return new Promise((resolve, reject) => {
    pending.set(id, { resolve, reject });
    setTimeout(() => { if (pending.delete(id)) reject(new Error(`${method}: no answer from the host`)); }, 120000);
  });
}

function notify(method, params = {}) { post({ method, params }); }

const handlers = {
  "ui/notifications/tool-input": (p) => { setStatus(`${state.tool || "tool"} called…`); state.input = p.arguments || {}; },
  "ui/notifications/tool-input-partial": () => {},
  "ui/notifications/tool-result": (p) => render(p, state.tool),
  "ui/notifications/tool-cancelled": (p) => setStatus(`cancelled${p && p.reason ? `: ${p.reason}` : ""}`),
  "ui/notifications/host-context-changed": (p) => applyContext(p),
  "ui/resource-teardown": () => { teardown(); return {}; },
  "ping": () => ({}),
};

window.addEventListener("message", (event) => {
  if (event.source !== window.parent) return;
  const m = event.data;
  if (!m || typeof m !== "object" || m.jsonrpc !== "2.0") return;
  if (m.method === undefined && m.id !== undefined) {
    const waiting = pending.get(m.id);
    if (!waiting) return;
    pending.delete(m.id);
    if (m.error) waiting.reject(new Error(m.error.message || "the host refused"));
    else waiting.resolve(m.result);
    return;
  }
  const handler = handlers[m.method];
  let result;
  try {
    result = handler ? handler(m.params || {}) : undefined;
  } catch (err) {
    if (m.id !== undefined) post({ id: m.id, error: { code: -32603, message: String(err.message || err) } });
    return;
  }
  if (m.id === undefined) return;  // a notification
  if (!handler) post({ id: m.id, error: { code: -32601, message: `the view does not handle ${m.method}` } });
  else post({ id: m.id, result: result || {} });
});

// -- the host's context: theme, colours, which tool this view belongs to ----------------------

function applyContext(ctx) {
  if (!ctx || typeof ctx !== "object") return;
  const root = document.documentElement;
  if (ctx.theme === "light" || ctx.theme === "dark") {
    root.dataset.theme = ctx.theme;
    root.style.colorScheme = ctx.theme;
  }
  const vars = ctx.styles && ctx.styles.variables;
  if (vars && typeof vars === "object") {
    for (const [name, value] of Object.entries(vars)) {
      if (name.startsWith("--") && typeof value === "string") root.style.setProperty(name, value);
    }
  }
  if (ctx.toolInfo && ctx.toolInfo.tool && typeof ctx.toolInfo.tool.name === "string") state.tool = ctx.toolInfo.tool.name;
}

// -- drawing a result -----------------------------------------------------------------------------

function setStatus(text, error = false) {
  $("status").textContent = text;
  $("status").className = error ? "error" : "dim";
}

const texts = (result) => (result.content || []).filter((c) => c && c.type === "text").map((c) => c.text);
const images = (result) => (result.content || []).filter((c) => c && c.type === "image");

function setStat(id, value) {
  const shown = value !== undefined && value !== null;
  $(id).textContent = shown ? num(value) : "-";
  return shown;
}

function render(result, tool) {
  if (!result || typeof result !== "object") return;
  const text = texts(result).join("\n");
  if (result.isError) {
    setStatus(text || "the call failed", true);
    addTranscript(text, true);
    return;
  }
  const view = (result._meta && result._meta[VIEW_META]) || {};
  // The tool the result answers, as the server names it: a host that pushes the model's
  // next calls into this same view may not say which tool each was.
  if (typeof view.tool === "string") tool = view.tool;
  if (Array.isArray(view.replay)) { openReplay(view, result); return; }
  if (Array.isArray(view.recordings)) { showRecordings(view); return; }
  stopReplay();
  if (view.title) $("title").textContent = view.title;
  if (view.episode_id) state.episode = view.episode_id;
  const image = images(result)[0];
  if (image) {
    $("frame").src = `data:${image.mimeType};base64,${image.data}`;
    $("frame").hidden = false;
    $("frame").dataset.frames = String(Number($("frame").dataset.frames || 0) + 1);
  }
  $("episode").textContent = state.episode ? `${state.episode.slice(0, 10)}…` : "-";
  $("episode").title = state.episode || "";
  setStat("step", view.step);
  setStat("reward", view.reward);
  setStat("return", view.return);
  for (const key of ["lives", "score"]) {
    const shown = setStat(key, view[key]);
    $(key).hidden = !shown;
    $(`${key}-label`).hidden = !shown;
  }
  $("summary").textContent = text;
  $("board").textContent = view.board || "";
  $("board").hidden = !view.board;
  if (!image && !view.board) addTranscript(`${tool ? `${tool}: ` : ""}${text}`);
  state.done = Boolean(view.done);
  state.recording = view.recording || state.recording;
  $("replay-open").hidden = !state.recording;
  drawActions(view.legal_actions);
  setStatus(view.done ? (view.truncated ? "episode over (truncated)" : "episode over") : view.status || "");
}

function addTranscript(text, error = false) {
  if (!text) return;
  const list = $("transcript");
  list.hidden = false;
  list.append(el("li", { textContent: text, className: error ? "error" : "" }));
  while (list.children.length > 200) list.firstChild.remove();
  list.scrollTop = list.scrollHeight;
}

function drawActions(legal) {
  const box = $("actions");
  box.replaceChildren();
  const named = Array.isArray(legal) ? legal : [];
  for (const action of named) {
    const name = String(action.name);
    const button = el("button", { type: "button", textContent: name, title: `step ${name}` });
    button.setAttribute("data-action", name);
    button.disabled = state.done || state.busy;
    button.onclick = () => play(name);
    box.append(button);
  }
  // A text environment (no named actions): type the action.
  $("say").hidden = named.length > 0 || !state.episode;
}

// -- acting through the host ---------------------------------------------------------------------

async function callTool(name, args, label) {
  if (state.busy) return;
  state.busy = true;
  for (const b of document.querySelectorAll("#actions button")) b.disabled = true;
  setStatus(`${label}…`);
  try {
    const result = await request("tools/call", { name, arguments: args });
    render(result, name);
  } catch (err) {
    setStatus(String(err.message || err), true);
  } finally {
    state.busy = false;
    for (const b of document.querySelectorAll("#actions button")) b.disabled = state.done;
  }
}

function play(action) {
  const args = { action };
  if (state.episode) args.episode_id = state.episode;
  return callTool("step", args, action);
}

// -- replay of a recording -----------------------------------------------------------------------

function showRecordings(view) {
  const box = $("actions");
  box.replaceChildren();
  for (const r of view.recordings) {
    const button = el("button", { type: "button", textContent: `${r.title || view.env} seed ${r.seed ?? "-"}: ${r.steps} steps`, dataset: { recording: r.id } });
    button.onclick = () => callTool("view_replay", { recording: r.id }, "loading the replay");
    box.append(button);
  }
  setStatus(`${view.recordings.length} recordings`);
}

function openReplay(view, result) {
  stopReplay();
  state.replay = { steps: view.replay, images: images(result), title: view.title };
  $("title").textContent = `Replay: ${view.title || view.env}`;
  $("replay").hidden = false;
  $("replay-scrubber").max = String(Math.max(0, view.replay.length - 1));
  $("actions").replaceChildren();
  seek(0);
  togglePlay(true);
}

function seek(i) {
  const r = state.replay;
  if (!r || !r.steps.length) return;
  const s = r.steps[i];
  $("replay-scrubber").value = String(i);
  $("replay-position").textContent = `${i} / ${r.steps.length - 1}`;
  setStat("step", s.step);
  setStat("reward", s.reward);
  setStat("return", s.return);
  $("summary").textContent = s.action === null || s.action === undefined ? "start" : `step ${s.step}: ${s.action}${s.terminated ? " (terminated)" : ""}${s.truncated ? " (truncated)" : ""}`;
  const image = typeof s.image === "number" ? r.images[s.image] : null;
  if (image) { $("frame").src = `data:${image.mimeType};base64,${image.data}`; $("frame").hidden = false; }
}

function togglePlay(on = !state.replayTimer) {
  if (state.replayTimer) { clearInterval(state.replayTimer); state.replayTimer = null; }
  $("replay-play").textContent = on ? "Pause" : "Play";
  if (!on) return;
  // Play at the end starts over.
  if (state.replay && Number($("replay-scrubber").value) >= state.replay.steps.length - 1) seek(0);
  state.replayTimer = setInterval(() => {
    const i = Number($("replay-scrubber").value) + 1;
    if (!state.replay || i >= state.replay.steps.length) { togglePlay(false); return; }
    seek(i);
  }, 1000 / 15);
}

function stopReplay() {
  if (state.replayTimer) { clearInterval(state.replayTimer); state.replayTimer = null; }
  state.replay = null;
  $("replay").hidden = true;
}

// -- size, teardown, start ----------------------------------------------------------------------

let lastSize = "";
function reportSize() {
  const box = $("app").getBoundingClientRect();
  const width = Math.ceil(box.width);
  const height = Math.ceil(box.height);
  const key = `${width}x${height}`;
  if (key === lastSize || state.torn) return;
  lastSize = key;
  notify("ui/notifications/size-changed", { width, height });
}

function teardown() {
  state.torn = true;
  stopReplay();
  for (const waiting of pending.values()) waiting.reject(new Error("the view was torn down"));
  pending.clear();
}

async function main() {
  $("new-game").onclick = () => callTool("reset", {}, "new game");
  $("replay-open").onclick = () => callTool("view_replay", { recording: state.recording }, "loading the replay");
  $("replay-play").onclick = () => togglePlay();
  $("replay-scrubber").oninput = (e) => { togglePlay(false); seek(Number(e.target.value)); };
  // The typed action goes without submitting the form: a host's sandbox without
  // allow-forms blocks a submission before its submit event (and logs an error).
  const say = () => { const v = $("say-text").value; if (v) { $("say-text").value = ""; play(v); } };
  $("say").querySelector("button").onclick = say;
  $("say-text").onkeydown = (e) => { if (e.key === "Enter" && !e.isComposing) { e.preventDefault(); say(); } };
  $("say").onsubmit = (e) => { e.preventDefault(); say(); };
  new ResizeObserver(reportSize).observe($("app"));
  try {
    const init = await request("ui/initialize", {
      appInfo: { name: "openenv-mcp-view", version: "1.0.0" },
      appCapabilities: { availableDisplayModes: ["inline"] },
      protocolVersion: APPS_PROTOCOL,
    });
    applyContext((init && init.hostContext) || {});
    notify("ui/notifications/initialized", {});
    reportSize();
  } catch (err) {
    setStatus(`no host: ${err.message || err}`, true);
  }
}

main();
