#!/usr/bin/env bash
# Install the MCP Tasks requester the suite drives our server with
# (tests/node/ext_tasks_requester.mjs): @modelcontextprotocol/ext-tasks and the
# TypeScript client it needs, @modelcontextprotocol/client 2.x (its peer dependency; the
# 1.x SDK of ensure_node_tools.sh speaks no 2026-07-28), at the exact versions of
# tests/tasks_clients/node/package-lock.json (`npm ci`), into a cache dir outside the
# repo; run under the Node 22 of scripts/ensure_node_tools.sh. Only the npm registry is
# used. Idempotent: a second run with the same lock does no network work. Safe to run
# concurrently (flock).
#
# Usage:   scripts/ensure_ext_tasks.sh [--force]
# Env:     OPENENV_MCP_EXT_TASKS_CACHE   cache dir (default ~/.cache/openenv-mcp/ext-tasks)
# Output:  progress goes to stderr; stdout is KEY=VALUE lines only:
#            NODE=<abs path of the Node 22 binary>
#            EXT_TASKS_VERSION=0.x.y
#            CLIENT_VERSION=2.x.y
#            EXT_TASKS_MODULES=<abs node_modules dir>   (always the last line)
#          The requester imports its packages from EXT_TASKS_MODULES (ES modules do not
#          read NODE_PATH): `EXT_TASKS_MODULES=... "$NODE" tests/node/ext_tasks_requester.mjs`.
set -euo pipefail

HERE="$(cd "$(dirname "$0")" && pwd -P)"
SRC="$(cd "$HERE/../tests/tasks_clients/node" && pwd -P)"
CACHE="${OPENENV_MCP_EXT_TASKS_CACHE:-${HOME:-/root}/.cache/openenv-mcp/ext-tasks}"
FORCE=0
case "${1:-}" in
  --force) FORCE=1 ;;
  "") ;;
  -h|--help) sed -n '2,19p' "$0"; exit 0 ;;
  *) echo "ensure_ext_tasks.sh: unknown argument: $1" >&2; exit 2 ;;
esac

log() { echo "[ensure_ext_tasks] $*" >&2; }

command -v npm >/dev/null 2>&1 || { log "npm not found on PATH"; exit 1; }

# Node 22 (and the npm cache it shares) from the project's own Node set-up.
NODE="$(bash "$HERE/ensure_node_tools.sh" | sed -n 's/^NODE=//p')"
[ -x "$NODE" ] || { log "ensure_node_tools.sh gave no Node binary"; exit 1; }

mkdir -p "$CACHE"
CACHE="$(cd "$CACHE" && pwd -P)"
MODULES="$CACHE/node_modules"
EXT_TASKS_DIR="$MODULES/@modelcontextprotocol/ext-tasks"
CLIENT_DIR="$MODULES/@modelcontextprotocol/client"
STAMP="$CACHE/.installed"

digest() { cat "$@" | sha256sum | cut -d' ' -f1; }
pkg_version() { sed -n 's/^ *"version": *"\([^"]*\)".*/\1/p' "$1/package.json" | head -n1; }

WANT="$(digest "$SRC/package.json" "$SRC/package-lock.json")"

installed_ok() {
  [ -f "$STAMP" ] && [ "$(cat "$STAMP")" = "$WANT" ] &&
    [ -f "$EXT_TASKS_DIR/dist/client/index.js" ] && [ -f "$CLIENT_DIR/package.json" ]
}

install() {
  log "installing the locked packages of $SRC into $CACHE"
  rm -f "$STAMP"
  cp "$SRC/package.json" "$SRC/package-lock.json" "$CACHE/"
  # --ignore-scripts: none of these needs an install script.
  # npm_config_update_notifier=false: no extra registry query.
  (
    cd "$CACHE"
    npm_config_update_notifier=false npm ci \
      --no-audit --no-fund --ignore-scripts --loglevel=error >&2
  )
  [ -f "$EXT_TASKS_DIR/dist/client/index.js" ] || { log "ext-tasks missing after install: $EXT_TASKS_DIR"; exit 1; }
  [ -f "$CLIENT_DIR/package.json" ] || { log "the 2.x client missing after install: $CLIENT_DIR"; exit 1; }
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

echo "NODE=$NODE"
echo "EXT_TASKS_VERSION=$(pkg_version "$EXT_TASKS_DIR")"
echo "CLIENT_VERSION=$(pkg_version "$CLIENT_DIR")"
echo "EXT_TASKS_MODULES=$MODULES"
