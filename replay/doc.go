// Package replay rebuilds a quota projection from the event stream and
// compares it with the live one.
//
// Rebuild folds the stream into a fresh bbolt file with the projector's own
// fold (projector.Projector.Apply, which calls projector.Fold.ApplyBatch): there
// is no second copy of the fold here. It starts from the newest starting
// point that serves the target (plan.go): a checkpoint of the object store
// (projector.Snapshots) or of an archive (ledger.Archive), or the first
// event; it reads the archive's records before the log's first, then the
// log's, and stops at a stream sequence (Options.UntilSeq) or before the
// first record the stream stored after a moment (Options.At). A target no
// starting point serves (the log was trimmed past it, and no archive holds
// it) is refused with ErrNotCovered, naming the oldest moment that can be
// answered: never is a past moment answered from a later state. Verify
// asks the live server for a copy of its projection at its applied
// sequence S, rebuilds to exactly S from the oldest starting point that
// serves, and lists every difference (Compare). A copy that arrives
// damaged (its digest does not match) is asked for again, three times at
// most.
//
// Invariant: a rebuild of the same stream prefix holds the same bytes in
// every bucket, whatever the batch sizes and wherever it started (from the
// beginning or from a snapshot of an undrifted projection), because the
// fold reads nothing but the records and the state they produced.
//
// # Caveats
//
// The bucket contents are equal, not the files: bbolt's page layout depends
// on how the records were split into transactions. Compare two projections
// with Compare, which reads each entry that differs through
// projector.ReadEntry, never with a file checksum.
//
// A checkpoint is a copy of the live projection. A replay that starts
// from one inherits whatever drift the live projection had when it was
// taken; Verify therefore folds from the oldest starting point (the first
// event while the log or the archive holds it), and an operator who
// suspects drift replays with Options.Snapshots nil and the archive.
//
// Rebuild reads the stream through ledger.Open, which creates or updates
// the stream's configuration; open it with the same ledger.Config as the
// server.
package replay
