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
// default), so a query's answer that large (describe -A over thousands of
// namespaces, explain of a namespace of thousands of pods) would never
// reach its client. SendAnswer splits such an answer into parts, each
// published to the request's reply subject with the headers
// AnswerPartHeader (1, 2, ...) and AnswerPartsHeader (their number); the
// answer is their bodies in order. An answer that fits is sent as one plain
// message, so a client that knows nothing of parts (nats req) reads every
// answer that fits. RequestAnswer sends a request and puts the parts back
// together. Both the projector's and ingest's responders answer this way,
// which is why it lives here, below both.
//
// # Serving requests
//
// Serve is the one serving loop of every NATS subject the ledger answers
// (ingest, the queries, admission): it subscribes each Route in its queue
// group, runs the work a request hands back on at most Route.InFlightMax
// workers, leaves the rest waiting in the subscription's bounded pending
// buffer, drains the subscriptions once its context ends, answering what
// they received, and notices a subscription closed under it
// (ErrSubscriptionClosed), which would otherwise leave a server that
// seems to run but answers nothing.
//
// # Caveats
//
//   - The event stream denies deleting and purging by default, and has no
//     age or size limit: do not configure limits on it unless replay from
//     the start is no longer wanted.
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
