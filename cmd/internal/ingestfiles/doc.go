// Package ingestfiles is the work of `quota ingest`: it reads the files
// named (or standard input, a live feed included) into the ledger through
// an ingest.Ingester, prints each rejection, warning and resync, and the
// closing summary.
//
// Invariant: every file named is checked before any is read, so that a
// mistyped name appends nothing; every record read is counted in the
// summary, and a rejected one makes Run return ErrRejected.
//
// # Caveats
//
//   - Without Config.Resync a stop (ctx cancelled) ends the input: what was
//     read is still appended, within DrainTimeout, and the files after it
//     are not read. A resync, whose list must be whole, is abandoned.
//   - Run uses the stream and the request function it is given; the
//     caller owns the connection.
package ingestfiles
