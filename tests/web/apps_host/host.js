// The MCP Apps test host: renders a tool's ui:// view in a sandboxed iframe and talks to
// it through @modelcontextprotocol/ext-apps' host side (AppBridge over PostMessageTransport),
// as a chat client that supports the extension does. Its MCP server calls go to the page's
// own origin (POST /mcp), where host.py forwards them over real MCP to openenv-mcp.
//
// URL query: ?tool=reset&args={"seed":0}  (the call whose view is shown; reset by default).
// What a test reads: window.appsHost (every server call, every size the view asked for,
// the view's requests); <body data-ready="1"> once the view has the tool's input and result.
// What a test drives, as the chat client would: window.appsHostAgent(name, args) makes
// the model's next tool call itself and pushes its input and result to the view (a model's
// moves, shown live); window.appsHostContext(changes) changes the host's context (its
// theme, its colours) and tells the view.
import {
  AppBridge,
  PostMessageTransport,
  RESOURCE_MIME_TYPE,
  getToolUiResourceUri,
} from "@modelcontextprotocol/ext-apps/app-bridge";

const state = {
  serverCalls: [], // {method, params, from: "host" | "agent" | "view"}
  pushed: [], // the agent's calls pushed to the view: {name, arguments, result}
  sizes: [], // the view's ui/notifications/size-changed params, in order
  sizesAtResult: null, // how many had come when the tool result was sent
  modelContext: [], // ui/update-model-context params
  messages: [], // ui/message params
  logs: [], // notifications/message params from the view
  viewInfo: null,
  resourceMeta: null,
  toolResult: null,
  error: null,
};
window.appsHost = state;

const status = document.getElementById("status");
const say = (text) => {
  status.textContent = text;
};

async function server(method, params, from) {
  state.serverCalls.push({ method, params, from });
  const response = await fetch("/mcp", {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ method, params }),
  });
  const body = await response.json();
  if (!response.ok) throw new Error(`${method}: ${body.error}`);
  return body.result;
}

// The CSP the host enforces on the view: the spec's default (nothing from outside; inline
// script and style, data: images), widened only by the domains the resource declares.
function contentSecurityPolicy(csp) {
  const list = (domains) => (domains && domains.length ? " " + domains.join(" ") : "");
  const resources = list(csp?.resourceDomains);
  return [
    "default-src 'none'",
    `script-src 'self' 'unsafe-inline'${resources}`,
    `style-src 'self' 'unsafe-inline'${resources}`,
    `img-src 'self' data: blob:${resources}`,
    `font-src 'self' data:${resources}`,
    `media-src 'self' data: blob:${resources}`,
    `connect-src 'self'${list(csp?.connectDomains)}`,
    `frame-src${list(csp?.frameDomains) || " 'none'"}`,
    `base-uri${list(csp?.baseUriDomains) || " 'none'"}`,
  ].join("; ");
}

function withCsp(html, policy) {
  const meta = `<meta http-equiv="Content-Security-Policy" content="${policy.replaceAll('"', "&quot;")}">`;
  const head = /<head[^>]*>/i.exec(html);
  if (head) return html.slice(0, head.index + head[0].length) + meta + html.slice(head.index + head[0].length);
  return meta + html;
}

