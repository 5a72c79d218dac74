// Command scalingtable prints the harness's JSON reports (BENCH_JSON) as
// the Markdown scaling table of BENCHMARKS.md, one row per report, in the
// order given. `make bench-scaling` runs it through scaling.sh, after one
// harness run per size.
//
// It owns the table's columns only; every figure in it comes from a report
// as the harness measured it (invariant: nothing is computed here but
// unit conversions and per-object sizes).
//
// # Caveats
//
// Rows are comparable only when their reports come from the same machine
// under the same load; the table does not say where a report was made.
package main
