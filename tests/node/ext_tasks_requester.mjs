// An MCP Tasks requester on @modelcontextprotocol/ext-tasks (its client entry point,
// createTaskSessionFromClient) over the TypeScript client 2.x, against an openenv-mcp
// server over Streamable HTTP (protocol 2026-07-28). Installed by
// scripts/ensure_ext_tasks.sh; run under its Node 22 with EXT_TASKS_MODULES set:
//
//   EXT_TASKS_MODULES=... node ext_tasks_requester.mjs URL ACTION TOOL ARGS_JSON
//
// ACTION is one of
//   evaluate   call TOOL as a task (preference "require") and settle it: the created
//              task, the result and the seconds from the call to the result;
//   cancel     call TOOL as a task, wait for it to be working, cancel it, then poll
//              (the session's task controller) until the server says "cancelled": the
//              final task and the seconds from the cancel to it;
//   reconnect  call TOOL as a task, hand its reference off and close the connection;
//              a NEW client and session resume it from the reference and settle it;
//   unknown    tasks/get and tasks/cancel (the session's task controller) of the task
//              id ARGS_JSON names, one the server never made: the error of each.
// The answer is one JSON line on stdout; logs go to stderr; the exit code is 0 when
// the action ran (whatever the task's outcome), 1 on a failure, 2 on bad arguments.
//
// ext-tasks needs the host to give it a raw dispatcher for the 2026-07-28 task wire
// (the SDK client's own request() refuses a result of resultType "task"): rawDispatch
// below POSTs one JSON-RPC request with the headers the protocol requires
// (MCP-Protocol-Version, Mcp-Method, Mcp-Name) and reads a JSON or SSE answer.

import { join } from "node:path";
import { pathToFileURL } from "node:url";

const TIMEOUT_MS = 120_000;
const PROTOCOL_VERSION = "2026-07-28";
const CLIENT_INFO = { name: "openenv-mcp-ext-tasks-requester", version: "0.0.0" };
const CLIENT_CAPABILITIES = {};
const NAME_BEARING = { "tools/call": "name", "prompts/get": "name", "resources/read": "uri" };

function fail(code, message) {
  process.stderr.write(`ext_tasks_requester: ${message}\n`);
  process.exit(code);
}

const [url, action, tool, rawArgs] = process.argv.slice(2);
const ACTIONS = ["evaluate", "cancel", "reconnect", "unknown"];
if (!url || !ACTIONS.includes(action) || !tool || rawArgs === undefined) {
  fail(2, `usage: URL {${ACTIONS.join(",")}} TOOL ARGS_JSON; got ${JSON.stringify(process.argv.slice(2))}`);
}
let toolArgs;
try {
  toolArgs = JSON.parse(rawArgs);
} catch (error) {
  fail(2, `ARGS_JSON is not JSON: ${error.message}`);
}
if (toolArgs === null || typeof toolArgs !== "object" || Array.isArray(toolArgs)) {
  fail(2, `ARGS_JSON must be a JSON object, got ${rawArgs}`);
}
const modules = process.env.EXT_TASKS_MODULES;
if (!modules) fail(2, "EXT_TASKS_MODULES is not set (scripts/ensure_ext_tasks.sh prints it)");

// ES modules ignore NODE_PATH: import the installed packages by their files.
const load = (path) => import(pathToFileURL(join(modules, path)).href);
const sdk = await load("@modelcontextprotocol/client/dist/index.mjs");
const tasks = await load("@modelcontextprotocol/ext-tasks/dist/client/index.js");

let nextId = 1;

/** An SSE body's data lines, event by event, parsed as JSON. */
function sseMessages(text) {
  const messages = [];
  for (const event of text.split(/\r?\n\r?\n/)) {
    const data = event
      .split(/\r?\n/)
      .filter((line) => line.startsWith("data:"))
      .map((line) => line.slice(5).trimStart())
      .join("\n");
    if (data) messages.push(JSON.parse(data));
  }
  return messages;
}

/** ext-tasks' RawClientDispatch: one JSON-RPC request POSTed as the 2026-07-28 wire has it. */
async function rawDispatch(request, options = {}) {
  const id = nextId++;
  const headers = new Headers({
    "content-type": "application/json",
    accept: "application/json, text/event-stream",
    "mcp-protocol-version": PROTOCOL_VERSION,
    "mcp-method": request.method,
  });
  const nameKey = NAME_BEARING[request.method];
  if (nameKey && typeof request.params?.[nameKey] === "string") {
    headers.set("mcp-name", request.params[nameKey]);
  }
  for (const [name, value] of Object.entries(options.context?.headers ?? {})) {
    headers.set(name, value);
  }
  const timeout = AbortSignal.timeout(options.context?.requestTimeoutMs ?? TIMEOUT_MS);
  const signal = options.signal ? AbortSignal.any([options.signal, timeout]) : timeout;
  let response;
  try {
    response = await fetch(url, {
      method: "POST",
      headers,
      body: JSON.stringify({ jsonrpc: "2.0", id, ...request }),
      signal,
    });
  } catch (error) {
    throw new tasks.DispatchError(`POST ${request.method} failed: ${error.message}`, true, { cause: error });
  }
  const text = await response.text();
  const type = response.headers.get("content-type") ?? "";
  let messages;
  try {
    messages = type.includes("text/event-stream") ? sseMessages(text) : [JSON.parse(text)];
  } catch (error) {
    throw new tasks.DispatchError(
      `${request.method}: HTTP ${response.status} answered no JSON-RPC (${text.slice(0, 300)})`,
      false,
      { cause: error },
    );
  }
  const reply = messages.find((m) => m && m.id === id);
  if (!reply) {
    throw new tasks.DispatchError(`${request.method}: HTTP ${response.status} carried no answer to request ${id}`);
  }
  if (reply.error) return { kind: "error", error: reply.error };
  return { kind: "result", result: reply.result };
}

