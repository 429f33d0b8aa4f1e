#!/usr/bin/env bash
# Instruction counts per op, independent of machine load (see docs/benchmarks.md).
# Ir/op = (Ir(2N) - Ir(N)) / N, with GC off and async preemption off
# (callgrind cannot follow Go's preemption signal).
# Usage: scripts/callgrind.sh ./callbacks 'BenchmarkToolPath/(gobreaker|closed|open)$' 50000
set -euo pipefail
pkg=${1:?package}; re=${2:?benchmark regexp}; n=${3:-50000}
command -v valgrind >/dev/null || { echo "valgrind not installed" >&2; exit 1; }
bin=$(mktemp -d)/b.test
go test -c -o "$bin" "$pkg"
names=$("$bin" -test.run '^$' -test.bench "$re" -test.benchtime 1x -test.cpu 1 | awk '/^Benchmark/{print $1}')
for name in $names; do
  # Anchor each sub-benchmark exactly.
  exact="^$(echo "$name" | sed 's#/#$/^#g')\$"
  ir() {
    GOGC=off GODEBUG=asyncpreemptoff=1 valgrind --tool=callgrind --callgrind-out-file=/dev/null \
      "$bin" -test.run '^$' -test.bench "$exact" -test.benchtime "${1}x" -test.cpu 1 2>&1 |
      awk '/Collected/{print $4}' | tr -d ,
  }
  a=$(ir "$n"); b=$(ir $((2*n)))
  echo "$name Ir/op=$(( (b - a) / n ))"
done
