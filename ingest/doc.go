// Package ingest is the one way into the ledger: it turns outside input
// (Kubernetes watch events, manifests, exporter messages) into ledger events,
// and drops nothing silently.
//
// Every record read ends in exactly one of: appended, duplicate (already in
// the stream), unchanged (the same trimmed state as the last one appended in
// this session), bookmark (skipped, counted), or rejected. A rejection is
// reported as "FILE:LINE: reason" and kept, with its raw text, in the
// ledger's dead-letter stream; the records around it are still ingested.
//
// # Input
//
// Parse detects the format of each input: JSON lines of watch events
// ({"type":"ADDED","object":{...}}, as `kubectl get --raw '...?watch=true'`
// prints them), JSON objects (possibly pretty-printed, possibly several),
// or YAML documents separated by "---". Plain objects count as ADDED; a
// List (kind "List" or "<Kind>List" with items) counts as its items, whose
// source is "FILE:LINE[i]". Input may be gzipped, and UTF-16 after its byte
// order mark (see Text).
//
// # Events
//
// ADDED and MODIFIED become ledger.Upsert with the object's trimmed JSON;
// DELETED becomes ledger.Delete. Each event carries a message ID,
// "<uid or resource/namespace/name>/<resourceVersion>/<TYPE>" (a digest of
// the trimmed object stands in for a missing resourceVersion), so that
// re-sending an exporter's backlog or re-ingesting a file appends nothing
// new within the stream's duplicate window.
//
// # NATS
//
// Responder serves Subject (quota.ingest) in QueueGroup (quota-ingest):
// a request carries one watch event or several as JSON lines, and the reply,
// sent after the durable append, is the Reply JSON
// {"appended":N,"duplicates":N,"skipped":N,"bookmarks":N,"rejected":[...]}.
//
// # Caveats
//
//   - IngestFile returns only after JetStream acknowledged every event; an
//     error means some events may not be in the stream. Re-running the same
//     input is safe: what landed is a duplicate the second time.
//   - Unchanged upserts are skipped only within one Ingester's memory
//     (bounded by Options.UnchangedKeysMax); a new process appends the first
//     state it sees of each object again (deduplicated when the message ID
//     is the same).
//   - A multi-line JSON document with a syntax error cannot be resumed: the
//     rest of the file from the bad line is one rejection. JSON lines resume
//     at the next line.
//   - Multi-line JSON and YAML files are read whole (at most
//     DocumentBytesMax); JSON lines are streamed, each at most
//     LineBytesMax. A first line longer than that (a compact List, as
//     jq -c prints one) is read as a JSON document, up to DocumentBytesMax.
//   - Records are decoded and trimmed by up to GOMAXPROCS goroutines, and
//     one batch is appended while the next is prepared; the stream, the
//     Report and the dead letters still follow the input order. When an
//     append fails, records after that batch may already have been rejected
//     into the dead-letter stream; the Report counts them.
//   - Calls on one Ingester are serialised; run several Ingesters for
//     parallel input, accepting that their unchanged-upsert memories are
//     separate.
package ingest
