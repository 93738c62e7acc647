// openenv-mcp's web page: an MCP client (play, inspect) plus a read-only view of the
// server's live episodes (watch) and recordings (replay). No framework, no build step.
"use strict";

const PROTOCOL = "2026-07-28";
const TOKEN = document.querySelector('meta[name="openenv-token"]').content;
const $ = (id) => document.getElementById(id);
const el = (tag, props = {}, ...children) => {
  const node = document.createElement(tag);
  for (const [k, v] of Object.entries(props)) {
    if (k === "dataset") Object.assign(node.dataset, v);
    else if (k in node) node[k] = v;
    else node.setAttribute(k, v);
  }
  for (const child of children) node.append(child);
  return node;
};
const json = (v) => JSON.stringify(v, null, 2);
const num = (v) => (typeof v === "number" ? (Number.isInteger(v) ? String(v) : v.toFixed(3).replace(/\.?0+$/, "")) : String(v));

// -- MCP over Streamable HTTP (sessionless: each request carries its own envelope) --------

let rpcIds = 0;
function rpcBody(method, params) {
  return {
    jsonrpc: "2.0",
    id: ++rpcIds,
    method,
    params: {
      ...params,
      _meta: {
        "io.modelcontextprotocol/protocolVersion": PROTOCOL,
        "io.modelcontextprotocol/clientInfo": { name: "openenv-mcp-web", version: "1" },
        "io.modelcontextprotocol/clientCapabilities": {},
      },
    },
  };
}

async function mcp(method, params = {}) {
  const body = rpcBody(method, params);
  const headers = {
    "content-type": "application/json",
    accept: "application/json, text/event-stream",
    "mcp-protocol-version": PROTOCOL,
    "mcp-method": method,
  };
  if (method === "tools/call") {
    headers["mcp-name"] = params.name;
    Object.assign(headers, paramHeaders(await toolSchema(params.name), params.arguments));
  }
  if (TOKEN) headers.authorization = `Bearer ${TOKEN}`;
  const response = await fetch("../mcp", { method: "POST", headers, body: JSON.stringify(body) });
  const text = await response.text();
  let message = null;
  if ((response.headers.get("content-type") || "").startsWith("text/event-stream")) {
    for (const event of text.split(/\r?\n\r?\n/)) {
      const data = event.split(/\r?\n/).filter((l) => l.startsWith("data:")).map((l) => l.slice(5).trim()).join("");
      if (data) {
        const candidate = JSON.parse(data);
        if (candidate.id === body.id) message = candidate;
      }
    }
  } else if (text) {
    try { message = JSON.parse(text); } catch { /* below */ }
  }
  if (!response.ok && !message) throw new Error(`HTTP ${response.status}: ${text.slice(0, 300)}`);
  if (!message) throw new Error(`no answer to ${method}`);
  if (message.error) throw new Error(message.error.message || json(message.error));
  return message.result;
}

async function toolSchema(name) {
  if (!state.tools) state.tools = (await mcp("tools/list", {})).tools;
  const tool = state.tools.find((t) => t.name === name);
  return tool ? tool.inputSchema : null;
}

// MCP's x-mcp-header: an argument a tool marks travels in an Mcp-Param-* header too
// (a sharded server's proxy routes on it), encoded as the MCP SDKs encode it.
function paramHeaders(schema, args) {
  const out = {};
  for (const [key, prop] of Object.entries((schema && schema.properties) || {})) {
    const token = prop["x-mcp-header"];
    const value = args ? args[key] : undefined;
    if (typeof token !== "string" || value === undefined || value === null) continue;
    if (!["string", "number", "boolean"].includes(typeof value)) continue;
    const text = String(value);
    const plain = /^[\x20-\x7e]*$/.test(text) && text === text.trim() && !/^=\?base64\?.*\?=$/.test(text);
    out[`mcp-param-${token.toLowerCase()}`] = plain ? text : `=?base64?${btoa(String.fromCharCode(...new TextEncoder().encode(text)))}?=`;
  }
  return out;
}

async function api(path) {
  const response = await fetch(`api/${path}`, { headers: TOKEN ? { authorization: `Bearer ${TOKEN}` } : {} });
  const body = await response.json();
  if (!response.ok) throw new Error(body.error || `HTTP ${response.status}`);
  return body;
}

const resultText = (result) => (result.content || []).filter((c) => c.type === "text").map((c) => c.text).join("\n");
const resultImage = (result) => (result.content || []).find((c) => c.type === "image");

// -- state ----------------------------------------------------------------------------------

const state = {
  info: null, spec: null, agent: false, tools: [],
  episode: null, busy: false, pending: null, step: 0,
  frames: [],            // this tab's own frames and steps, for the replay tab
  watchSource: null, watched: [],
  seatRun: 0,            // a server of seats: which of this tab's games the turn loop follows
};

function setStatus(text) { $("status").textContent = text; }

// -- tabs -------------------------------------------------------------------------------------

