#!/usr/bin/env bash
# CI step: adkbreaker against parts others wrote, on both ADK lines
# (this directory): the MCP conformance suite's client scenarios bare and
# guarded, the npm reference server killed, frozen and restarted, and ADK Go's
# own tests with the plugin on every runner. Each part prints a summary line;
# this step fails when any part fails. The timing-sensitive parts run first,
# alone; ADK's own tests (compile-heavy) after them.
#   REALPARTS_SKIP="adk-own-tests ..."  leave parts out (local runs)
# The npm parts are cached in REALPARTS_NPM_DIR (see scripts/realparts/npm-parts.sh):
# keep that folder between CI runs. adkv2/ must be generated (CI checks it is).
set -uo pipefail
cd "$(dirname "$0")/../.."
status=0
summary=()
for part in mcp-conformance reference-servers adk-own-tests; do
  case " ${REALPARTS_SKIP:-} " in *" $part "*) summary+=("$part: skipped (REALPARTS_SKIP)"); continue ;; esac
  t0=$SECONDS
  echo "=== realparts: $part"
  if "scripts/realparts/$part.sh" v1 v2 | tee "/tmp/realparts-$part.log"; then rc=0; else rc=${PIPESTATUS[0]}; fi
  [ "$rc" = 0 ] || status=1
  summary+=("$(grep -E "^$part: (PASS|FAIL|SKIP)" "/tmp/realparts-$part.log" | tail -n 1 || echo "$part: exit $rc") [$((SECONDS - t0))s]")
done
printf 'realparts: %s\n' "${summary[@]}"
exit $status
