package ledger

import "errors"

var (
	// ErrAnswerParts is returned by RequestAnswer when the parts of an
	// answer do not fit together: one missing, out of order, or more than
	// answerPartsMax of them.
	ErrAnswerParts = errors.New("answer in parts")

	// ErrInvalidEvent is returned by Encode, DecodeEvent and Append when an
	// event breaks the rules of its type (a missing name, an unknown type,
	// a field that does not belong to the type). The wrapping error names
	// every violation.
	ErrInvalidEvent = errors.New("invalid event")

	// ErrFutureVersion is returned by DecodeEvent when an event was written
	// by a newer encoding than this code reads. Upgrade the reader; never
	// skip such an event silently.
	ErrFutureVersion = errors.New("event encoding version is newer than this reader")

	// ErrEventTooLarge is returned by Append and AppendBatch when an encoded
	// event is larger than Config.MaxMsgSize.
	ErrEventTooLarge = errors.New("encoded event exceeds the stream's maximum message size")

	// ErrConflict is returned by Append when AppendOptions.ExpectLastSubjectSeq
	// was set and another append to the same subject got there first. The
	// caller catches up past the subject's new last sequence and decides
	// again.
	ErrConflict = errors.New("another append to the subject came first")

	// ErrInvalidConfig is returned by Config.Validate, EmbeddedConfig.Validate,
	// Open and StartEmbedded when a configuration is not usable.
	ErrInvalidConfig = errors.New("invalid configuration")

	// ErrInvalidMsgID is returned by Append and AppendBatch when a message ID
	// is too long or holds characters a NATS header cannot carry.
	ErrInvalidMsgID = errors.New("invalid message id")

	// ErrBatchTooLarge is returned by AppendBatch when it is given more
	// entries than AppendBatchEntriesMax.
	ErrBatchTooLarge = errors.New("batch exceeds the maximum number of entries")

	// ErrAckTimeout is returned by Append and AppendBatch when JetStream did
	// not acknowledge an append within Config.AckWaitTimeout. The append may
	// or may not have been stored: retry with the same message ID, which
	// makes a stored one a duplicate.
	// The server may be overloaded, gone, or unable to write its store (a
	// full disk: nats-server then answers no append), which its log says.
	ErrAckTimeout = errors.New("timed out waiting for the stream to acknowledge an append (the NATS server's log says whether it can write its store)")

	// ErrReaderClosed is returned by Reader.Next after Close, or after the
	// underlying consumer stopped for good.
	ErrReaderClosed = errors.New("reader is closed")

	// ErrInvalidRejection is returned by Stream.Reject when a rejection has
	// no source or no reason.
	ErrInvalidRejection = errors.New("invalid rejection")

	// ErrNoJetStream is returned by Open and Attach when nothing answers
	// JetStream's API on the NATS server: it runs without JetStream, or the
	// account has none.
	ErrNoJetStream = errors.New("the NATS server answers no JetStream request: is JetStream enabled on it, for this account?")

	// ErrStreamGone is returned by Stream.CurrentIdentity when JetStream
	// no longer has the event stream (it was deleted).
	ErrStreamGone = errors.New("the ledger's stream is gone")

	// ErrStoreFailed is returned by Embedded.Health when the embedded
	// server can no longer serve its JetStream store.
	ErrStoreFailed = errors.New("embedded JetStream cannot serve its store")

	// ErrServerNotReady is returned by StartEmbedded when the embedded
	// server did not accept connections within EmbeddedConfig.ReadyTimeout,
	// or gave up before (a port in use), with the server's reason.
	ErrServerNotReady = errors.New("embedded server did not become ready")

	// ErrSubscriptionClosed is returned by Serve when one of its
	// subscriptions closed before its context ended: the connection
	// closed, or the server took the subscription away.
	ErrSubscriptionClosed = errors.New("subscription closed")

	// ErrNoQuorum is returned by Embedded.Quorum when this cluster
	// member's replica of a stream is out of contact with a quorum of its
	// replicas: cut off from the others, with no leader, or catching up.
	ErrNoQuorum = errors.New("this member is out of contact with the cluster's quorum")
)

// ErrArchive is returned by the archive (OpenArchive, Archive.Copy,
// Archive.Read) when a directory is not one, a file in it does not hold
// what its name says, or the sequences asked for are in no segment.
var ErrArchive = errors.New("archive")

// ErrPurgeDenied is returned by Stream.PurgeBefore when the stream denies
// purging (it was opened without Config.AllowPurge).
var ErrPurgeDenied = errors.New("the stream denies purging")