function showTab(name) {
  for (const button of document.querySelectorAll("#tabs button")) {
    button.setAttribute("aria-selected", String(button.dataset.tab === name));
  }
  for (const section of document.querySelectorAll("main > section")) section.hidden = section.id !== name;
  if (name === "watch") refreshEpisodes();
  if (name === "replay") refreshReplays();
  if (name === "play") $("play-canvas").focus();
}

// -- play -------------------------------------------------------------------------------------

const KEY_PARTS = { ArrowUp: "UP", ArrowDown: "DOWN", ArrowLeft: "LEFT", ArrowRight: "RIGHT", " ": "FIRE" };
const held = new Set();
const tapped = new Set();   // pressed since the last real-time step (a tap between two steps counts)

// The spec's options are a schema's properties (one per option), not a schema.
function optionsSchema(spec) {
  return { type: "object", properties: spec.options || {} };
}

function legalNames() {
  const actions = state.spec.action_set;
  return actions ? actions.map((a) => a.name) : [];
}

// The action the held keys make, as ALE names them (UP/DOWN, then RIGHT/LEFT, then FIRE),
// if that action is legal here; else the legal action with the most of them.
function actionForKeys() {
  const parts = ["UP", "DOWN", "RIGHT", "LEFT", "FIRE"].filter((p) => held.has(p) || tapped.has(p));
  if (!parts.length) return null;
  const legal = new Set(legalNames());
  const whole = parts.join("");
  if (legal.has(whole)) return whole;
  let best = null, bestCount = 0;
  for (const name of legal) {
    const count = parts.filter((p) => name.includes(p)).length;
    const extra = name.replace(/UP|DOWN|RIGHT|LEFT|FIRE/g, "").length;
    if (count > bestCount && !extra && ["UP", "DOWN", "RIGHT", "LEFT", "FIRE"].filter((p) => name.includes(p)).every((p) => parts.includes(p))) {
      best = name; bestCount = count;
    }
  }
  return best;
}

function buildPlay() {
  const spec = state.spec;
  const actions = $("play-actions");
  actions.replaceChildren();
  for (const a of spec.action_set || []) {
    actions.append(el("button", { type: "button", textContent: a.name, title: a.meaning || a.name, dataset: { action: a.name }, onclick: () => act(a.name) }));
  }
  if (!spec.action_set) {
    const input = el("input", { id: "play-action-json", placeholder: "action as JSON, e.g. [0.5, -1]", size: 32 });
    actions.append(input, el("button", { type: "button", textContent: "Step", onclick: () => act(JSON.parse(input.value)) }));
  }
  const names = legalNames();
  const keys = Object.entries(KEY_PARTS).filter(([, p]) => names.some((n) => n.includes(p))).map(([k, p]) => `${k === " " ? "Space" : k.replace("Arrow", "")} = ${p}`);
  $("play-keys").textContent = spec.action_set
    ? (keys.length ? `Keys: ${keys.join(", ")} (combine them where the game allows); ` : "") + "digits 0-9 pick actions by number; Enter resets."
    : "";
  const options = $("reset-options");
  options.replaceChildren();
  const schema = optionsSchema(spec);
  if (schema && schema.properties && Object.keys(schema.properties).length) {
    options.append(formFor(schema, "reset-opt"));
  }
}

async function resetEpisode(event) {
  if (event) event.preventDefault();
  const args = { frames: "png" };
  if (state.agent) delete args.frames;
  const seed = $("reset-seed").value.trim();
  if (seed !== "") args.seed = Number(seed);
  const schema = optionsSchema(state.spec);
  if (schema && schema.properties && Object.keys(schema.properties).length) {
    const options = readForm($("reset-options").firstElementChild, schema);
    if (options && Object.keys(options).length) args.options = options;
  }
  if (seats()) {
    // A new game, this tab holding its first seat (the others open for others to join).
    if (!state.spec.has_frame) delete args.frames;
    await seatPlay("reset", args, "new game");
    return;
  }
  if (state.episode) args.episode_id = state.episode;
  await call("reset", args, "reset");
}

async function act(action) {
  if (!state.episode) return;
  if (seats()) {
    if (state.busy || !state.yourTurn) return;
    seatButtons([]);  // one move a turn: the buttons come back with the next turn
    const args = { action, seat: state.episode, wait: true };
    if (state.spec.has_frame && !state.agent) args.frames = "png";
    await seatPlay("step", args, state.actionNames.get(action) || String(action));
    return;
  }
  if (state.busy) { state.pending = action; return; }
  const args = { action, episode_id: state.episode };
  if (!state.agent) args.frames = "png";
  await call("step", args, typeof action === "string" ? action : JSON.stringify(action));
}

