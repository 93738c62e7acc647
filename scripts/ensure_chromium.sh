#!/usr/bin/env bash
# Make sure Debian's Chromium is installed, for the browser tests of the web page
# (tests/web/). Playwright (a Python package from PyPI, in the test extra) drives
# it; Playwright's own browser downloads are not used (they come from outside the
# package registries). Idempotent: does nothing when a Chromium is already there.
#
# Usage:   scripts/ensure_chromium.sh
# Env:     OPENENV_MCP_CHROMIUM   a Chromium binary to use instead of installing one
# Output:  progress on stderr; on stdout one line, CHROMIUM=<abs path of the binary>.
# Exit:    0 with the line; 1 (and why on stderr) where no Chromium can be had.
set -euo pipefail

log() { echo "[ensure_chromium] $*" >&2; }

found() {
  for candidate in "${OPENENV_MCP_CHROMIUM:-}" chromium chromium-browser google-chrome; do
    [ -n "$candidate" ] || continue
    if path="$(command -v "$candidate" 2>/dev/null)" && "$path" --version >/dev/null 2>&1; then
      echo "CHROMIUM=$path"
      return 0
    fi
  done
  return 1
}

found && exit 0

if ! command -v apt-get >/dev/null 2>&1; then
  log "no Chromium on PATH and no apt-get to install Debian's chromium package"
  exit 1
fi
if [ "$(id -u)" != 0 ]; then
  SUDO="sudo -n"
  $SUDO true 2>/dev/null || { log "installing chromium needs root (or passwordless sudo)"; exit 1; }
else
  SUDO=""
fi
# One apt install at a time on this machine (ensure_debian.sh takes the same lock):
# test processes may ask together, and apt fails rather than waits.
exec 9>/tmp/openenv-mcp-apt.lock
flock 9
found && exit 0
log "installing Debian's chromium (once; about a minute)..."
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq >&2
$SUDO apt-get install -y -qq --no-install-recommends chromium fonts-dejavu-core >&2
found || { log "chromium installed but does not run"; exit 1; }
