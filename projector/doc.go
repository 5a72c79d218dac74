// Package projector folds the ledger's event stream into per-namespace quota
// usage kept in a bbolt file, and answers queries (describe, explain, the
// admission responder's reads) from that projection.
//
// The projection holds, per namespace, every object the stream reports with
// its Charge (what quota accounting says it costs), and every ResourceQuota
// with its Used. A batch of stream records is applied in one bbolt
// transaction together with the sequence of the last record in it, so the
// projection always reflects exactly a prefix of the stream.
//
// Invariants:
//   - The applied sequence is stored in the same transaction as the state it
//     produced, and only ever grows. A crash loses no acknowledged event and
//     applies none twice.
//   - Applying an object's state is idempotent: an upsert replaces the
//     object's charge, a delete removes it. Used is only ever changed by the
//     difference between an object's old and new charge, or recomputed from
//     the namespace's objects; it is never negative. It equals the sum of
//     the charges, but while a quota is stale: an update lowered a charge
//     and Kubernetes would not recount until a later event (replenish.go),
//     and Used keeps the higher figure until then.
//   - A quota's status.hard prints as its spec.hard but after a change of
//     spec.hard that changed no value: the quota controller ignores it, so
//     Used stays as it was and StatusHard keeps the strings it last wrote
//     until a recount changes Used.
//   - Where the order of a Go map decides what Kubernetes shows (which
//     quota a refusal names, which LimitRange's default applies, the format
//     of a recounted sum), the projection keeps where each quota,
//     LimitRange, pod and claim sits in its informer's map, in the order
//     the objects reached the log (index.go), and the likeliest answer is
//     given.
//   - The fold reads time only from the stream's record timestamps, so a
//     replay of the same prefix produces the same bytes.
//   - A record that cannot be decoded or evaluated is skipped with a record
//     of why (in the projection's skipped bucket and in the log), never
//     retried forever and never silently dropped.
//
// The semantics (what an object is charged, which quota it matches) belong
// to ledger/quota; this package only stores and sums.
//
// # Caveats
//
// A projection file belongs to one Projector at a time: bbolt locks it.
// Readers outside the process use the NATS query subjects instead. The file
// layout is versioned (SchemaVersion). A file of an earlier version is
// migrated when opened (reservations indexed by expiry, informer indexes
// built in name order); a file of a later version is refused rather than
// misread, and the remedy is to delete it and let the projector rebuild it
// from the stream. The file also records the rules it was folded under
// (RulesVersion): a file of other rules is read as it is, charges and all,
// and its owner (`quota serve`) rebuilds it rather than fold on from
// charges this build would not make.
package projector