// One tool call of the Play tab: its answer shown; its structured view (null on an error).
async function call(tool, args, label, quiet = false) {
  state.busy = true;
  $("play-error").textContent = "";
  let view = null;
  const run = state.seatRun;
  const stale = () => seats() && run !== state.seatRun;  // this tab moved on to another seat
  try {
    const result = await mcp("tools/call", { name: tool, arguments: args });
    if (stale()) return null;
    if (result.isError) {
      $("play-error").textContent = resultText(result);
      addHistory(`${label}: ${resultText(result)}`, true);
    } else {
      show(result, tool, label, quiet);
      view = result.structuredContent || {};
    }
  } catch (err) {
    if (!stale()) $("play-error").textContent = String(err.message || err);
  } finally {
    if (!stale()) state.busy = false;
  }
  if (seats()) return view;
  if (state.pending !== null) {
    const next = state.pending;
    state.pending = null;
    await act(next);
  }
  return view;
}

// -- seats (serve --seats): this tab takes a seat of a game ---------------------------------
// The seat's handle lives in this page only (never in its URL: a game's id is what
// another player joins with, and it reaches no seat).

const seats = () => Boolean(state.info && state.info.seats);

function buildSeats() {
  $("seat-box").hidden = false;
  $("reset-button").textContent = "New game";
  $("join-button").onclick = joinSeat;
  const table = new URLSearchParams(location.search).get("table");
  if (table) $("join-table").value = table;
  state.actionNames = new Map();
  state.yourTurn = false;
  seatButtons([]);
}

async function joinSeat() {
  const args = {};
  const table = $("join-table").value.trim();
  if (table) args.table_id = table;
  await seatPlay("join", args, "join");
}

// A call that takes or moves this tab's seat, then the turns: while it is another's turn,
// look again waiting for this seat's (each look bounded by the server's turn timeout);
// once the game is over, one more step hears this seat's end (its final reward).
async function seatPlay(tool, args, label) {
  const run = ++state.seatRun;
  let view = await call(tool, args, label);
  let told = false;
  while (view && run === state.seatRun && state.episode) {
    const info = view.info || {};
    if (view.terminated || view.truncated || view.status === "ended" || (told && !info.your_turn)) break;
    const frames = state.spec.has_frame && !state.agent ? { frames: "png" } : {};
    if (!(info.to_move || []).length) {
      told = true;  // the game is over: a step of a finished seat plays nothing and tells its end
      view = await call("step", { action: 0, seat: state.episode, wait: false, ...frames }, "the end");
    } else if (info.your_turn) {
      break;  // the buttons wait for this seat's move
    } else {
      view = await call("state", { seat: state.episode, wait: true, ...frames }, "waiting", true);
    }
  }
}

function seatView(view) {
  const info = view.info || {};
  const toMove = info.to_move || [];
  const over = !toMove.length || view.terminated || view.truncated;
  state.yourTurn = Boolean(info.your_turn) && !over;
  $("stat-seat").textContent = info.seat || "-";
  $("stat-turn").textContent = over ? "nobody: the game is over" : state.yourTurn ? `you (${info.seat})` : toMove.join(" and ");
  if (view.table_id) {
    state.table = view.table_id;
    $("stat-table").textContent = view.table_id;
    const link = new URL(location.href);
    link.search = `?table=${encodeURIComponent(view.table_id)}`;
    $("seat-share").textContent = `Another player joins this game at ${link.href}`;
  }
  if (view.open_seats) $("stat-open").textContent = view.open_seats.join(", ") || "none";
  const names = info.legal_action_names || [];
  const legal = (info.legal_actions || []).map((id, i) => [id, names[i] ?? String(id)]);
  for (const [id, name] of legal) state.actionNames.set(id, name);
  seatButtons(state.yourTurn ? legal : [], over ? "The game is over." : state.yourTurn ? "" : `Waiting for ${toMove.join(" and ")}…`);
  $("seat-box").dataset.seat = over ? "over" : state.yourTurn ? "your-turn" : "waiting";
  if (state.yourTurn) $("seat-box").dataset.turns = String(Number($("seat-box").dataset.turns || 0) + 1);
}

// The legal actions of this seat's turn as buttons (none while it is another's turn).
function seatButtons(legal, note = "") {
  const actions = $("play-actions");
  actions.replaceChildren();
  for (const [id, name] of legal) {
    actions.append(el("button", { type: "button", textContent: name, title: `action ${id}`, dataset: { action: String(id), name }, onclick: () => act(id) }));
  }
  if (note) actions.append(el("span", { className: "hint", textContent: note }));
}

