#!/usr/bin/env bash
# A new user's first minute, measured: a clone of this repository (or of $1), then the README's
# `npm install && npm start` with an empty npm cache and an empty HOME (a developer's caches hide
# missing install steps and the download time), until GET /health answers 200.
#
# Fails when the install compiles anything (node-gyp, a native build directory), when the server
# is not ready within 120 s, or when FRESH_CLONE_BUDGET_S is set and install + start took longer.
# Prints the figures docs/benchmarks.md ("A fresh clone") records. Runs on the Node first on PATH
# (`source .ci/node.sh` first for Node 24); on an older one `npm start` fetches Node 24 itself, into
# the empty HOME, and that download is counted as a user would wait for it.
#
#   .ci/fresh-clone.sh [repository]          e.g. FRESH_CLONE_BUDGET_S=60 .ci/fresh-clone.sh
set -euo pipefail

SOURCE="${1:-$(cd "$(dirname "$0")/.." && pwd)}"
WORK="$(mktemp -d "${TMPDIR:-/tmp}/genjobs-fresh-XXXXXX")"
SERVER_PID=""
cleanup() {
  if [ -n "$SERVER_PID" ]; then kill "$SERVER_PID" 2>/dev/null || true; wait "$SERVER_PID" 2>/dev/null || true; fi
  if [ -z "${FRESH_CLONE_KEEP:-}" ]; then rm -rf "$WORK"; else echo "kept: $WORK"; fi
}
trap cleanup EXIT

now() { date +%s.%N; }
seconds() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.1f", b - a }'; }

mkdir -p "$WORK/home" "$WORK/npm-cache"
export HOME="$WORK/home" npm_config_cache="$WORK/npm-cache" XDG_CACHE_HOME="$WORK/home/.cache"
# No audit or fund requests: they are network round trips a user may or may not make; the install is the same.
export npm_config_audit=false npm_config_fund=false npm_config_update_notifier=false

git clone --quiet "$SOURCE" "$WORK/genjobs"
cd "$WORK/genjobs"
# The machine's load beside the figures: on a shared machine it decides them more than the network does.
echo "clone of $SOURCE at $(git rev-parse --short HEAD); node $(node --version), npm $(npm --version); $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg)"

# --foreground-scripts: every install script's output in the log, so a compiler shows.
t0="$(now)"
if ! npm install --foreground-scripts >"$WORK/install.log" 2>&1; then
  tail -n 40 "$WORK/install.log"
  echo "FAIL: npm install" >&2
  exit 1
fi
t1="$(now)"
install_s="$(seconds "$t0" "$t1")"

compiled="$(grep -E 'gyp info|gyp ERR|node-gyp rebuild|CXX\(target\)|make: Entering' "$WORK/install.log" | head -n 5 || true)"
native_builds="$(find node_modules -type d -name Release -path '*/build/Release' 2>/dev/null | head -n 5 || true)"
scripts_run="$(grep -E '^> [^ ]+@[^ ]+ (preinstall|install|postinstall|prepare)$' "$WORK/install.log" | sed 's/^> //' | tr '\n' ';' || true)"
packages="$(find node_modules -name package.json -mindepth 2 -maxdepth 3 -not -path '*/node_modules/*/node_modules/*' | wc -l)"

PORT="$(node -e 'const s = require("node:net").createServer().listen(0, "127.0.0.1", () => { console.log(s.address().port); s.close() })')"
t2="$(now)"
PORT="$PORT" HOST=127.0.0.1 npm start >"$WORK/start.log" 2>&1 &
SERVER_PID=$!
ready=""
deadline=$(( $(date +%s) + 120 ))
while [ "$(date +%s)" -lt "$deadline" ]; do
  if [ "$(curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$PORT/health" || true)" = 200 ]; then ready=yes; break; fi
  if ! kill -0 "$SERVER_PID" 2>/dev/null; then break; fi
  sleep 0.1
done
t3="$(now)"
start_s="$(seconds "$t2" "$t3")"
total_s="$(seconds "$t0" "$t3")"

echo "install: ${install_s} s ($packages packages; scripts run: ${scripts_run:-none})"
echo "start: ${start_s} s to GET /health 200"
echo "install + start: ${total_s} s (load now $(cut -d' ' -f1-3 /proc/loadavg))"
echo "compiled: ${compiled:-nothing}${native_builds:+; build dirs: $native_builds}"
echo "npm cache after install: $(du -sh "$WORK/npm-cache" | cut -f1); node_modules: $(du -sh node_modules | cut -f1)"

status=0
if [ -z "$ready" ]; then
  tail -n 40 "$WORK/start.log"
  echo "FAIL: the server was not ready within 120 s" >&2
  status=1
fi
if [ -n "$compiled" ] || [ -n "$native_builds" ]; then
  echo "FAIL: the install compiled native code" >&2
  status=1
fi
if [ -n "${FRESH_CLONE_BUDGET_S:-}" ] && awk -v t="$total_s" -v b="$FRESH_CLONE_BUDGET_S" 'BEGIN { exit !(t > b) }'; then
  echo "FAIL: install + start took ${total_s} s, over the ${FRESH_CLONE_BUDGET_S} s budget" >&2
  status=1
fi
exit "$status"
