// Command quota is the quota ledger's one binary: the server (serve) and
// its clients (ingest, describe, explain, admit, replay, rejects).
//
// It owns the command line: flags, their defaults and their checks, the
// connection options a client builds from them, and the exit codes. It
// holds no logic of the ledger's: each subcommand parses its flags, builds
// the configuration of one package and calls it. The packages that own the
// work of a command and nothing else live under cmd/internal: serve calls
// server.Serve, ingest ingestfiles.Run, admit admit.Run, export
// exporter.Run; the query clients (describe, explain, status) send one
// request over NATS through ask and query (client.go); replay runs a
// stream through replay.
//
// Invariant: every subcommand runs on a context cancelled by the first
// SIGINT or SIGTERM, so that it stops cleanly (serve commits the batch in
// hand); a second signal exits at once. The exit status is 0 when the work
// is done, 1 when it is done and the answer is "no" (denied, drift found,
// bad records reported), 2 when it could not be done.
//
// # Caveats
//
// A second signal within 250 ms of the first counts as the same one
// (signalEcho): supervisors that signal a process and then its group send
// one stop as two. The end-to-end tests in this directory build the binary
// and run it as a subprocess; they are the slowest of the suite.
package main