function show(result, tool, label, quiet = false) {
  const view = result.structuredContent || {};
  const text = resultText(result);
  if (view.episode_id) state.episode = view.episode_id;
  else if (tool === "reset") {
    // The agent profile answers with text and image only; its reset names the episode.
    const named = text.match(/\b(ep_[A-Za-z0-9_-]{8,})/);
    if (named) state.episode = named[1];
  }
  if (tool === "reset" || tool === "join") { state.frames = []; $("play-history").replaceChildren(); }
  const image = resultImage(result);
  if (image) drawFrame(image);
  const set = (id, v) => { $(id).textContent = v === undefined || v === null ? "-" : num(v); };
  $("stat-episode").textContent = state.episode ? `${state.episode.slice(0, 10)}…` : "-";
  $("stat-episode").title = state.episode || "";
  set("stat-status", view.status);
  set("stat-step", view.step);
  set("stat-reward", view.reward);
  set("stat-return", view.episode_return);
  set("stat-lives", view.info ? view.info.lives : undefined);
  set("stat-terminated", view.terminated);
  set("stat-truncated", view.truncated);
  $("play-summary").textContent = view.summary || text;
  $("play-text").textContent = view.info && view.info.text ? view.info.text : "";
  $("play-text").hidden = !$("play-text").textContent;
  if (quiet) {
    // a look while waiting for a turn: nothing to add to the history
  } else if (tool === "join") {
    addHistory(`join: seat ${view.seat ?? "?"} of ${view.table_id ?? "a game"}`);
  } else if (tool !== "reset") {
    const reward = view.reward !== undefined ? ` → ${num(view.reward)} (return ${num(view.episode_return)})` : "";
    addHistory(`#${view.step ?? "?"} ${label}${reward}${(view.events || []).length ? ": " + view.events.join("; ") : ""}`);
  } else {
    addHistory(`reset: ${view.summary ? view.summary.split(". ")[0] : "new episode"}`);
  }
  state.frames.push({ image: image ? `data:${image.mimeType};base64,${image.data}` : null, step: view.step, label, reward: view.reward, ret: view.episode_return, summary: view.summary || text });
  if (state.frames.length > 5000) state.frames.shift();
  state.ended = view.status ? view.status === "ended" : /Episode over/.test(text);
  if (seats()) { seatView(view); return; }
  for (const b of document.querySelectorAll("#play-actions button")) b.disabled = state.ended;
}

// Real time: the game runs on at the emulator's pace (15 steps a second for Atari v5),
// NOOP where no key is held, as a person plays it; paused where nobody can see it.
const realtime = () => $("realtime").checked;
const REALTIME_MS = 1000 / 15;

function tick() {
  setTimeout(tick, REALTIME_MS);
  if (!realtime() || state.busy || !state.episode || document.hidden || $("play").hidden) return;
  if (state.ended) return;
  const action = actionForKeys() || "NOOP";
  tapped.clear();
  act(action);
}

function addHistory(text, error = false) {
  const list = $("play-history");
  list.prepend(el("li", { textContent: text, className: error ? "error" : "" }));
  while (list.children.length > 300) list.lastChild.remove();
}

function drawFrame(image) {
  const img = new Image();
  img.onload = () => {
    const canvas = $("play-canvas");
    const scale = Math.max(1, Math.floor(480 / Math.min(img.width, img.height)));
    if (canvas.width !== img.width * scale || canvas.height !== img.height * scale) {
      canvas.width = img.width * scale;
      canvas.height = img.height * scale;
    }
    const ctx = canvas.getContext("2d");
    ctx.imageSmoothingEnabled = false;
    ctx.drawImage(img, 0, 0, canvas.width, canvas.height);
    canvas.dataset.frames = String(Number(canvas.dataset.frames || 0) + 1);
  };
  img.src = `data:${image.mimeType};base64,${image.data}`;
}

function onKey(event, down) {
  if ($("play").hidden || (event.target.closest && event.target.closest("input, select, textarea"))) return;
  if (event.key === "Enter" && down) { event.preventDefault(); resetEpisode(); return; }
  const part = KEY_PARTS[event.key];
  if (part) {
    event.preventDefault();
    if (down) { held.add(part); tapped.add(part); } else held.delete(part);
    for (const b of document.querySelectorAll("#play-actions button")) b.classList.toggle("pressed", b.dataset.action === actionForKeys());
    if (down && !realtime()) { const action = actionForKeys(); tapped.clear(); if (action) act(action); }
    return;
  }
  if (down && /^[0-9]$/.test(event.key) && state.spec.action_set) {
    const a = state.spec.action_set[Number(event.key)];
    if (a) act(a.name);
  }
}

// -- forms from JSON Schema (the Play tab's options, the Inspect tab's tools) ---------------

function unwrap(schema) {
  // Optional fields are anyOf [X, null]: the form shows X, left empty means "not given".
  const options = schema.anyOf || schema.oneOf;
  if (options) {
    const real = options.filter((s) => s.type !== "null");
    if (real.length === 1) return { ...real[0], description: schema.description || real[0].description, default: schema.default };
    // An action by number or by name: offer the names.
    const named = real.find((s) => s.enum);
    if (named) return { ...named, description: schema.description || named.description, default: schema.default };
  }
  return schema;
}

function formFor(schema, path) {
  const box = el("fieldset", { dataset: { path } });
  for (const [name, raw] of Object.entries(schema.properties || {})) {
    box.append(fieldFor(name, unwrap(raw), `${path}.${name}`, (schema.required || []).includes(name)));
  }
  return box;
}

