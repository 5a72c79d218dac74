package benchmark

import (
	"context"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/quotaledger/quota/ledger"
	"github.com/quotaledger/quota/ledger/ledgertest/workload"
	"github.com/quotaledger/quota/projector"
)

// Defaults and limits of Config.
const (
	// DefaultRequests is the number of requests of each request-reply
	// measurement.
	DefaultRequests = 20_000
	// ChunkEvents is the number of events generated, converted and
	// published as one unit. It bounds the harness's own memory: a
	// ten-million-event run holds one chunk at a time, never the stream.
	ChunkEvents = 4096
	// DefaultRepeats is how many times each request-reply measurement
	// runs by default.
	DefaultRepeats = 3
	// ConcurrentClients is the client count of the concurrent request
	// measurements, as the targets name it.
	ConcurrentClients = 16
	// PhaseTimeout bounds each phase, so that a stuck component fails the
	// run instead of hanging it.
	PhaseTimeout = 2 * time.Hour
)

// Config says what to measure.
type Config struct {
	// Workload is the generated stream. Its zero value is the generator's
	// default (10 namespaces, 10 000 events).
	Workload workload.Config
	// Dir holds the JetStream store and the projection files. Required; it
	// should be on the disk whose speed is being measured.
	Dir string
	// SyncInterval is the JetStream sync policy. Zero: sync every write,
	// the ledger's default, so that ingest is measured durable.
	SyncInterval time.Duration
	// Requests is the number of requests per request-reply measurement.
	// Zero: DefaultRequests.
	Requests int
	// Repeats is how many times each request-reply measurement runs, one
	// after the other; its figures are those of the run with the median
	// rate, and the note lists every run's rate. Zero: DefaultRepeats.
	Repeats int
	// Hooks plug in the parts of the ledger that are measured through
	// their own code. A nil hook reports its figures as not measured yet
	// (or, for Ingest, measures the harness's own conversion).
	Hooks Hooks
	// Log receives progress lines. Nil: discarded.
	Log io.Writer
	// ProfileDir, when set, gets a CPU profile of the projection and of
	// each request-reply measurement's first run, named after it (e.g.
	// "admission reserving, 16 clients.pprof"), the allocation profiles
	// before and after it (".allocs-base.pprof", ".allocs.pprof") and its
	// execution trace (".trace"). The profiles cover the whole process:
	// the clients, the embedded NATS server and the measured component
	// alike.
	ProfileDir string
}

// Env is what a hook gets: the running infrastructure of the benchmark.
type Env struct {
	// Conn is the harness's own NATS connection, which the stream and the
	// projection use.
	Conn *nats.Conn
	// Connect opens a connection the way `quota serve` connects its
	// components to its embedded server: in-process.
	Connect func(name string) (*nats.Conn, error)
	Stream  *ledger.Stream
	// Projector is the live projection, caught up with the stream.
	Projector *projector.Projector
	// Dir is a directory the hook may write to.
	Dir string
}

// Hooks are the measured entry points of components that plug into the
// harness once they exist.
type Hooks struct {
	// Ingest appends every watch event read from r to stream, durably,
	// and returns the number of events appended. Nil: the harness converts
	// each event itself (object.Decode, Trimmed, ledger.Event) and appends
	// with Stream.AppendBatch, which is what ingest does at its core.
	Ingest func(ctx context.Context, stream *ledger.Stream, r io.Reader) (int, error)
	// Admission starts the admission responder and returns once it is
	// subscribed; it stops when ctx ends. The harness then sends
	// admission.k8s.io/v1 AdmissionReviews to AdmissionSubject(namespace),
	// with request.dryRun set or not. Nil: the admission figures are
	// reported as not measured yet.
	Admission func(ctx context.Context, env Env) error
	// AdmissionSubject is the subject admissions of a namespace are sent
	// to. Nil: "quota.admit.<namespace>", as the design names it.
	AdmissionSubject func(namespace string) string
	// Replay rebuilds a fresh projection at path from the stream up to
	// seq until and returns the last sequence it applied. Nil: the replay
	// figure is reported as not measured yet.
	Replay func(ctx context.Context, stream *ledger.Stream, path string, until uint64) (uint64, error)
}

func (c Config) withDefaults() Config {
	if c.Requests == 0 {
		c.Requests = DefaultRequests
	}
	if c.Repeats == 0 {
		c.Repeats = DefaultRepeats
	}
	if c.Log == nil {
		c.Log = io.Discard
	}
	if c.Hooks.AdmissionSubject == nil {
		c.Hooks.AdmissionSubject = func(ns string) string { return "quota.admit." + ns }
	}
	return c
}

// Validate reports every problem of c in one error wrapping ErrConfig.
func (c Config) Validate() error {
	var problems []string
	if c.Dir == "" {
		problems = append(problems, "Dir is required")
	}
	if c.SyncInterval < 0 {
		problems = append(problems, fmt.Sprintf("SyncInterval %s is negative", c.SyncInterval))
	}
	if c.Requests < 0 {
		problems = append(problems, fmt.Sprintf("Requests %d is negative", c.Requests))
	}
	if c.Repeats < 0 {
		problems = append(problems, fmt.Sprintf("Repeats %d is negative", c.Repeats))
	}
	if err := c.Workload.Validate(); err != nil {
		problems = append(problems, err.Error())
	}
	if len(problems) == 0 {
		return nil
	}
	return fmt.Errorf("%w: %s", ErrConfig, strings.Join(problems, "; "))
}
