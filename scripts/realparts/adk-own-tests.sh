#!/usr/bin/env bash
# ADK Go's own tests, with adkbreaker's plugin (default options) registered
# first on every runner they build: fails on any test that passes without the
# plugin and fails with it.
#
#   scripts/realparts/adk-own-tests.sh [v1] [v2]     (default: both lines)
#
# For each ADK line it copies the ADK module (the version the adkbreaker
# module of that line requires) from the module cache into a temporary
# folder, makes that copy the main module with a `replace` of adkbreaker to
# this checkout, adds a package internal/plughook and two lines to
# runner.New that prepend the hook's plugins (not on the private runner an
# agent tool builds for its sub-agent: adkbreaker stands in for that one),
# and puts an external test file in every chosen package whose test binary
# links the runner, which sets the hook to build adkbreaker's plugin when
# ADKBREAKER_PLUGHOOK=1. It runs the packages with `go test -json` without
# and with the hook (the same test binaries), diffs the results
# (internal/realparts/testdiff) and reruns each regression three times each
# way: a test that fails every time with the plugin and passes every time
# without is a regression (exit 1); one that also passes with it, or fails
# without it too, is reported as flaky.
#
# The v2 line runs against the generated adkv2/ module: run `go generate ./...`
# first when the root tree changed. Environment:
#   ADK_PKGS_V1, ADK_PKGS_V2  packages to run (defaults below: the ones that
#                             drive tools, models and agents)
#   ADK_TEST_TIMEOUT          go test -timeout (default 8m)
#   KEEP=1                    keep the work folder
# Under CI=true a missing part (go, the ADK module) fails the run; otherwise
# it is skipped with a message.
set -euo pipefail
repo="$(cd "$(dirname "$0")/../.." && pwd)"
export GOFLAGS="" # the copy's go.mod is edited: no -mod=readonly from the caller
t0=$SECONDS

missing() {
  if [ "${CI:-}" = true ]; then echo "adk-own-tests: $*" >&2; exit 1; fi
  echo "adk-own-tests: SKIP: $*"; exit 0
}
command -v go >/dev/null 2>&1 || missing "go not found"

lines=("$@")
[ ${#lines[@]} -gt 0 ] || lines=(v1 v2)

# Defaults: the packages that drive tools, models and agents (internal flow,
# LLM agent, workflow agents, tools, runner, plugins), each line about
# 3 minutes on 2 cores.
pkgs_v1=${ADK_PKGS_V1:-"./internal/llminternal/... ./agent/llmagent/... ./agent/workflowagents/... ./tool/... ./runner/... ./plugin/..."}
pkgs_v2=${ADK_PKGS_V2:-"./internal/llminternal/... ./agent/llmagent/... ./agent/workflowagents/... ./tool/... ./runner/... ./plugin/... ./workflow/..."}

work="$(mktemp -d "${TMPDIR:-/tmp}/adk-own-tests.XXXXXX")"
if [ "${KEEP:-}" != 1 ]; then trap 'chmod -R u+w "$work" 2>/dev/null; rm -rf "$work"' EXIT; fi
echo "adk-own-tests: work folder $work"

# find_module LINE: the adkbreaker module directory of an ADK line (the root,
# adkv1/ or adkv2/).
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
for line in "${lines[@]}"; do
  lt0=$SECONDS
  case "$line" in
    v1) adkmod=google.golang.org/adk; pkgs=$pkgs_v1 ;;
    v2) adkmod=google.golang.org/adk/v2; pkgs=$pkgs_v2 ;;
    *) echo "adk-own-tests: unknown line $line (v1 or v2)" >&2; exit 2 ;;
  esac
  abdir=$(find_module "$line") || missing "no adkbreaker module requires $adkmod"
  abmod=$(go -C "$abdir" list -m)
  ver=$(go -C "$abdir" list -m -f '{{.Version}}' "$adkmod")
  go -C "$abdir" mod download "$adkmod" || missing "cannot download $adkmod@$ver"
  src=$(go -C "$abdir" list -m -f '{{.Dir}}' "$adkmod")
  [ -n "$src" ] && [ -d "$src" ] || missing "$adkmod@$ver is not in the module cache"
  echo "=== $line: $adkmod@$ver from $src; adkbreaker $abmod from $abdir"

  dst="$work/adk-$line"
  cp -r "$src" "$dst"
  chmod -R u+w "$dst"

  # The hook: a package with no imports (runner must not import adkbreaker,
  # nor anything that imports runner).
  mkdir -p "$dst/internal/plughook"
  cat >"$dst/internal/plughook/plughook.go" <<'EOF'
