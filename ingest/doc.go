// Package ingest is the one way into the ledger: it turns outside input
// (Kubernetes watch events, manifests, exporter messages) into ledger events,
// and drops nothing silently.
//
// Every record read ends in exactly one of: appended, duplicate (already in
// the stream), unchanged (see below), bookmark (skipped, counted), or
// rejected. A rejection is reported as "FILE:LINE: reason" and kept, with
// its raw text, in the ledger's dead-letter stream; the records around it
// are still ingested.
//
// # Input
//
// Parse tells the format by the first byte that is not blank: '{' or '['
// starts JSON, a sequence of values framed by JSON itself as kubectl's
// decoder frames them (one to a line, pretty-printed over many, or several
// on one line); anything else is YAML, documents separated by "---". Each
// value is a watch event ({"type":"ADDED","object":{...}}) or a plain
// object, which counts as ADDED; a List (kind "List" or "<Kind>List" with
// items) counts as its items, whose source is "FILE:LINE[i]". A record's
// LINE is the line where it starts. Input may be gzipped, and UTF-16 after
// its byte order mark (see Text).
//
// # Events
//
// ADDED and MODIFIED become ledger.Upsert with the object's trimmed JSON;
// DELETED becomes ledger.Delete.
//
// A watch event carries a message ID, a digest of "<uid or
// resource/namespace/name>/<resourceVersion>/<TYPE>", so that re-sending an
// exporter's backlog appends nothing new within the stream's duplicate
// window; an upsert whose trimmed state is the one last appended for its
// object by this Ingester is skipped as unchanged.
//
// A plain object (a manifest) states what its object is. It is skipped as
// unchanged only when the log holds its object in that state now, as
// Options.States tells (a ledger server's projection, caught up with the
// stream), asked once per batch after every batch before it was
// acknowledged; within a batch the events before it count. So create,
// delete and create again, or an edit and its revert, always land, and an
// unchanged file ingested again appends nothing. Its message ID is a
// digest of the object, its state and what it follows: the same change
// made twice on the same state is kept once. Clients racing on one object
// are ordered as their appends land, as two kubectl applys are, and
// nothing is held outside the log.
//
// # Field validation
//
// A plain object of a built-in kind is checked against its kind's Go type
// in k8s.io/api, as kubectl's --validate checks a manifest (see
// Validation): an unknown field is reported as `FILE:LINE: unknown field
// "spec.hrad"`, LINE being the field's own, and a value that cannot be
// read as its field's type is always rejected, naming its line, path and
// value. Watch events, which an API server wrote, are not checked; nor are
// kinds of other groups (custom resources), whose schema only the cluster
// holds. UnknownFields offers the check to clients that read manifests
// themselves.
//
// # NATS
//
// Responder serves Subject (quota.ingest) in QueueGroup: a request carries
// one watch event or several as JSON lines, and the Reply is sent after
// the durable append. With Options.States it also answers lookups of
// current states on StatesSubject.
//
// # Caveats
//
//   - IngestFile returns only after JetStream acknowledged every event; an
//     error means some events may not be in the stream. Re-running the same
//     input is safe: what landed is a duplicate the second time.
//   - Unchanged watch upserts are skipped only within one Ingester's
//     memory (bounded by Options.UnchangedKeysMax); a new process appends
//     the first state it sees of each object again (deduplicated when the
//     message ID is the same).
//   - A lookup of Options.States that fails (no ledger server answers, its
//     projection does not catch up within ResponderRequestTimeout) fails
//     the ingest like a failed append.
//   - A JSON value that does not parse is rejected with what follows it
//     up to the next line that starts with '{' or '[' (in its first
//     column), where reading resumes: a bad JSON line costs only itself.
//     A JSON line that does not end its value is only found bad when the
//     next line starts, so a live feed reports it with the next record.
//   - JSON values and YAML documents are held whole while read, each at
//     most DocumentBytesMax, and a YAML line is at most LineBytesMax
//     (ErrDocumentTooLarge, ErrLineTooLong say what follows).
//   - Records are decoded and trimmed by up to GOMAXPROCS goroutines, and
//     one batch is appended while the next is prepared; the stream, the
//     Report and the dead letters still follow the input order. When an
//     append fails, records after that batch may already have been rejected
//     into the dead-letter stream; the Report counts them.
//   - Calls on one Ingester are serialised; run several Ingesters for
//     parallel input, accepting that their unchanged-upsert memories are
//     separate.
package ingest
