#!/bin/sh
# Runs the benchmark harness once per size and prints the scaling table of
# BENCHMARKS.md. Each run is its own process, so peak RSS is per run.
# OUT (default: a new temporary directory) keeps the JSON and text reports;
# a run whose JSON report is already in OUT is not repeated.
set -eu
OUT=${OUT:-$(mktemp -d)}
mkdir -p "$OUT"
run() { # name events namespaces live
	if [ -s "$OUT/$1.json" ]; then return; fi
	echo "== $1: $2 events, $3 namespaces, $4 live" >&2
	BENCH_EVENTS=$2 BENCH_NAMESPACES=$3 BENCH_LIVE=$4 BENCH_REQUESTS=${BENCH_REQUESTS:-2000} \
	BENCH_JSON="$OUT/$1.json" go test -run '^$' -bench '^BenchmarkHarness$' -benchtime 1x -timeout 6h \
		./cmd/internal/benchmark >"$OUT/$1.txt" 2>&1 || { cat "$OUT/$1.txt" >&2; exit 1; }
}
# Events, with a tenth of them live at most.
run events-10k 10000 100 1000
run events-50k 50000 100 5000
run events-200k 200000 100 20000
# Live objects, at 50k events and 100 namespaces (5000: events-50k).
run live-500 50000 100 500
run live-25k 50000 100 25000
# Namespaces, at 50k events (100: events-50k); each namespace opens with
# 4 quotas, so 10 000 namespaces make 40 000 of the 50 000 events quotas.
run ns-10 50000 10 5000
run ns-1000 50000 1000 5000
run ns-10000 50000 10000 5000
# A large cluster: the memory target's size (1M events, 150 000 live
# objects over 2000 namespaces).
run large-1m 1000000 2000 150000
go run ./cmd/internal/benchmark/scalingtable "$OUT"/events-*.json "$OUT"/live-*.json "$OUT"/ns-*.json "$OUT"/large-*.json
