package ledger

import (
	"cmp"
	"fmt"
	"strings"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

// Defaults of Config, applied to zero fields.
const (
	// DefaultStreamName names the event stream.
	DefaultStreamName = "QUOTA_EVENTS"
	// DefaultRejectStreamName names the dead-letter stream.
	DefaultRejectStreamName = "QUOTA_REJECTS"
	// DefaultDuplicateWindow is how long JetStream remembers a Nats-Msg-Id.
	// A day, because exporters re-send their backlog after an outage that
	// may last hours, and `quota ingest` of a file is often repeated the
	// same day; within the window a re-sent event is a no-op. The cost is
	// memory for the remembered IDs, about 100 bytes each.
	DefaultDuplicateWindow = 24 * time.Hour
	// DefaultMaxMsgSize is the largest event accepted: 1 MiB, the NATS
	// server's default max_payload, so the limit fails here with a clear
	// error and not deep in the client.
	DefaultMaxMsgSize = 1 << 20
	// DefaultAckWaitTimeout bounds the wait for one append's acknowledgement.
	DefaultAckWaitTimeout = 10 * time.Second
	// DefaultAppendBatchInFlightMax is the number of unacknowledged appends
	// AppendBatch keeps in flight.
	DefaultAppendBatchInFlightMax = 256

	// ReplicasMax is the largest replica count JetStream supports.
	ReplicasMax = 5
	// AppendBatchInFlightLimit is the largest in-flight window Config
	// accepts; it stays below the client's own async publish limit (4000)
	// so that AppendBatch never stalls inside the client.
	AppendBatchInFlightLimit = 2048
	// MaxMsgSizeLimit is the largest MaxMsgSize Config accepts (the NATS
	// server's hard ceiling for a payload is 64 MiB).
	MaxMsgSizeLimit = 64 << 20
)

// Config holds every option of the event stream and the dead-letter stream.
// The zero value is the single-server default; set Replicas to 3 on a
// JetStream cluster.
type Config struct {
	// StreamName names the event stream. Zero: DefaultStreamName.
	StreamName string
	// RejectStreamName names the dead-letter stream. Zero:
	// DefaultRejectStreamName.
	RejectStreamName string
	// Storage is the stream storage. Zero: jetstream.FileStorage, because
	// the log is the truth and must survive a restart. MemoryStorage is for
	// throwaway experiments only.
	Storage jetstream.StorageType
	// Replicas is the number of copies of each stream. Zero: 1, right for
	// the embedded server; use 3 on a cluster so that an acknowledged event
	// survives the loss of a node.
	Replicas int
	// MaxBytes bounds the event stream's size in bytes; appends past it
	// fail (JetStream's DiscardNew). Zero: unlimited. The log is the truth
	// that replay rebuilds from: trim it with Stream.PurgeBefore instead.
	MaxBytes int64
	// DuplicateWindow is how long a Nats-Msg-Id is remembered for
	// deduplication. Zero: DefaultDuplicateWindow.
	DuplicateWindow time.Duration
	// MaxMsgSize is the largest encoded event in bytes. Zero:
	// DefaultMaxMsgSize. The NATS server's max_payload must be at least as
	// large.
	MaxMsgSize int32
	// AllowPurge makes a new event stream allow purging, which
	// Stream.PurgeBefore needs: a server with a retention removes through
	// it the events a checkpoint covers, and nothing else. Zero (false):
	// a new stream denies it, since removing facts no checkpoint covers
	// changes every later replay. JetStream can deny purging on an
	// existing stream but never lift the denial, so Open leaves an
	// existing stream's setting as it is either way: one that denies
	// purging keeps every event for good.
	AllowPurge bool
	// AckWaitTimeout bounds the wait for the acknowledgement of one append.
	// Zero: DefaultAckWaitTimeout.
	AckWaitTimeout time.Duration
	// AppendBatchInFlightMax is the number of appends AppendBatch keeps
	// unacknowledged at once. Zero: DefaultAppendBatchInFlightMax.
	AppendBatchInFlightMax int
}

// withDefaults returns c with zero fields replaced by their defaults.
func (c Config) withDefaults() Config {
	c.StreamName = cmp.Or(c.StreamName, DefaultStreamName)
	c.RejectStreamName = cmp.Or(c.RejectStreamName, DefaultRejectStreamName)
	c.Replicas = cmp.Or(c.Replicas, 1)
	c.DuplicateWindow = cmp.Or(c.DuplicateWindow, DefaultDuplicateWindow)
	c.MaxMsgSize = cmp.Or(c.MaxMsgSize, DefaultMaxMsgSize)
	c.AckWaitTimeout = cmp.Or(c.AckWaitTimeout, DefaultAckWaitTimeout)
	c.AppendBatchInFlightMax = cmp.Or(c.AppendBatchInFlightMax, DefaultAppendBatchInFlightMax)
	return c
}

// Validate reports every problem of c, after defaults are applied, in one
// error wrapping ErrInvalidConfig.
func (c Config) Validate() error {
	c = c.withDefaults()
	var problems []string
	add := func(format string, args ...any) { problems = append(problems, fmt.Sprintf(format, args...)) }

	for _, n := range []struct{ field, name string }{{"StreamName", c.StreamName}, {"RejectStreamName", c.RejectStreamName}} {
		if strings.ContainsAny(n.name, " \t\r\n.*>/\\") {
			add("%s %q holds a space, '.', '*', '>' or a slash", n.field, n.name)
		}
	}
	if c.StreamName == c.RejectStreamName {
		add("StreamName and RejectStreamName are both %q", c.StreamName)
	}
	if c.Storage != jetstream.FileStorage && c.Storage != jetstream.MemoryStorage {
		add("Storage %d is neither file nor memory", c.Storage)
	}
	if c.Replicas < 1 || c.Replicas > ReplicasMax {
		add("Replicas %d is outside 1..%d", c.Replicas, ReplicasMax)
	}
	if c.MaxBytes < 0 {
		add("MaxBytes %d is negative (zero means unlimited)", c.MaxBytes)
	}
	if c.DuplicateWindow < 0 {
		add("DuplicateWindow %s is negative", c.DuplicateWindow)
	}
	if c.MaxMsgSize < 0 || c.MaxMsgSize > MaxMsgSizeLimit {
		add("MaxMsgSize %d is outside 1..%d", c.MaxMsgSize, MaxMsgSizeLimit)
	}
	if c.AckWaitTimeout < 0 {
		add("AckWaitTimeout %s is negative", c.AckWaitTimeout)
	}
	if c.AppendBatchInFlightMax < 0 || c.AppendBatchInFlightMax > AppendBatchInFlightLimit {
		add("AppendBatchInFlightMax %d is outside 1..%d", c.AppendBatchInFlightMax, AppendBatchInFlightLimit)
	}
	if len(problems) == 0 {
		return nil
	}
	return fmt.Errorf("%w: %s", ErrInvalidConfig, strings.Join(problems, "; "))
}

// eventStreamConfig is the JetStream configuration of the event stream.
// Every option the design relies on is set here, none left to a default.
func (c Config) eventStreamConfig() jetstream.StreamConfig {
	return jetstream.StreamConfig{
		Name:              c.StreamName,
		Description:       "Kubernetes quota ledger: recorded facts, one subject per namespace",
		Subjects:          []string{SubjectsAll},
		Retention:         jetstream.LimitsPolicy,
		MaxConsumers:      -1,
		MaxMsgs:           -1,
		MaxBytes:          cmp.Or(c.MaxBytes, -1), // -1: JetStream's "no limit"
		MaxAge:            0,
		MaxMsgsPerSubject: -1,
		MaxMsgSize:        c.MaxMsgSize,
		Discard:           jetstream.DiscardNew,
		Storage:           c.Storage,
		Replicas:          c.Replicas,
		NoAck:             false,
		Duplicates:        c.DuplicateWindow,
		// Deleting single events is denied: removing a fact silently
		// changes every later replay.
		DenyDelete:  true,
		DenyPurge:   !c.AllowPurge,
		AllowRollup: false,
		Compression: jetstream.NoCompression,
		// Direct gets may be answered by a follower that lags the leader;
		// LastSubjectSeq feeds the compare-and-swap, so it must read from
		// the leader.
		AllowDirect: false,
	}
}

// rejectStreamConfig is the JetStream configuration of the dead-letter
// stream: the event stream's storage, replicas and limits, but without a
// size limit, and deleting and purging allowed, since an operator clears
// rejections after dealing with them.
func (c Config) rejectStreamConfig() jetstream.StreamConfig {
	sc := c.eventStreamConfig()
	sc.Name = c.RejectStreamName
	sc.Description = "Kubernetes quota ledger: rejected input and unreadable records, with their raw bytes"
	sc.Subjects = []string{RejectSubjectsAll}
	sc.MaxBytes = -1
	sc.DenyDelete, sc.DenyPurge = false, false
	return sc
}