function fieldFor(name, schema, path, required) {
  const title = `${name}${required ? " *" : ""}`;
  const help = schema.description || "";
  const label = el("label", { title: help }, el("span", { className: "name", textContent: title }));
  let input;
  const type = Array.isArray(schema.type) ? schema.type.find((t) => t !== "null") : schema.type;
  if (schema.enum) {
    input = el("select", {}, el("option", { value: "", textContent: "(not given)" }));
    for (const v of schema.enum) input.append(el("option", { value: JSON.stringify(v), textContent: String(v) }));
    if (schema.default !== undefined && schema.default !== null) input.value = JSON.stringify(schema.default);
    input.dataset.kind = "enum";
  } else if (type === "integer" || type === "number") {
    input = el("input", { type: "number", step: type === "integer" ? "1" : "any" });
    if (schema.minimum !== undefined) input.min = schema.minimum;
    if (schema.maximum !== undefined) input.max = schema.maximum;
    if (schema.default !== undefined && schema.default !== null) input.value = schema.default;
    input.dataset.kind = type;
  } else if (type === "boolean") {
    input = el("select", {}, el("option", { value: "", textContent: "(not given)" }), el("option", { value: "true", textContent: "true" }), el("option", { value: "false", textContent: "false" }));
    if (typeof schema.default === "boolean") input.value = String(schema.default);
    input.dataset.kind = "boolean";
  } else if (type === "object" && schema.properties) {
    const box = formFor(schema, path);
    box.prepend(el("legend", { textContent: title, title: help }));
    box.dataset.kind = "object";
    box.dataset.name = name;
    return box;
  } else if (type === "array" && schema.items && !Array.isArray(schema.items)) {
    return arrayField(name, unwrap(schema.items), path, title, help);
  } else if (type === "string") {
    input = el("input", { type: "text", size: 30 });
    if (name === "episode_id") { input.setAttribute("list", "my-episodes"); input.value = state.episode || ""; }
    if (typeof schema.default === "string") input.value = schema.default;
    input.dataset.kind = "string";
  } else {
    input = el("textarea", { placeholder: "JSON" });
    if (schema.default !== undefined && schema.default !== null) input.value = JSON.stringify(schema.default);
    input.dataset.kind = "json";
  }
  input.name = name;
  input.dataset.field = "1";
  label.append(input);
  return label;
}

function arrayField(name, items, path, title, help) {
  const box = el("fieldset", { dataset: { kind: "array", name } }, el("legend", { textContent: title, title: help }));
  const list = el("div", { className: "items" });
  const add = el("button", {
    type: "button", textContent: "+ item",
    onclick: () => {
      const item = el("div", { className: "item" }, fieldFor(`${list.children.length}`, items, `${path}[]`, false));
      item.append(el("button", { type: "button", textContent: "remove", onclick: () => item.remove() }));
      list.append(item);
    },
  });
  box.append(list, add);
  return box;
}

function readValue(node) {
  const kind = node.dataset.kind;
  const v = node.value;
  if (v === "" || v === undefined) return undefined;
  if (kind === "enum") return JSON.parse(v);
  if (kind === "integer" || kind === "number") return Number(v);
  if (kind === "boolean") return v === "true";
  if (kind === "json") return JSON.parse(v);
  return v;
}

// The object a form says: only the fields given (empty ones are left out).
function readForm(box) {
  const out = {};
  for (const child of box.children) {
    if (child.tagName === "LABEL") {
      const input = child.querySelector("[data-field]");
      const v = readValue(input);
      if (v !== undefined) out[input.name] = v;
    } else if (child.dataset.kind === "object") {
      const v = readForm(child);
      if (Object.keys(v).length) out[child.dataset.name] = v;
    } else if (child.dataset.kind === "array") {
      const values = [];
      for (const item of child.querySelector(".items").children) {
        const first = item.firstElementChild;
        if (first.tagName === "LABEL") {
          const v = readValue(first.querySelector("[data-field]"));
          if (v !== undefined) values.push(v);
        } else values.push(readForm(first));
      }
      if (values.length) out[child.dataset.name] = values;
    }
  }
  return out;
}

// -- inspect ------------------------------------------------------------------------------------

async function buildInspect() {
  const result = await mcp("tools/list", {});
  state.tools = result.tools;
  const list = $("tool-list");
  list.replaceChildren();
  for (const tool of state.tools) {
    const item = el("li", { dataset: { tool: tool.name } }, el("strong", { textContent: tool.name }), " ", el("small", { textContent: (tool.description || "").split(". ")[0] }));
    item.onclick = () => selectTool(tool.name);
    list.append(item);
  }
}

