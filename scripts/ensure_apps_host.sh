#!/usr/bin/env bash
# Build the MCP Apps test host's browser bundle (tests/web/apps_host/): the host side of
# @modelcontextprotocol/ext-apps (its app-bridge: AppBridge, PostMessageTransport) and
# the host's own module, bundled for the browser by esbuild. The npm packages come from
# the npm registry at the exact versions of tests/web/apps_host/package-lock.json
# (`npm ci`), into a cache dir outside the repo. Works with any Node >= 18 + npm on PATH.
# Idempotent: a second run with the same lock and sources does no work (a changed
# host module is only re-bundled). Safe to run concurrently (flock).
#
# Usage:   scripts/ensure_apps_host.sh [--force]
# Env:     OPENENV_MCP_APPS_HOST_CACHE   cache dir (default ~/.cache/openenv-mcp/apps-host)
# Output:  progress goes to stderr; stdout is KEY=VALUE lines only:
#            EXT_APPS_VERSION=2.x.y
#            ESBUILD_VERSION=0.x.y
#            APPS_HOST_BUNDLE=<abs path of the bundled host module>   (always the last line)
set -euo pipefail

SRC="$(cd "$(dirname "$0")/../tests/web/apps_host" && pwd -P)"
CACHE="${OPENENV_MCP_APPS_HOST_CACHE:-${HOME:-/root}/.cache/openenv-mcp/apps-host}"
FORCE=0
case "${1:-}" in
  --force) FORCE=1 ;;
  "") ;;
  -h|--help) sed -n '2,17p' "$0"; exit 0 ;;
  *) echo "ensure_apps_host.sh: unknown argument: $1" >&2; exit 2 ;;
esac

log() { echo "[ensure_apps_host] $*" >&2; }

command -v npm >/dev/null 2>&1 || { log "npm not found on PATH"; exit 1; }
command -v node >/dev/null 2>&1 || { log "node not found on PATH"; exit 1; }

mkdir -p "$CACHE"
CACHE="$(cd "$CACHE" && pwd -P)"
BUNDLE="$CACHE/host.bundle.js"
EXT_APPS_DIR="$CACHE/node_modules/@modelcontextprotocol/ext-apps"
ESBUILD_DIR="$CACHE/node_modules/esbuild"
MODULES_STAMP="$CACHE/.installed"
BUNDLE_STAMP="$CACHE/.bundled"

digest() { cat "$@" | sha256sum | cut -d' ' -f1; }
pkg_version() { sed -n 's/^ *"version": *"\([^"]*\)".*/\1/p' "$1/package.json" | head -n1; }

WANT_MODULES="$(digest "$SRC/package.json" "$SRC/package-lock.json")"
WANT_BUNDLE="$WANT_MODULES $(digest "$SRC/host.js")"

modules_ok() {
  [ -f "$MODULES_STAMP" ] && [ "$(cat "$MODULES_STAMP")" = "$WANT_MODULES" ] &&
    [ -f "$EXT_APPS_DIR/package.json" ] && [ -f "$ESBUILD_DIR/package.json" ]
}

bundle_ok() {
  [ -f "$BUNDLE_STAMP" ] && [ "$(cat "$BUNDLE_STAMP")" = "$WANT_BUNDLE" ] && [ -s "$BUNDLE" ]
}

install_modules() {
  log "installing the locked packages of $SRC into $CACHE"
  rm -f "$MODULES_STAMP" "$BUNDLE_STAMP"
  cp "$SRC/package.json" "$SRC/package-lock.json" "$CACHE/"
  # --ignore-scripts: esbuild's postinstall only checks its binary, which comes as the
  # platform's optional package (@esbuild/<os>-<cpu>) that esbuild's API finds itself.
  (
    cd "$CACHE"
    npm_config_update_notifier=false npm ci \
      --no-audit --no-fund --ignore-scripts --loglevel=error >&2
  )
  [ -f "$EXT_APPS_DIR/package.json" ] || { log "ext-apps missing after install: $EXT_APPS_DIR"; exit 1; }
  echo "$WANT_MODULES" >"$MODULES_STAMP"
}

bundle() {
  log "bundling $SRC/host.js for the browser into $BUNDLE"
  rm -f "$BUNDLE_STAMP"
  cp "$SRC/host.js" "$CACHE/host.js"
  local tmp="$BUNDLE.tmp.$$"
  (
    cd "$CACHE"
    node -e '
      require("esbuild").build({
        entryPoints: ["host.js"], bundle: true, format: "esm", platform: "browser",
        target: "es2022", outfile: process.argv[1], logLevel: "warning",
      }).catch(() => process.exit(1));
    ' "$tmp" >&2
  )
  mv -f "$tmp" "$BUNDLE"
  echo "$WANT_BUNDLE" >"$BUNDLE_STAMP"
}

exec 9>"$CACHE/.lock"
flock 9
if [ "$FORCE" = 1 ] || ! modules_ok; then
  install_modules
fi
if [ "$FORCE" = 1 ] || ! bundle_ok; then
  bundle
else
  log "already built in $CACHE"
fi
flock -u 9

echo "EXT_APPS_VERSION=$(pkg_version "$EXT_APPS_DIR")"
echo "ESBUILD_VERSION=$(pkg_version "$ESBUILD_DIR")"
echo "APPS_HOST_BUNDLE=$BUNDLE"