async function main() {
  const query = new URLSearchParams(location.search);
  const toolName = query.get("tool") || "reset";
  const args = JSON.parse(query.get("args") || '{"seed": 0}');

  say(`tools/list`);
  const { tools } = await server("tools/list", {}, "host");
  const tool = tools.find((t) => t.name === toolName);
  if (!tool) throw new Error(`no tool ${toolName}; the server lists ${tools.map((t) => t.name).join(", ")}`);
  const uri = getToolUiResourceUri(tool);
  if (!uri) throw new Error(`tool ${toolName} names no view (_meta.ui.resourceUri)`);

  say(`calling ${toolName}`);
  const result = await server("tools/call", { name: toolName, arguments: args }, "host");
  state.toolResult = result;

  say(`reading ${uri}`);
  const { contents } = await server("resources/read", { uri }, "host");
  const content = contents.find((c) => c.uri === uri) || contents[0];
  if (!content || content.mimeType !== RESOURCE_MIME_TYPE) {
    throw new Error(`${uri} is ${content ? content.mimeType : "empty"}, not ${RESOURCE_MIME_TYPE}`);
  }
  state.resourceMeta = content._meta || null;
  const html = content.text ?? new TextDecoder().decode(Uint8Array.from(atob(content.blob), (c) => c.charCodeAt(0)));

  const iframe = document.createElement("iframe");
  iframe.id = "app";
  iframe.title = `${toolName} view`;
  // An opaque origin: the view can run script but reach nothing of the host's.
  iframe.setAttribute("sandbox", "allow-scripts");
  document.getElementById("frame-box").append(iframe);

  let hostContext = {
    toolInfo: { tool },
    theme: "light",
    displayMode: "inline",
    availableDisplayModes: ["inline"],
    containerDimensions: { maxHeight: 4000, width: 720 },
    platform: "web",
    locale: "en-US",
  };
  const bridge = new AppBridge(
    null,
    { name: "openenv-mcp-test-host", version: "1.0.0" },
    {
      serverTools: {},
      serverResources: {},
      logging: {},
      updateModelContext: { text: {}, image: {} },
      message: { text: {} },
      sandbox: { csp: state.resourceMeta?.ui?.csp || {} },
    },
    { hostContext },
  );
  bridge.oncalltool = (params) => server("tools/call", params, "view");
  bridge.onreadresource = (params) => server("resources/read", params, "view");
  bridge.onlistresources = (params) => server("resources/list", params || {}, "view");
  bridge.onsizechange = ({ width, height }) => {
    state.sizes.push({ width, height });
    if (typeof height === "number" && height > 0) iframe.style.height = `${Math.ceil(height)}px`;
  };
  bridge.onupdatemodelcontext = async (params) => {
    state.modelContext.push(params);
    return {};
  };
  bridge.onmessage = async (params) => {
    state.messages.push(params);
    return {};
  };
  bridge.onopenlink = async () => ({ isError: true });
  bridge.onloggingmessage = (params) => state.logs.push(params);
  bridge.oninitialized = async () => {
    state.viewInfo = bridge.getAppVersion() || {};
    await bridge.sendToolInput({ arguments: args });
    state.sizesAtResult = state.sizes.length;
    await bridge.sendToolResult(result);
    say(`${toolName}: view ${state.viewInfo.name || "?"} initialized; input and result sent`);
    document.body.dataset.ready = "1";
  };

  // The model's own call, as a chat client makes it: to the server, then its input and
  // result to the view that shows the tool (the view calls nothing for it).
  window.appsHostAgent = async (name, callArgs) => {
    const called = tools.find((t) => t.name === name);
    if (!called) throw new Error(`no tool ${name}`);
    const answer = await server("tools/call", { name, arguments: callArgs }, "agent");
    const changes = { ...hostContext, toolInfo: { tool: called } };
    hostContext = changes;
    bridge.setHostContext(changes);
    await bridge.sendToolInput({ arguments: callArgs });
    await bridge.sendToolResult(answer);
    state.pushed.push({ name, arguments: callArgs, result: answer });
    return answer;
  };
  window.appsHostContext = (changes) => {
    hostContext = { ...hostContext, ...changes };
    bridge.setHostContext(hostContext);
    return hostContext;
  };

  await bridge.connect(new PostMessageTransport(iframe.contentWindow, iframe.contentWindow));
  iframe.srcdoc = withCsp(html, contentSecurityPolicy(state.resourceMeta?.ui?.csp));
}

main().catch((error) => {
  state.error = String(error && error.stack ? error.stack : error);
  say(`error: ${error}`);
  console.error("apps host:", error);
});