function selectTool(name) {
  const tool = state.tools.find((t) => t.name === name);
  for (const li of document.querySelectorAll("#tool-list li")) li.classList.toggle("selected", li.dataset.tool === name);
  $("tool-view").hidden = false;
  $("tool-name").textContent = tool.name;
  $("tool-description").textContent = tool.description || "";
  const form = $("tool-form");
  form.replaceChildren(formFor(tool.inputSchema || { properties: {} }, "tool"));
  form.dataset.tool = name;
  $("tool-result").replaceChildren();
  $("tool-snippet").textContent = "";
}

function toolArgs() {
  return readForm($("tool-form").firstElementChild);
}

async function callTool() {
  const name = $("tool-form").dataset.tool;
  const out = $("tool-result");
  out.replaceChildren(el("p", { textContent: "calling…" }));
  try {
    const result = await mcp("tools/call", { name, arguments: toolArgs() });
    out.replaceChildren(...renderResult(result));
    const view = result.structuredContent;
    if (name === "reset" && view && view.episode_id) rememberEpisode(view.episode_id);
  } catch (err) {
    out.replaceChildren(el("p", { className: "result-error", textContent: String(err.message || err) }));
  }
}

function rememberEpisode(id) {
  let list = $("my-episodes");
  if (!list) { list = el("datalist", { id: "my-episodes" }); document.body.append(list); }
  if (![...list.children].some((o) => o.value === id)) list.append(el("option", { value: id }));
}

function renderResult(result) {
  const parts = [];
  if (result.isError) parts.push(el("p", { className: "result-error", textContent: "The tool answered with an error:" }));
  for (const c of result.content || []) {
    if (c.type === "image") parts.push(el("img", { src: `data:${c.mimeType};base64,${c.data}`, alt: "image content" }));
    else if (c.type === "text") parts.push(el("pre", { className: result.isError ? "result-error" : "", textContent: c.text }));
    else parts.push(el("pre", { textContent: json(c) }));
  }
  if (result.structuredContent) parts.push(el("h3", { textContent: "structuredContent" }), el("pre", { textContent: json(result.structuredContent) }));
  return parts;
}

function pyValue(v) {
  if (v === null || v === undefined) return "None";
  if (v === true) return "True";
  if (v === false) return "False";
  if (typeof v === "number") return String(v);
  if (typeof v === "string") return JSON.stringify(v);
  if (Array.isArray(v)) return `[${v.map(pyValue).join(", ")}]`;
  return `{${Object.entries(v).map(([k, x]) => `${JSON.stringify(k)}: ${pyValue(x)}`).join(", ")}}`;
}

function pythonSnippet(name, args) {
  const url = new URL("../mcp", location.href).href;
  const headers = TOKEN ? ', headers={"Authorization": "Bearer <token>"}' : "";
  const rest = Object.entries(args).filter(([k]) => k !== "episode_id" && k !== "frames");
  const kw = rest.map(([k, v]) => `${k}=${pyValue(v)}`).join(", ");
  let line;
  if (name === "reset") line = `obs, info = env.reset(${kw})`;
  else if (name === "step" && args.action !== undefined) line = `obs, reward, terminated, truncated, info = env.step(${pyValue(args.action)})`;
  else if (name === "state") line = "obs, info = env.state()";
  else line = `result = env.call(${JSON.stringify(name)}${kw ? ", " + kw : ""})`;
  const setup = name === "reset" ? "" : "    env.reset()\n";
  return `from openenv_mcp.client import MCPEnvClient\n\nwith MCPEnvClient(${JSON.stringify(url)}${headers}).sync() as env:\n${setup}    ${line}\n`;
}

function jsonSnippet(name, args) {
  const body = rpcBody("tools/call", { name, arguments: args });
  const headers = [`POST ${new URL("../mcp", location.href).pathname}`, "Content-Type: application/json", `MCP-Protocol-Version: ${PROTOCOL}`, "Mcp-Method: tools/call", `Mcp-Name: ${name}`];
  if (TOKEN) headers.push("Authorization: Bearer <token>");
  return `${headers.join("\n")}\n\n${json(body)}\n`;
}

async function copy(kind) {
  const name = $("tool-form").dataset.tool;
  let args;
  try { args = toolArgs(); } catch (err) { $("tool-snippet").textContent = String(err); return; }
  const text = kind === "python" ? pythonSnippet(name, args) : jsonSnippet(name, args);
  $("tool-snippet").textContent = text;
  try { await navigator.clipboard.writeText(text); setStatus("copied"); } catch { setStatus("select the text to copy it"); }
}

// -- watch ------------------------------------------------------------------------------------

let watchTimer = null;
let watching = null;

