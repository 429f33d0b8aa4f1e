#!/usr/bin/env bash
# A short fresh fuzz search of redact's escape decoder (FuzzDecode: decoding
# leaves nothing to decode and never grows the text). Meant for .ci/run's
# fuzz smoke step; the simplest merge is to add "./redact FuzzDecode" to its
# list of targets, which also gives it the retry on an engine time-out.
set -euo pipefail
cd "$(dirname "$0")/../.."
listed=$(go test -list '^FuzzDecode$' ./redact)
grep -qx FuzzDecode <<<"$listed" || { echo "missing fuzz target FuzzDecode in ./redact" >&2; exit 1; }
go test -run '^$' -fuzz '^FuzzDecode$' -fuzztime "${FUZZTIME:-10s}" ./redact