// Package plughook lets a test binary add plugins to every runner
// runner.New builds (scripts/realparts/adk-own-tests.sh of adkbreaker).
package plughook

import (
	"runtime"
	"strings"
)

// Hook, when set, returns the plugins ([]*plugin.Plugin) to register first
// on the runner of root.
var Hook func(root any) any

// Extra returns Hook's plugins for root, or nil: no hook, or runner.New was
// called for an agent tool's private runner of its sub-agent (by ADK's agent
// tool, or by adkbreaker's, which puts its own plugin there).
func Extra(root any) any {
	if Hook == nil {
		return nil
	}
	pc := make([]uintptr, 1)
	if runtime.Callers(3, pc) == 1 { // plughook.Extra ← runner.New ← its caller
		if f := runtime.FuncForPC(pc[0]); f != nil && (strings.Contains(f.Name(), "/tool/agenttool.") ||
			strings.HasPrefix(f.Name(), "github.com/adkbreaker/adkbreaker")) {
			return nil
		}
	}
	return Hook(root)
}
EOF
  rn="$dst/runner/runner.go"
  awk -v imp="\"$adkmod/internal/plughook\"" '
    /^import \($/ && !i { print; print "\t" imp; i=1; next }
    /^func New\(cfg Config\) \(\*Runner, error\) \{$/ && !h {
      print
      print "\tif ps, ok := plughook.Extra(cfg.Agent).([]*plugin.Plugin); ok {"
      print "\t\tcfg.PluginConfig.Plugins = append(ps[:len(ps):len(ps)], cfg.PluginConfig.Plugins...)"
      print "\t}"
      h=1; next }
    { print }
    END { if (!i || !h) exit 1 }' "$rn" >"$rn.new" || { echo "adk-own-tests: cannot patch $rn (runner.New changed?)" >&2; exit 1; }
  mv "$rn.new" "$rn"
  gofmt -l "$rn" >/dev/null

  # adkbreaker from this checkout; its requirement on ADK is the main module.
  major=v0
  [[ "$abmod" =~ /(v[2-9][0-9]*)$ ]] && major=${BASH_REMATCH[1]}
  (cd "$dst" && go mod edit -require="$abmod@$major.0.0-00010101000000-000000000000" -replace="$abmod=$abdir")
  # The adapter requires the core module, which this checkout holds too.
  if [ "$abmod" != "github.com/adkbreaker/adkbreaker" ]; then
    (cd "$dst" && go mod edit -replace="github.com/adkbreaker/adkbreaker=$repo")
  fi

  # An init file in every chosen package whose test binary links the runner.
  list=$(cd "$dst" && go list $pkgs)
  n_hooked=0
  while read -r ip name dir; do
    if (cd "$dst" && go list -test -deps "$ip" | grep -qx "$adkmod/runner"); then
      cat >"$dir/zz_adkbreaker_hook_test.go" <<EOF
package ${name}_test

import (
	"os"
	"strconv"

	adkplugin "$adkmod/plugin"
	"$adkmod/internal/plughook"

	"$abmod/breaker"
)

// With ADKBREAKER_PLUGHOOK=1 every runner this test binary builds has
// adkbreaker's plugin, default options, registered first.
func init() {
	if os.Getenv("ADKBREAKER_PLUGHOOK") != "1" {
		return
	}
	plughook.Hook = func(any) any {
		if m := os.Getenv("ADKBREAKER_PLUGHOOK_MARK"); m != "" {
			_ = os.WriteFile(m+"/${name}-"+strconv.Itoa(os.Getpid()), nil, 0o644) // the hook was reached
		}
		p, err := breaker.New()
		if err != nil {
			panic(err)
		}
		return []*adkplugin.Plugin{p}
	}
}
EOF
      n_hooked=$((n_hooked + 1))
    fi
  done < <(cd "$dst" && go list -f '{{.ImportPath}} {{.Name}} {{.Dir}}' $list)
  echo "$line: $(echo "$list" | wc -l) packages, $n_hooked link the runner (hook installed)"
  (cd "$dst" && go mod tidy >/dev/null) # after the hook files: they import adkbreaker

  timeout=${ADK_TEST_TIMEOUT:-8m}
  (cd "$dst" && go build ./runner/ ./internal/plughook/)
  mark="$work/$line-marks"; mkdir -p "$mark"
  echo "$line: go test without the plugin"
  (cd "$dst" && ADKBREAKER_PLUGHOOK= go test -json -count=1 -vet=off -timeout "$timeout" $list >"$work/$line-without.json" 2>"$work/$line-without.err") || true
  echo "$line: go test with the plugin"
  (cd "$dst" && ADKBREAKER_PLUGHOOK=1 ADKBREAKER_PLUGHOOK_MARK="$mark" go test -json -count=1 -vet=off -timeout "$timeout" $list >"$work/$line-with.json" 2>"$work/$line-with.err") || true
  # The hook must have been reached: a run with the plugin whose init files
  # did not take would pass vacuously.
  reached=$(ls "$mark" | sed 's/-[0-9]*$//' | sort -u | wc -l)
  echo "$line: the plugin was put on runners in $reached test binaries"
  if [ "$reached" -lt "$n_hooked" ]; then
    echo "adk-own-tests: $line: only $reached of $n_hooked hooked test binaries built a runner with the plugin" >&2
    [ "$reached" -gt 0 ] || status=1
  fi
  dstatus=0
  go -C "$repo" run ./internal/realparts/testdiff -label "$line" -without "$work/$line-without.json" -with "$work/$line-with.json" \
    -regressions "$work/$line-regressions.txt" || dstatus=$?
  confirmed=0 flaky=0
  if [ "$dstatus" = 2 ] || [ "$dstatus" -gt 2 ]; then
    status=1
  elif [ "$dstatus" = 1 ]; then
    while read -r pkg test; do
      [ -n "$pkg" ] || continue
      with_fail=0 without_fail=0
      for _ in 1 2 3; do
        (cd "$dst" && ADKBREAKER_PLUGHOOK=1 go test -count=1 -vet=off -run "^${test}\$" "$pkg" >/dev/null 2>&1) || with_fail=$((with_fail + 1))
        (cd "$dst" && ADKBREAKER_PLUGHOOK= go test -count=1 -vet=off -run "^${test}\$" "$pkg" >/dev/null 2>&1) || without_fail=$((without_fail + 1))
      done
      if [ "$with_fail" = 3 ] && [ "$without_fail" = 0 ]; then
        echo "  CONFIRMED REGRESSION: $pkg $test (fails 3/3 with the plugin, 0/3 without)"
        confirmed=$((confirmed + 1))
      else
        echo "  flaky: $pkg $test (fails $with_fail/3 with the plugin, $without_fail/3 without)"
        flaky=$((flaky + 1))
      fi
    done <"$work/$line-regressions.txt"
    [ "$confirmed" = 0 ] || status=1
  fi
  ntests=$(grep -c '"Action":"pass"\|"Action":"fail"' "$work/$line-with.json" || true)
  summary+=("$line ($adkmod@$ver): $n_hooked packages hooked, $ntests test results, $confirmed regressions, $flaky flaky, diff status $dstatus, $((SECONDS - lt0))s")
done
for s in "${summary[@]}"; do echo "adk-own-tests: $s"; done
echo "adk-own-tests: $([ $status = 0 ] && echo PASS || echo FAIL) in $((SECONDS - t0))s"
exit $status
