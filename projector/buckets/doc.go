// Package buckets holds a projection's live state in memory: named
// buckets, each an ordered map of byte keys to byte values, with the
// subset of bbolt's transaction, bucket and cursor API that the fold and
// the queries use, so that the same code folds into memory and reads
// from it.
//
// A bucket given a Codec keeps its values decoded: its owner puts and
// reads Go values (PutValue, Value, AscendValues) with no encoding on the
// hot path, while Get, ForEach and cursors still see bytes, encoded on
// demand, for whatever copies or compares the set as bbolt would hold it.
//
// A Set is written by one goroutine, its owner. Snapshot returns a
// read-only copy in O(1) (the buckets are copy-on-write B-trees,
// github.com/tidwall/btree): a snapshot never changes, and any number of
// goroutines may read it while the owner goes on writing the Set. The
// owner pays for that with a copy of each tree node it changes first
// after a snapshot, so that it takes one snapshot per batch, not per
// write.
//
// Invariant: a snapshot reflects exactly the writes made to the Set
// before it was taken.
//
// # Caveats
//
//   - A Set is not safe for concurrent use: only its owner writes it and
//     takes its snapshots. Snapshots are safe for concurrent reads.
//   - Keys and values passed to Put and PutValue are kept as given: the
//     caller must not change them afterwards. Values returned by Get,
//     Value and cursors belong to the set: the caller must not change
//     them, and a snapshot shares them with the set.
//   - Writing to a snapshot's buckets panics.
//   - A cursor must not be used across writes to its bucket.
package buckets