async function refreshEpisodes() {
  clearTimeout(watchTimer);
  if ($("watch").hidden) return;
  try {
    const { episodes } = await api("episodes");
    const body = document.querySelector("#episodes tbody");
    body.replaceChildren();
    const seated = seats();
    for (const th of document.querySelectorAll("#episodes .seat-col")) th.hidden = !seated;
    if (seated) {
      // The seats of one game together, in the order the games first appear.
      const order = new Map();
      episodes.forEach((e) => { if (!order.has(e.game)) order.set(e.game, order.size); });
      episodes.sort((a, b) => order.get(a.game) - order.get(b.game));
    }
    for (const e of episodes) {
      const row = el("tr", { dataset: { watch: e.watch_id }, className: e.watch_id === watching ? "selected" : "" });
      const cells = seated ? [e.watch_id, e.game ?? "-", e.seat ?? "-"] : [e.watch_id];
      for (const v of [...cells, e.status, e.step, e.episode_return, e.lives ?? "-", e.calls, e.watchers]) row.append(el("td", { textContent: num(v) }));
      row.onclick = () => watch(e.watch_id);
      body.append(row);
    }
  } catch (err) {
    setStatus(String(err.message || err));
  }
  watchTimer = setTimeout(refreshEpisodes, 1000);
}

function watch(watchId) {
  if (state.watchSource) state.watchSource.close();
  watching = watchId;
  $("watch-view").hidden = false;
  $("watch-id").textContent = watchId;
  $("watch-calls").replaceChildren();
  $("watch-frame").removeAttribute("src");
  state.watched = [];
  const source = new EventSource(`api/episodes/${encodeURIComponent(watchId)}/events`);
  state.watchSource = source;
  source.addEventListener("hello", (e) => {
    const { episode, history } = JSON.parse(e.data);
    showWatched(episode);
    history.forEach(addCall);
  });
  source.addEventListener("calls", (e) => {
    const { events, dropped } = JSON.parse(e.data);
    events.forEach(addCall);
    $("watch-dropped").textContent = dropped ? `(${dropped} not shown: too many to follow)` : "";
  });
  source.addEventListener("frame", (e) => {
    const { image, step } = JSON.parse(e.data);
    $("watch-frame").src = image;
    $("watch-frame").dataset.step = step;
    state.watched.push({ image, step, label: "", summary: $("watch-summary").textContent });
    if (state.watched.length > 2000) state.watched.shift();
  });
  source.addEventListener("closed", (e) => {
    showWatched(JSON.parse(e.data).episode);
    source.close();
  });
  source.onerror = () => { if (source.readyState === EventSource.CLOSED) setStatus("the watch feed closed"); };
}

function showWatched(e) {
  $("watch-status").textContent = e.status;
  $("watch-step").textContent = num(e.step);
  $("watch-return").textContent = num(e.episode_return);
  $("watch-lives").textContent = e.lives ?? "-";
  $("watch-summary").textContent = e.summary || "";
}

function addCall(ev) {
  if (ev.step !== undefined) {
    $("watch-status").textContent = ev.status;
    $("watch-step").textContent = num(ev.step);
    $("watch-return").textContent = num(ev.episode_return);
    if (ev.info && ev.info.lives !== undefined) $("watch-lives").textContent = ev.info.lives;
    if (ev.summary) $("watch-summary").textContent = ev.summary;
  } else if (ev.status) {
    $("watch-status").textContent = ev.status;
  }
  const args = Object.keys(ev.arguments || {}).length ? JSON.stringify(ev.arguments) : "";
  const rewards = ev.rewards ? ` ${JSON.stringify(ev.rewards)}` : "";
  const outcome = ev.error ? ev.error : ev.result !== undefined ? String(ev.result) : ev.step !== undefined ? `step ${ev.step}, reward ${num(ev.reward)}${rewards}, return ${num(ev.episode_return)}${(ev.events || []).length ? "; " + ev.events.join("; ") : ""}` : ev.status || "";
  const list = $("watch-calls");
  list.prepend(el("li", { className: ev.error ? "error" : "", textContent: `${ev.tool}(${args}) → ${outcome}` }));
  while (list.children.length > 300) list.lastChild.remove();
}

// -- replay -----------------------------------------------------------------------------------

let replay = null;   // {frames: [{image|url, text}], title}
let replayTimer = null;

async function refreshReplays() {
  const list = $("replay-list");
  list.replaceChildren();
  const mine = el("li", { dataset: { replay: "tab" } }, el("strong", { textContent: "This tab's episode" }), " ", el("small", { textContent: `${state.frames.length} frames, kept in this page` }));
  mine.onclick = () => openReplay({ title: "This tab's episode", frames: state.frames.map((f) => ({ image: f.image, text: `step ${f.step ?? 0}: ${f.label} → reward ${num(f.reward ?? 0)}, return ${num(f.ret ?? 0)}\n${f.summary || ""}` })) });
  list.append(mine);
  if (state.watched.length) {
    const w = el("li", { dataset: { replay: "watched" } }, el("strong", { textContent: "The watched episode" }), " ", el("small", { textContent: `${state.watched.length} frames seen` }));
    w.onclick = () => openReplay({ title: `Watched ${watching}`, frames: state.watched.map((f) => ({ image: f.image, text: `step ${f.step}` })) });
    list.append(w);
  }
  if (!state.info.recording) {
    $("replay-source").textContent = "This server records nothing (serve it with --record DIR to replay every episode); below, episodes this page has seen.";
    return;
  }
  $("replay-source").textContent = "Recorded episodes (newest first), and the episodes this page has seen.";
  try {
    const { recordings } = await api("recordings");
    for (const r of recordings) {
      const item = el("li", { dataset: { replay: r.id } }, el("strong", { textContent: `${r.title || r.env} seed ${r.seed ?? "-"}` }), " ", el("small", { textContent: `${r.steps} steps, return ${num(r.episode_return)}, ${r.status}` }));
      item.onclick = () => openRecording(r);
      list.append(item);
    }
  } catch (err) {
    setStatus(String(err.message || err));
  }
}

