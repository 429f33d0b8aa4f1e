#!/usr/bin/env bash
# Guards that compose (issue: one answer per call, every agent shape).
# Called by .ci/run after the test step; run from the repository root,
# with v2/ regenerated (go generate ./...).
#
#  1. the guard × agent shape matrix and the composition tests, on both
#     ADK lines (they also run in the whole-suite step: this step names
#     them, so that a matrix cell lost to a rename fails loudly);
#  2. a short fresh fuzz search of the repeat guard's hasher (numbers and
#     Unicode forms) and of the repeat end's message, with the same retry
#     rule as .ci/run's fuzz smoke.
set -euo pipefail

tests='TestGuardMatrix|TestStubbornModelReadsUnavailableUntilH|TestShortCircuitLimitAboveRepeatLimit|TestRetryOfAFailingCallReachesTheBreaker|TestRepeatEndDuringAnOutage|TestTurnBudgetBelowCallTimeoutIsRefused|TestChainTurnDeadlineReachesSubAgentTools|TestChainSubRunErrorIsSanitised|TestChainAgentToolRepeatInShadowMode'
for dir in . v2; do
  listed=$(go -C "$dir" test -list "^($tests)\$" ./plugin/)
  for t in ${tests//|/ }; do
    grep -qx "$t" <<<"$listed" || { echo "missing test $t in $dir/plugin" >&2; exit 1; }
  done
  go -C "$dir" test -race -count=1 -run "^($tests)\$" ./plugin/
done

for spec in "callbacks FuzzArgsHash" "callbacks FuzzArgsHashText" "degrade FuzzRepeatedCallMessageDuring"; do
  set -- $spec
  pkg=$1 target=$2
  corpus="$pkg/testdata/fuzz/$target"
  before=$( (ls "$corpus" 2>/dev/null || true) | wc -l)
  attempt=1
  until go test -run '^$' -fuzz "^$target\$" -fuzztime 10s "./$pkg/"; do
    after=$( (ls "$corpus" 2>/dev/null || true) | wc -l)
    if [ "$after" != "$before" ]; then
      echo "fuzz target $target found a failing input: $corpus" >&2; exit 1
    fi
    if [ "$attempt" -ge 3 ]; then
      echo "fuzz target $target failed $attempt times without a failing input" >&2; exit 1
    fi
    attempt=$((attempt + 1))
  done
done
