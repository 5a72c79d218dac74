// Package exporter runs `quota export` as a process: it finds the
// cluster's client configuration, connects to the ledger's NATS for good
// (reconnecting without end), attaches the exporter's streams, and runs
// an export.Exporter with its metrics and probes until stopped.
//
// Invariant: Run returns only after the exporter and the metrics server
// have exited; a stop (ctx cancelled) is not an error.
//
// # Caveats
//
// The process's logger, and client-go's, are the caller's to set up;
// Config.Log receives what Run logs.
package exporter
