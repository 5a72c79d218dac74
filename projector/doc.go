// Package projector folds the ledger's event stream into per-namespace quota
// usage, a live state in memory checkpointed to a bbolt file, and answers
// queries (describe, explain, the admission responder's reads) from it.
//
// The projection holds, per namespace, every object the stream reports with
// its Charge (what quota accounting says it costs), and every ResourceQuota
// with its Used. A batch of stream records is applied to the live state
// (package buckets) together with the sequence of the last record in it,
// and a read-only view of the result is published: every query reads one
// view, so it sees exactly a prefix of the stream. The bbolt file is the
// checkpoint of that state (checkpoint.go), written in the background
// with the applied sequence it reflects: the keys changed, in place, or
// when many changed the whole state, in a new file renamed over the old.
// Objects and quotas are kept as records, not bytes (store.go's codecs):
// a record once stored is never changed, since published views share it;
// the fold stores a changed copy.
//
// Invariants:
//   - The applied sequence is stored in the same view, and the same
//     checkpoint, as the state it produced, and only ever grows. A crash
//     loses no acknowledged event and applies none twice: a restart loads
//     the last checkpoint and folds the log from the sequence after it.
//   - Applying an object's state is idempotent: an upsert replaces the
//     object's charge, a delete removes it.
//   - A quota's Used is, at every sequence, the sum of what the live
//     objects in the log charge it plus open reservations and holds (see
//     holds.go); it is never negative. Kubernetes' quota controller holds
//     some figures until a later recount (up to its five-minute resync);
//     the ledger does not.
//   - The fold reads time only from the stream's record timestamps, so a
//     replay of the same prefix produces the same bytes. A pod past its
//     deletion deadline stops counting at a Deadline event the server
//     appends to the log (deadline.go), never by the projector's clock.
//   - A reservation no object confirms ends only by an Expire event in
//     the log: one made with ledger.ReleaseByFeed once a Progress event
//     has shown its resource's feed past its end, never by a clock
//     (feed.go); another once its TTL has passed on the sweeping server's
//     clock. A feed point never moves back.
//   - Fenced by resourceVersion (fence.go): an upsert or delete of an
//     object older than the state the projection holds for its name, or
//     than the deletion of its uid, is skipped as stale, counted, and
//     kept as a dead letter; a deleted uid's tombstone lasts the stream's
//     duplicate window of stream time. A resync removes only what is
//     older than its list, and a listed item older than the projection's
//     state is left out and counted. Versions that cannot be compared
//     (none, a manifest's, an aggregated API's own) fence nothing: such
//     events apply in log order.
//   - A record that cannot be decoded or evaluated is skipped with a record
//     of why (in the projection's skipped bucket and in the log), never
//     retried forever and never silently dropped.
//
// Besides the file, the state goes to the JetStream object store as
// checkpoints (snapshot.go): the whole projection at a sequence (every
// live object's trimmed form and charge, every quota's used, the
// reservations, holds, deadlines and feeds), stored under a pending name,
// read back and compared with the state it was written from, and only
// then named as a checkpoint. They are the base of every rebuild: a
// server without its file, a new replica and replay start from the
// newest that serves. A Retainer (retention.go) bounds the log by time:
// it removes the events older than its retention that a checkpoint
// covers, archiving them first when asked, so the log always starts right
// after a checkpoint; Run stops with ErrLogGap rather than fold across a
// gap such a trim left behind a projection that had not applied it.
//
// Where Kubernetes' answer is a draw, the ledger's rule is:
//   - a figure is a running total in log order, as admission keeps
//     status.used: it prints in the format of the charge that made it
//     non-zero, read back from its printed form after every change; a
//     quota created or given other hard limits, or a namespace resynced,
//     sums its objects afresh in key order (resource, then name);
//   - where several LimitRanges default one resource, the first by name
//     sets it;
//   - a refusal names the first refusing quota by name (ledger/quota).
//
// status.hard is always spec.hard: Kubernetes keeps older strings in it
// while a change of spec.hard changes no value.
//
// The semantics (what an object is charged, which quota it matches) belong
// to ledger/quota; this package only stores and sums.
//
// # Caveats
//
// A projection file belongs to one Projector at a time: bbolt locks it.
// Readers outside the process use the NATS query subjects instead. The
// file lags the live state by up to a checkpoint's interval; DB writes a
// checkpoint before it returns the file. The live state is in memory.
// The file layout is versioned (SchemaVersion), and so are the rules it
// was folded under (RulesVersion). A file of another layout is refused
// with ErrSchemaVersion, and its owner (`quota serve`) moves it aside and
// rebuilds it from the stream and its checkpoints; there are no
// migrations. One of other rules is recharged as it opens (Recharge):
// every charge is computed again from the objects it holds, without the
// log.
package projector
