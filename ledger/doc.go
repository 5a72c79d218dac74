// Package ledger owns the recorded facts: the Event types and their
// versioned encoding, and the JetStream stream that holds them. The stream is
// the truth; every projection is derived from it and can be rebuilt from it.
//
// # Encoding
//
// An Event is stored as JSON with a version field "v" (EncodingVersion).
// Encode validates before writing and DecodeEvent validates after reading,
// with the same rules (Event.Validate): a known type, the fields that type
// requires, none that belong to another type. A reader meeting a newer
// version fails with ErrFutureVersion rather than guessing.
//
// # Subjects
//
// Each namespace has its own subject, quota.events.<namespace>; events of
// cluster-scoped objects (StorageClass, PriorityClass, RuntimeClass) go to
// quota.events._cluster, which no namespace can be named since namespaces are
// DNS labels. Per-namespace subjects make the expected-last-subject-sequence
// check a per-namespace compare-and-swap (admissions in one namespace are
// serialised, different namespaces never conflict), and let a later
// deployment give each projector a subset of namespaces with a subject
// filter or a server-side partition mapping, without rewriting the log.
//
// # Appending
//
// Append publishes one event and waits for JetStream's acknowledgement. A
// message ID (Nats-Msg-Id) makes a re-sent event a no-op within the
// duplicate window (a day by default); ExpectLastSubjectSeq makes the append
// conditional and fails with ErrConflict when another append to the
// namespace came first: that is how admission avoids over-admission across
// replicas. AppendBatch pipelines many appends with a bounded in-flight
// window for bulk ingest. On a replicated stream, an append with a message
// ID that finds no leader, or whose leader goes away before acknowledging
// it, is sent again with the same ID within Config.AckWaitTimeout: the
// ID is checked before any expected sequence, so one stored already is
// answered as a duplicate with its sequence and is never stored twice.
//
// # Reading
//
// Stream.Reader reads in sequence order from any sequence through an ordered
// consumer. A record whose bytes do not decode is returned with Record.Err
// set, in its place; it is never dropped and never stops the reader.
//
// # Trimming and the archive
//
// The stream has no age or size limit of JetStream's: a server with a
// retention trims it with PurgeBefore, up to a sequence a checkpoint of
// the projection covers, so the log always starts right after one. A
// namespace whose last event was trimmed has none in the stream, which
// JetStream's expected-last-subject-sequence reads as 0: an append
// expecting the trimmed sequence is sent again expecting 0, so the
// compare-and-swap holds across a trim. Before events are trimmed they
// can be copied into an Archive: a directory of gzip JSON-lines
// segments, each named by its first and last sequence and time, written
// to a temporary name, synced and renamed, and read back in order
// (Archive.Read) as the Reader reads the stream.
//
// # Dead letters
//
// A second stream, QUOTA_REJECTS on quota.rejects.<origin>, keeps what could
// not become or be read as an event: the raw bytes as the message body, and
// the source (FILE:LINE, or the event stream and sequence) and the reason as
// headers. Stream.Reject writes one, Stream.ListRejections lists the latest.
//
// # Embedded server
//
// StartEmbedded runs nats-server with JetStream in this process. By default
// it syncs every write before acknowledging it, so an acknowledged event
// survives power loss. It takes any client unless EmbeddedConfig.AuthFile
// names a nats-server authorization block, whose users (each with its
// subject permissions) it then requires; the process's own connections
// (Embedded.InProcess) authenticate with a key made at start.
//
// With EmbeddedConfig.Cluster, the server is a member of a JetStream
// cluster: it routes to every member listed, and replicated streams are
// Raft groups across the members, an append acknowledged once a quorum
// of replicas has stored it (and, with SyncInterval zero on every member,
// synced it). Embedded.Quorum says whether this member's replica of a
// stream is in contact with a quorum, which a member cut off from the
// others learns within QuorumContactWindow, before they can elect a
// leader without it. Embedded.LameDuckShutdown hands the member's
// leaderships to the others before it stops, so that a restart costs
// them no election timeout.
//
// # Answers in parts
//
// A NATS server refuses a message larger than its max_payload (1 MiB by
// default). SendAnswer splits a larger answer into parts, numbered by the
// headers AnswerPartHeader and AnswerPartsHeader, and RequestAnswer puts
// them back together; an answer that fits is one plain message, which any
// client (nats req) reads.
//
// # Serving requests
//
// Serve is the one serving loop of every NATS subject the ledger answers
// (ingest, the queries, admission): queue groups, bounded work and
// pending requests, a drain on shutdown, and an error when a subscription
// closes under it.
//
// # Caveats
//
//   - The event stream denies deleting single events, and purging unless
//     made with Config.AllowPurge; JetStream never lifts a denial, so a
//     stream made denying purges keeps every event for good. It has no age
//     or size limit: do not configure limits on it, which would drop
//     events no checkpoint covers; trim it with PurgeBefore.
//   - Deduplication by message ID only works within Config.DuplicateWindow;
//     re-sending a backlog older than that appends it again (harmless for
//     upserts and deletes, which are idempotent, but it grows the log).
//   - One encoded event is at most Config.MaxMsgSize bytes (1 MiB by
//     default); a Resync of a very large namespace can exceed it.
//   - A Reader is used by one goroutine at a time and must be closed.
//   - The event's Namespace decides its subject; the reader refuses an event
//     found on another namespace's subject (Record.Err).
//   - LastSubjectSeq reads from the stream leader (direct get is off), so it
//     is exact but costs a round trip to the leader.
package ledger