const endpointId = await tasks.createTaskSessionEndpointId("openenv-mcp-tests", { url });

/** A connected client (2026-07-28, negotiated) and an ext-tasks session over it. */
async function connect() {
  const client = new sdk.Client(CLIENT_INFO, {
    capabilities: CLIENT_CAPABILITIES,
    versionNegotiation: { mode: "auto" },
  });
  await client.connect(new sdk.StreamableHTTPClientTransport(new URL(url)));
  const era = client.getProtocolEra();
  const extension = client.getServerCapabilities()?.extensions?.["io.modelcontextprotocol/tasks"];
  const session = tasks.createTaskSessionFromClient(client, {
    endpointId,
    rawDispatch,
    v2RequestFraming: {
      protocolVersion: client.getNegotiatedProtocolVersion() ?? PROTOCOL_VERSION,
      clientInfo: CLIENT_INFO,
      clientCapabilities: CLIENT_CAPABILITIES,
    },
    onError: (error) => process.stderr.write(`ext-tasks: ${error?.stack ?? error}\n`),
  });
  return { client, session, era, extension: extension ?? null };
}

async function close({ client, session }) {
  await session.close();
  await client.close();
}

/** A settled outcome as JSON: status, result (completed) or error (failed), last task. */
function outcomeJson(settlement) {
  const { outcome, lastTask } = settlement;
  return {
    status: outcome.status,
    result: outcome.status === "completed" ? outcome.result : null,
    error:
      outcome.status === "failed"
        ? { message: outcome.error.message, code: outcome.error.code ?? null }
        : null,
    lastTask: lastTask ?? null,
  };
}

async function callAsTask(session) {
  const execution = await session.callTool(tool, toolArgs, {
    task: { preference: "require" },
    requestTimeoutMs: TIMEOUT_MS,
  });
  if (execution.kind !== "task") throw new Error(`${tool} was not run as a task`);
  return execution;
}

async function evaluate() {
  const connection = await connect();
  try {
    const began = performance.now();
    const execution = await callAsTask(connection.session);
    const taskId = execution.handle.taskId;
    const settlement = await execution.settle({ signal: AbortSignal.timeout(TIMEOUT_MS) });
    const seconds = (performance.now() - began) / 1000;
    return { era: connection.era, extension: connection.extension, taskId, ...outcomeJson(settlement), seconds };
  } finally {
    await close(connection);
  }
}

async function cancel() {
  const connection = await connect();
  try {
    const execution = await callAsTask(connection.session);
    const taskId = execution.handle.taskId;
    const controller = connection.session.task(taskId);
    const deadline = performance.now() + TIMEOUT_MS;
    let before = await controller.snapshot();
    while (before.status !== "working" && performance.now() < deadline) {
      await new Promise((resolve) => setTimeout(resolve, 50));
      before = await controller.snapshot();
    }
    await new Promise((resolve) => setTimeout(resolve, 1000)); // the work is under way
    before = await controller.snapshot();
    const began = performance.now();
    await execution.cancel(AbortSignal.timeout(TIMEOUT_MS));
    let final = await controller.snapshot();
    while (!["completed", "failed", "cancelled"].includes(final.status) && performance.now() < deadline) {
      await new Promise((resolve) => setTimeout(resolve, 20));
      final = await controller.snapshot();
    }
    const seconds = (performance.now() - began) / 1000;
    const local = await execution.result();
    return {
      era: connection.era,
      extension: connection.extension,
      taskId,
      before,
      final,
      localOutcome: local.status,
      cancel_to_cancelled_s: seconds,
    };
  } finally {
    await close(connection);
  }
}

async function reconnect() {
  const first = await connect();
  let reference;
  try {
    const execution = await callAsTask(first.session);
    await execution.handoff((ref) => {
      reference = JSON.parse(JSON.stringify(ref)); // what a host would persist
    });
    // Handed off: its local driver stops. Wait for that before closing the session,
    // which would otherwise cancel an execution it still tracks.
    await execution.result();
  } finally {
    await close(first);
  }
  const second = await connect();
  try {
    const execution = await second.session.resumeTask(reference, { requestTimeoutMs: TIMEOUT_MS });
    const settlement = await execution.settle({ signal: AbortSignal.timeout(TIMEOUT_MS) });
    return { era: second.era, extension: second.extension, taskId: reference.taskId, reference, ...outcomeJson(settlement) };
  } finally {
    await close(second);
  }
}

async function unknown() {
  const connection = await connect();
  try {
    const controller = connection.session.task(toolArgs.taskId);
    const answer = {};
    for (const [name, request] of [
      ["get", () => controller.snapshot()],
      ["cancel", () => controller.cancel()],
    ]) {
      try {
        await request();
        answer[name] = null;
      } catch (error) {
        answer[name] = { code: error.code ?? null, message: error.message, name: error.name };
      }
    }
    return answer;
  } finally {
    await close(connection);
  }
}

try {
  const answer = await { evaluate, cancel, reconnect, unknown }[action]();
  process.stdout.write(`${JSON.stringify(answer)}\n`);
  process.exit(0);
} catch (error) {
  fail(1, `${action} ${tool}: ${error?.stack ?? error}`);
}
