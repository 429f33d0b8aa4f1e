#!/usr/bin/env bash
# The TypeScript reference MCP server (@modelcontextprotocol/server-everything
# 2026.8.31, npm) over streamable HTTP and over stdio, driven by an ADK agent
# through mcpguard and adkbreaker's plugin, on each ADK line: killed mid-call,
# frozen (SIGSTOP), restarted on the same port after an outage and while idle,
# a stdio server killed in flight (internal/realparts/refserver). Prints the
# measured numbers (lines "REFSERVER ...") and fails when a drill's bound does
# not hold: the breaker opens, one probe closes it, the first success after a
# restart comes within the hold left + 1s, an idle restart's first call
# succeeds.
#
#   scripts/realparts/reference-servers.sh [v1] [v2]     (default: both lines)
#
# npm parts: see npm-parts.sh (cached). The v2 line runs the generated v2/
# module: run `go generate ./...` first when the root tree changed. Under
# CI=true a missing part fails the run; otherwise it is skipped.
set -euo pipefail
repo="$(cd "$(dirname "$0")/../.." && pwd)"
t0=$SECONDS

missing() {
  if [ "${CI:-}" = true ]; then echo "reference-servers: $*" >&2; exit 1; fi
  echo "reference-servers: SKIP: $*"; exit 0
}
command -v go >/dev/null 2>&1 || missing "go not found"
# shellcheck source=npm-parts.sh
. "$(dirname "$0")/npm-parts.sh"
export REALPARTS_NODE="$NODE22" REALPARTS_EVERYTHING_JS="$EVERYTHING_JS"

lines=("$@")
[ ${#lines[@]} -gt 0 ] || lines=(v1 v2)
find_module() {
  local want d
  case "$1" in v1) want='google\.golang\.org/adk v1\.' ;; v2) want='google\.golang\.org/adk/v2 v2\.' ;; esac
  for d in "$repo/adkv1" "$repo/adkv2"; do
    if [ -f "$d/go.mod" ] && grep -Eq "^\s*(require\s+)?$want" "$d/go.mod"; then echo "$d"; return 0; fi
  done
  return 1
}

status=0
summary=()
log="$(mktemp "${TMPDIR:-/tmp}/reference-servers.XXXXXX")"
trap 'rm -f "$log"' EXIT
for line in "${lines[@]}"; do
  lt0=$SECONDS
  abdir=$(find_module "$line") || missing "no adkbreaker module for the ADK $line line"
  echo "=== $line: server-everything drills"
  rc=0
  go -C "$abdir" test -count=1 -v -timeout 6m ./internal/realparts/refserver/ >"$log" 2>&1 || rc=$?
  grep -E '^--- (PASS|FAIL|SKIP)|^\s+everything_test.go:[0-9]+: ' "$log" | grep -v 'failed probe:' |
    sed -E "s/^\s+everything_test.go:[0-9]+: (REFSERVER )?/    /; s/^/  $line /" || true
  if grep -q -- '--- SKIP' "$log"; then missing "$line: the drills were skipped"; fi
  pass=$(grep -c -- '^--- PASS' "$log" || true)
  fail=$(grep -c -- '^--- FAIL' "$log" || true)
  if [ "$rc" != 0 ]; then
    status=1
    [ "$fail" -gt 0 ] || tail -n 30 "$log" >&2
  fi
  summary+=("$line: $pass drills pass, $fail fail [$((SECONDS - lt0))s]")
done
for s in "${summary[@]}"; do echo "reference-servers: $s"; done
echo "reference-servers: $([ $status = 0 ] && echo PASS || echo FAIL) in $((SECONDS - t0))s"
exit $status
