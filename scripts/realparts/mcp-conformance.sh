#!/usr/bin/env bash
# The official MCP conformance suite (@modelcontextprotocol/conformance 0.1.16),
# every client scenario, against an ADK agent whose MCP tools come from ADK's
# plain mcptoolset ("bare") and from mcpguard with adkbreaker's plugin, set up
# as docs/mcp.md shows ("guarded"), on each ADK line. Fails when a scenario
# passes bare and fails guarded (a scenario failing bare is a go-sdk gap,
# listed but not failed on), or when the guarded client leaves out the
# MCP-Protocol-Version header (a MUST the suite does not check) on requests
# after the handshake and the bare one does not.
#
#   scripts/realparts/mcp-conformance.sh [v1] [v2]     (default: both lines)
#
# The client is internal/realparts/mcpclient, built per line (the ADK v1 line
# with the go-sdk build tag mcp_go_client_oauth, which go-sdk v1.4.1 needs
# for its OAuth client). npm parts: see npm-parts.sh (cached). A scenario
# passes when none of its checks failed; warnings (e.g. a reconnection a
# little late on a loaded machine) are counted apart. The v2 line builds from
# the generated adkv2/ module: run `go generate ./...` first when the root tree
# changed. Under CI=true a missing part fails the run; otherwise it is
# skipped with a message. KEEP=1 keeps the work folder (the suite's
# checks.json of every scenario).
set -euo pipefail
repo="$(cd "$(dirname "$0")/../.." && pwd)"
t0=$SECONDS

missing() {
  if [ "${CI:-}" = true ]; then echo "mcp-conformance: $*" >&2; exit 1; fi
  echo "mcp-conformance: SKIP: $*"; exit 0
}
command -v go >/dev/null 2>&1 || missing "go not found"
# shellcheck source=npm-parts.sh
. "$(dirname "$0")/npm-parts.sh"

lines=("$@")
[ ${#lines[@]} -gt 0 ] || lines=(v1 v2)
work="$(mktemp -d "${TMPDIR:-/tmp}/mcp-conformance.XXXXXX")"
if [ "${KEEP:-}" != 1 ]; then trap 'rm -rf "$work"' EXIT; fi

find_module() {
  local want d
  case "$1" in v1) want='google\.golang\.org/adk v1\.' ;; v2) want='google\.golang\.org/adk/v2 v2\.' ;; esac
  for d in "$repo/adkv1" "$repo/adkv2"; do
    if [ -f "$d/go.mod" ] && grep -Eq "^\s*(require\s+)?$want" "$d/go.mod"; then echo "$d"; return 0; fi
  done
  return 1
}

# results FILE: "scenario pass|fail failed warnings" per scenario of a suite log.
results() {
  sed 's/\x1b\[[0-9;]*m//g' "$1" | awk '
    /=== SUITE SUMMARY ===/ { s=1; next }
    s && /^[^ ]+ [^ ]+: [0-9]+ passed, [0-9]+ failed/ {
      name=$2; sub(/:$/, "", name)
      failed=$5; w=0
      if (match($0, /[0-9]+ warnings/)) w=substr($0, RSTART, RLENGTH)+0
      print name, (failed == 0 ? "pass" : "fail"), failed, w
    }'
}

status=0
summary=()
for line in "${lines[@]}"; do
  lt0=$SECONDS
  abdir=$(find_module "$line") || missing "no adkbreaker module for the ADK $line line"
  tags=""
  [ "$line" = v1 ] && tags="-tags=mcp_go_client_oauth"
  client="$work/mcpclient-$line"
  go -C "$abdir" build $tags -o "$client" ./internal/realparts/mcpclient
  for mode in bare guarded; do
    out="$work/$line-$mode"
    echo "=== $line $mode: conformance client suite"
    "$NODE22" "$CONFORMANCE_JS" client --command "$client -mode $mode" --suite all -o "$out" >"$out.log" 2>&1 || true
    results "$out.log" >"$out.results"
    n=$(wc -l <"$out.results")
    [ "$n" -gt 0 ] || { tail -n 20 "$out.log" >&2; echo "mcp-conformance: $line $mode: no suite summary" >&2; exit 1; }
    awk '{ printf "  %-45s %s (%d failed checks, %d warnings)\n", $1, $2, $3, $4 }' "$out.results"
    # The client's own check of a MUST the suite does not check: the
    # MCP-Protocol-Version header on every request after the handshake.
    find "$out" -name stderr.txt -exec grep -ho 'HEADERCHECK requests_after_init=[0-9]* missing_protocol_version=[0-9]*' {} + |
      awk -F'[= ]' '{ r += $3; m += $5 } END { print r + 0, m + 0 }' >"$out.headers"
    read -r hreq hmiss <"$out.headers"
    echo "  headers: $hreq requests after the handshake, $hmiss without MCP-Protocol-Version"
  done
  read -r _ bare_miss <"$work/$line-bare.headers"
  read -r _ guarded_miss <"$work/$line-guarded.headers"
  header_note="header ok"
  if [ "$bare_miss" = 0 ] && [ "$guarded_miss" != 0 ]; then
    echo "$line: GUARDED OMITS MCP-Protocol-Version on $guarded_miss requests (bare on none)"
    header_note="MCP-Protocol-Version missing on $guarded_miss guarded requests"
    status=1
  fi
  bare_pass=$(awk '$2 == "pass"' "$work/$line-bare.results" | wc -l)
  guarded_pass=$(awk '$2 == "pass"' "$work/$line-guarded.results" | wc -l)
  total=$(wc -l <"$work/$line-bare.results")
  regs=$(awk 'NR == FNR { bare[$1] = $2; next } bare[$1] == "pass" && $2 != "pass" { print $1 }' \
    "$work/$line-bare.results" "$work/$line-guarded.results" | tr '\n' ' ')
  missing_guarded=$(awk 'NR == FNR { g[$1] = 1; next } !($1 in g) { print $1 }' \
    "$work/$line-guarded.results" "$work/$line-bare.results" | tr '\n' ' ')
  bare_only_fail=$(awk '$2 != "pass" { print $1 }' "$work/$line-bare.results" | tr '\n' ' ')
  echo "$line: fail bare too (go-sdk gaps): ${bare_only_fail:-none}"
  if [ -n "$regs$missing_guarded" ]; then
    echo "$line: PASS BARE, FAIL GUARDED: $regs$missing_guarded"
    status=1
  fi
  summary+=("$line: bare $bare_pass/$total, guarded $guarded_pass/$total; passes bare, fails guarded: ${regs:-none}${missing_guarded:+ (no result guarded: $missing_guarded)}; $header_note [$((SECONDS - lt0))s]")
done
for s in "${summary[@]}"; do echo "mcp-conformance: $s"; done
echo "mcp-conformance: $([ $status = 0 ] && echo PASS || echo FAIL) in $((SECONDS - t0))s"
exit $status
