#!/usr/bin/env bash
# Make sure a Debian package's program is installed, for the catalog's environments
# and their tests: `stockfish` (the chess engine), `bubblewrap` (the coding sandbox).
# Idempotent; one installer at a time (flock). As root, or with passwordless sudo.
#
# Usage:   scripts/ensure_debian.sh PACKAGE PROGRAM
# Output:  progress on stderr; on stdout one line, PROGRAM=<abs path>.
# Exit:    0 with the line; 1 (and why on stderr) where it cannot be installed.
set -euo pipefail
package="${1:?usage: ensure_debian.sh PACKAGE PROGRAM}"
program="${2:?usage: ensure_debian.sh PACKAGE PROGRAM}"
log() { echo "[ensure_debian] $*" >&2; }

found() {
  local path
  for path in "$(command -v "$program" 2>/dev/null || true)" "/usr/games/$program" "/usr/bin/$program"; do
    if [ -n "$path" ] && [ -x "$path" ]; then
      echo "$(echo "$program" | tr '[:lower:]-' '[:upper:]_')=$path"
      return 0
    fi
  done
  return 1
}

found && exit 0
command -v apt-get >/dev/null 2>&1 || { log "no $program and no apt-get to install $package"; exit 1; }
if [ "$(id -u)" != 0 ]; then
  SUDO="sudo -n"
  $SUDO true 2>/dev/null || { log "installing $package needs root (or passwordless sudo)"; exit 1; }
else
  SUDO=""
fi
# One apt install at a time on this machine (ensure_chromium.sh takes the same lock):
# apt fails rather than waits when another holds its own.
exec 9>/tmp/openenv-mcp-apt.lock
flock 9
found && exit 0
log "installing Debian's $package (once)..."
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq >&2
$SUDO apt-get install -y -qq --no-install-recommends "$package" >&2
found || { log "$package installed but $program is not there"; exit 1; }
