#!/usr/bin/env bash
# check.sh v1|v2: make a fresh module outside the repository that adds
# adkbreaker's adapter for that ADK line with one `go get` (plus replaces to
# this checkout, since nothing is published: the adapter and the core module
# it requires), as a user on that line would, with the line's ADK and MCP Go
# SDK versions; check the versions MVS resolves; build, vet and run an agent
# with two tools on one backend and a streamable-HTTP MCP server.
set -euo pipefail
line=${1:?usage: check.sh v1|v2}
here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../.." && pwd)
case "$line" in
  v1) adk=google.golang.org/adk; adk_v=v1.7.0; sdk_v=v1.4.1; otellog_v=v0.21.0; mod=github.com/adkbreaker/adkbreaker/adkv1; toolctx=agent.ToolContext; gov=1.25.0 ;;
  v2) adk=google.golang.org/adk/v2; adk_v=v2.2.0; sdk_v=v1.8.0; otellog_v=v0.20.0; mod=github.com/adkbreaker/adkbreaker/adkv2; toolctx=agent.Context; gov=1.26.5 ;;
  *) echo "unknown line $line" >&2; exit 2 ;;
esac
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cd "$work"
cat > go.mod <<MOD
module example.com/consumer

go $gov
MOD
sed -e "s#@@ADK@@#$adk#g" -e "s#@@ADAPTER@@#$mod#g" -e "s#@@TOOLCTX@@#$toolctx#g" "$here/main.go.tmpl" > main.go
core=github.com/adkbreaker/adkbreaker
go mod edit -replace "$mod=$repo/${mod##*/}" -replace "$core=$repo"
# No version of the checkout is published: the replaces stand for any
# version, so go get takes the zero pseudo-version. One module is added: the
# adapter, which requires the core.
go get "$adk@$adk_v" "github.com/modelcontextprotocol/go-sdk@$sdk_v" "$mod@v0.0.0-00010101000000-000000000000"
go mod tidy
for want in "$adk $adk_v" "github.com/modelcontextprotocol/go-sdk $sdk_v" "go.opentelemetry.io/otel/log $otellog_v"; do
  got=$(go list -m "${want% *}")
  if [ "$got" != "$want" ]; then echo "consumer $line: resolved $got, want $want" >&2; exit 1; fi
done
go build -o consumer .
go vet .
./consumer
