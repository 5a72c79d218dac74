// Package ledgertest starts real ledger infrastructure for tests: an
// embedded NATS server with JetStream on a random port, storing in the
// test's temporary directory, and the ledger's streams on it. It also
// holds the raw JetStream baselines the benchmarks compare the ledger
// with (BenchRawPublish, BenchRawOrderedRead) and a log buffer for what a
// server under test logs.
//
// Invariant: everything this package starts is stopped by t.Cleanup, and
// nothing is a fake: the server, the streams and their options are the
// ledger's own.
//
// # Caveats
//
// The server syncs every write (the ledger's default), as production does;
// tests that append many events are slower than with an interval, and say
// what they measure with that in mind. FullDiskBlock makes a stream's
// block a link to /dev/full, and skips the test where there is none.
package ledgertest
