#!/bin/sh
# Runs the benchmark harness once per size and prints the scaling table of
# BENCHMARKS.md. Each run is its own process, so peak RSS is per run.
# OUT (default: a new temporary directory) keeps the JSON and text reports.
set -eu
OUT=${OUT:-$(mktemp -d)}
mkdir -p "$OUT"
run() { # name events namespaces live
	echo "== $1: $2 events, $3 namespaces, $4 live" >&2
	BENCH_EVENTS=$2 BENCH_NAMESPACES=$3 BENCH_LIVE=$4 BENCH_REQUESTS=${BENCH_REQUESTS:-2000} \
	BENCH_JSON="$OUT/$1.json" go test -run '^$' -bench '^BenchmarkHarness$' -benchtime 1x -timeout 6h \
		./projector/benchmark >"$OUT/$1.txt" 2>&1 || { cat "$OUT/$1.txt" >&2; exit 1; }
}
# Events, at a fixed share of live objects.
run events-10k 10000 100 1000
run events-50k 50000 100 5000
run events-200k 200000 100 20000
# Live objects, at a fixed event count.
run live-1k 100000 100 1000
run live-10k 100000 100 10000
run live-50k 100000 100 50000
# Namespaces, at a fixed event count (each namespace opens with 4 quotas).
run ns-10 50000 10 5000
run ns-100 50000 100 5000
run ns-1000 50000 1000 5000
run ns-10000 50000 10000 5000
go run ./projector/benchmark/scalingtable "$OUT"/events-*.json "$OUT"/live-*.json "$OUT"/ns-*.json