async function openRecording(r) {
  const rec = await api(`recordings/${r.id}`);
  const frames = [];
  for (let i = 0; i < rec.frames; i++) {
    const s = i > 0 ? rec.steps[i - 1] : null;
    const text = s ? `step ${s.step}: ${typeof s.action === "string" ? s.action : JSON.stringify(s.action)} → reward ${num(s.reward)}, return ${num(s.episode_return)}${s.rewards ? " " + JSON.stringify(s.rewards) : ""}${s.terminated ? " (terminated)" : ""}${s.truncated ? " (truncated)" : ""}` : `start (seed ${rec.seed ?? "none"})`;
    frames.push({ url: `api/recordings/${r.id}/frames/${i}`, text });
  }
  if (!frames.length) {
    for (const s of rec.steps) frames.push({ url: null, text: `step ${s.step}: ${JSON.stringify(s.action)} → reward ${num(s.reward)}` });
  }
  openReplay({ title: `${rec.title || rec.env}, seed ${rec.seed ?? "none"} (${rec.status})`, frames });
}

function openReplay(r) {
  replay = r;
  $("replay-view").hidden = false;
  $("replay-title").textContent = r.title;
  const scrubber = $("replay-scrubber");
  scrubber.max = String(Math.max(0, r.frames.length - 1));
  scrubber.value = "0";
  seek(0);
}

async function seek(i) {
  if (!replay || !replay.frames.length) { $("replay-step").textContent = "nothing to replay yet"; return; }
  const f = replay.frames[i];
  $("replay-scrubber").value = String(i);
  $("replay-position").textContent = `${i} / ${replay.frames.length - 1}`;
  $("replay-step").textContent = f.text;
  const src = f.image || f.url;
  if (src) { $("replay-frame").src = src; $("replay-frame").dataset.index = String(i); }
}

function togglePlay() {
  if (replayTimer) { clearInterval(replayTimer); replayTimer = null; $("replay-play").textContent = "Play"; return; }
  $("replay-play").textContent = "Pause";
  replayTimer = setInterval(() => {
    const i = Number($("replay-scrubber").value) + 1;
    if (!replay || i >= replay.frames.length) { togglePlay(); return; }
    seek(i);
  }, 1000 / 15);
}

// -- start ------------------------------------------------------------------------------------

async function main() {
  for (const b of document.querySelectorAll("#tabs button")) b.onclick = () => showTab(b.dataset.tab);
  $("reset-form").onsubmit = resetEpisode;
  $("tool-call").onclick = callTool;
  $("copy-python").onclick = () => copy("python");
  $("copy-json").onclick = () => copy("json");
  $("replay-scrubber").oninput = (e) => seek(Number(e.target.value));
  $("replay-prev").onclick = () => seek(Math.max(0, Number($("replay-scrubber").value) - 1));
  $("replay-next").onclick = () => seek(Math.min(replay ? replay.frames.length - 1 : 0, Number($("replay-scrubber").value) + 1));
  $("replay-play").onclick = togglePlay;
  document.addEventListener("keydown", (e) => onKey(e, true));
  document.addEventListener("keyup", (e) => onKey(e, false));
  try {
    state.info = await api("info");
    state.spec = state.info.spec;
    state.agent = state.spec.settings.profile === "agent";
    $("server-name").textContent = `${state.info.server} ${state.info.version}`;
    document.body.dataset.env = state.spec.name;
    buildPlay();
    $("play-canvas").hidden = !state.spec.has_frame;
    const realtimeOk = state.spec.has_frame && legalNames().includes("NOOP");
    $("realtime-box").hidden = !realtimeOk;
    $("realtime").checked = realtimeOk && new URLSearchParams(location.search).get("realtime") !== "0";
    tick();
    await buildInspect();
    if (seats()) {
      // A seat is taken when asked (or at once where the link names a game to join).
      buildSeats();
      document.body.dataset.ready = "1";
      setStatus("ready");
      if ($("join-table").value) await joinSeat();
      return;
    }
    await resetEpisode();
    document.body.dataset.ready = "1";
    setStatus("ready");
    $("play-canvas").focus();
  } catch (err) {
    $("play-error").textContent = `could not start: ${err.message || err}`;
    setStatus("error");
  }
}

main();
