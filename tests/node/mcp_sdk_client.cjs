#!/usr/bin/env node
// Drive an MCP server with the official TypeScript SDK (@modelcontextprotocol/sdk v1).
// Usage:
//   node mcp_sdk_client.cjs --stdio -- CMD [ARGS...]   < ops.json
//   node mcp_sdk_client.cjs --http URL                  < ops.json
// ops.json: [{"method":"tools/list"},
//            {"method":"tools/call","name":"add","arguments":{"a":1,"b":2}},
//            {"method":"resources/list"}, {"method":"resources/templates/list"},
//            {"method":"resources/read","uri":"res://x"},
//            {"method":"prompts/list"}, {"method":"prompts/get","name":"p","arguments":{}}]
// Prints ONE JSON object on stdout: {"serverInfo", "protocolVersion", "capabilities", "results":[...]}
// each result is {"ok":true,"result":...} or {"ok":false,"error":{"code","message"}}.
// Module resolution: run with NODE_PATH=<cache>/node_modules (CommonJS honours NODE_PATH).
"use strict";
const { Client } = require("@modelcontextprotocol/sdk/client/index.js");
const { StdioClientTransport } = require("@modelcontextprotocol/sdk/client/stdio.js");
const { StreamableHTTPClientTransport } = require("@modelcontextprotocol/sdk/client/streamableHttp.js");

function readStdin() {
  return new Promise((resolve, reject) => {
    let buf = "";
    process.stdin.setEncoding("utf8");
    process.stdin.on("data", (c) => (buf += c));
    process.stdin.on("end", () => resolve(buf));
    process.stdin.on("error", reject);
  });
}

async function main() {
  const argv = process.argv.slice(2);
  let transport;
  if (argv[0] === "--http") {
    transport = new StreamableHTTPClientTransport(new URL(argv[1]));
  } else if (argv[0] === "--stdio") {
    const rest = argv[1] === "--" ? argv.slice(2) : argv.slice(1);
    // Unlike the SDK default (HOME/LOGNAME/PATH/SHELL/TERM/USER only), pass the full env.
    transport = new StdioClientTransport({ command: rest[0], args: rest.slice(1), env: { ...process.env }, stderr: "inherit" });
  } else {
    throw new Error("usage: --stdio -- CMD ARGS... | --http URL  (ops JSON on stdin)");
  }
  const ops = JSON.parse((await readStdin()) || "[]");
  const client = new Client({ name: "openenv-mcp-sdk-probe", version: "0.0.0" });
  await client.connect(transport);
  const out = {
    serverInfo: client.getServerVersion(),
    capabilities: client.getServerCapabilities(),
    protocolVersion: transport.protocolVersion ?? null,
    results: [],
  };
  for (const op of ops) {
    try {
      let r;
      switch (op.method) {
        case "tools/list": r = await client.listTools(); break;
        case "tools/call": r = await client.callTool({ name: op.name, arguments: op.arguments ?? {} }); break;
        case "resources/list": r = await client.listResources(); break;
        case "resources/templates/list": r = await client.listResourceTemplates(); break;
        case "resources/read": r = await client.readResource({ uri: op.uri }); break;
        case "prompts/list": r = await client.listPrompts(); break;
        case "prompts/get": r = await client.getPrompt({ name: op.name, arguments: op.arguments ?? {} }); break;
        case "ping": r = await client.ping(); break;
        default: throw new Error("unsupported method " + op.method);
      }
      out.results.push({ ok: true, result: r });
    } catch (e) {
      out.results.push({ ok: false, error: { code: e.code ?? null, message: String(e.message ?? e) } });
    }
  }
  await client.close();
  process.stdout.write(JSON.stringify(out) + "\n");
}

main().catch((e) => {
  process.stderr.write(JSON.stringify({ error: { message: String(e && e.message || e) } }) + "\n");
  process.exit(1);
});
