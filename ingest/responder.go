package ingest

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/quotaledger/quota/ledger"
)

// The NATS way in, for exporters that speak NATS.
const (
	// Subject is where exporters send watch events as requests.
	Subject = "quota.ingest"
	// QueueGroup spreads requests over every server subscribed, so several
	// `quota serve` replicas share the load and each request is handled
	// once.
	QueueGroup = "quota-ingest"
	// SourceHeader, when a request sets it, names the input in sources
	// ("exporter-a" gives "exporter-a:LINE"). Zero: Subject.
	SourceHeader = "Quota-Source"
	// SourceNameLengthMax is the longest source name taken from a request.
	SourceNameLengthMax = 256

	// ResponderPendingMsgsMax and ResponderPendingBytesMax bound the
	// requests waiting to be handled; beyond them NATS drops requests,
	// the exporter's request times out, and it re-sends (which the message
	// IDs make harmless).
	ResponderPendingMsgsMax  = 1024
	ResponderPendingBytesMax = 64 << 20
	// ResponderRequestTimeout bounds the handling of one request.
	ResponderRequestTimeout = time.Minute
)

// Reply is the JSON answer to a request on Subject. It is sent only after
// every valid event of the request is durably in the stream. Error is set
// when the request could not be handled (the stream is unavailable); the
// exporter re-sends it.
type Reply struct {
	Appended   int         `json:"appended"`
	Duplicates int         `json:"duplicates"`
	Skipped    int         `json:"skipped"`
	Bookmarks  int         `json:"bookmarks"`
	Rejected   []Rejection `json:"rejected"`
	// Warnings are the problems that did not stop a record (a plain
	// object's unknown field under ValidateWarn).
	Warnings []Rejection `json:"warnings,omitempty"`
	Error    string      `json:"error,omitempty"`
}

// Responder answers ingest requests on Subject: each request's payload is
// one watch event, or several as JSON lines (any format Parse reads).
type Responder struct {
	nc  *nats.Conn
	in  *Ingester
	log *slog.Logger
}

// NewResponder returns a Responder ingesting through in, logging what
// goes wrong to log (nil: slog.Default()).
func NewResponder(nc *nats.Conn, in *Ingester, log *slog.Logger) *Responder {
	if log == nil {
		log = slog.Default()
	}
	return &Responder{nc: nc, in: in, log: log}
}

// Run answers requests in QueueGroup, one at a time in the order received,
// until ctx ends (ledger.Serve, whose drain and errors it shares). When
// its Ingester has Options.States, it answers lookups on StatesSubject
// too.
func (r *Responder) Run(ctx context.Context) error {
	routes := []ledger.Route{r.route(Subject, r.handle)}
	if r.in.opts.States != nil {
		routes = append(routes, r.route(StatesSubject, r.handleStates))
	}
	return ledger.Serve(ctx, r.nc, routes...)
}

// route is subject's route, answered by handle on the subscription's
// goroutine.
func (r *Responder) route(subject string, handle func(context.Context, *nats.Msg)) ledger.Route {
	return ledger.Route{
		Subject: subject, Queue: QueueGroup,
		PendingMsgsMax: ResponderPendingMsgsMax, PendingBytesMax: ResponderPendingBytesMax,
		Handle: func(ctx context.Context, m *nats.Msg) func() {
			handle(ctx, m)
			return nil
		},
	}
}

// answer sends reply as the answer to m, unless m is a plain publish
// that nobody waits for. A failed answer is not retried: the requester
// times out and asks again, and the message IDs make a second ingest a
// no-op.
func (r *Responder) answer(m *nats.Msg, reply any) {
	data, err := json.Marshal(reply)
	if err != nil {
		panic(fmt.Sprintf("ingest: marshal %T: %v", reply, err)) // the replies always marshal
	}
	if m.Reply == "" {
		return
	}
	if err := ledger.SendAnswer(r.nc, m, data); err != nil {
		r.log.Warn("ingest reply not sent", "subject", m.Subject, "err", err)
	}
}

// handleStates answers one lookup on StatesSubject.
func (r *Responder) handleStates(ctx context.Context, m *nats.Msg) {
	ctx, cancel := context.WithTimeout(ctx, ResponderRequestTimeout)
	defer cancel()
	fail := func(err error) { r.answer(m, StatesReply{States: []ObjectState{}, Error: err.Error()}) }
	defer ledger.Survive(r.log, "answer a lookup of current states", fail)
	var req StatesRequest
	if err := json.Unmarshal(m.Data, &req); err != nil {
		fail(fmt.Errorf("bad request: %v", err))
		return
	}
	if len(req.Keys) > StatesKeysMax {
		fail(fmt.Errorf("bad request: %d keys, at most %d", len(req.Keys), StatesKeysMax))
		return
	}
	states, err := r.in.opts.States.ObjectStates(ctx, req.Keys)
	if err != nil {
		fail(err)
		return
	}
	if states == nil {
		states = []ObjectState{}
	}
	r.answer(m, StatesReply{States: states})
}

func (r *Responder) handle(ctx context.Context, m *nats.Msg) {
	ctx, cancel := context.WithTimeout(ctx, ResponderRequestTimeout)
	defer cancel()
	defer ledger.Survive(r.log, "ingest a request's records", func(err error) {
		r.answer(m, Reply{Error: err.Error(), Rejected: []Rejection{}})
	})
	name := Subject
	if h := strings.TrimSpace(m.Header.Get(SourceHeader)); h != "" {
		name = h[:min(len(h), SourceNameLengthMax)]
	}
	report, err := r.in.IngestFile(ctx, name, bytes.NewReader(m.Data))
	reply := Reply{
		Appended:   report.Appended,
		Duplicates: report.Duplicates,
		Skipped:    report.Unchanged,
		Bookmarks:  report.Bookmarks,
		Rejected:   report.Rejections,
		Warnings:   report.Warnings,
	}
	if reply.Rejected == nil {
		reply.Rejected = []Rejection{}
	}
	if err != nil {
		reply.Error = err.Error()
	}
	r.answer(m, reply)
}
