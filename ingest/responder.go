package ingest

import (
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
	Error      string      `json:"error,omitempty"`
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

// Run subscribes in QueueGroup and answers requests until ctx ends; then it
// drains the subscription, answering the requests already received, and
// returns once the subscription is closed.
func (r *Responder) Run(ctx context.Context) error {
	// Handling outlives ctx while draining: requests already accepted are
	// answered, each within ResponderRequestTimeout.
	handleCtx := context.WithoutCancel(ctx)
	sub, err := r.nc.QueueSubscribe(Subject, QueueGroup, func(m *nats.Msg) {
		r.handle(handleCtx, m)
	})
	if err != nil {
		return fmt.Errorf("subscribe %s: %w", Subject, err)
	}
	if err := sub.SetPendingLimits(ResponderPendingMsgsMax, ResponderPendingBytesMax); err != nil {
		_ = sub.Unsubscribe()
		return fmt.Errorf("subscribe %s: %w", Subject, err)
	}
	closed := sub.StatusChanged(nats.SubscriptionClosed)
	// A round trip to the server makes the subscription effective before
	// Run is seen to be serving.
	if err := r.nc.Flush(); err != nil {
		_ = sub.Unsubscribe()
		return fmt.Errorf("subscribe %s: %w", Subject, err)
	}
	select {
	case <-ctx.Done():
	case <-closed:
		return fmt.Errorf("%w: %s", ErrResponderStopped, Subject)
	}
	if err := sub.Drain(); err != nil {
		return fmt.Errorf("drain %s: %w", Subject, err)
	}
	<-closed
	return nil
}

func (r *Responder) handle(ctx context.Context, m *nats.Msg) {
	ctx, cancel := context.WithTimeout(ctx, ResponderRequestTimeout)
	defer cancel()
	defer ledger.Survive(r.log, "ingest a request's records", func(err error) {
		if m.Reply != "" {
			data, _ := json.Marshal(Reply{Error: err.Error(), Rejected: []Rejection{}}) // always marshals
			_ = m.Respond(data)
		}
	})
	name := Subject
	if h := strings.TrimSpace(m.Header.Get(SourceHeader)); h != "" {
		if len(h) > SourceNameLengthMax {
			h = h[:SourceNameLengthMax]
		}
		name = h
	}
	report, err := r.in.ingestBytes(ctx, name, m.Data)
	reply := Reply{
		Appended:   report.Appended,
		Duplicates: report.Duplicates,
		Skipped:    report.Unchanged,
		Bookmarks:  report.Bookmarks,
		Rejected:   report.Rejections,
	}
	if reply.Rejected == nil {
		reply.Rejected = []Rejection{}
	}
	if err != nil {
		reply.Error = err.Error()
	}
	data, merr := json.Marshal(reply)
	if merr != nil {
		panic(fmt.Sprintf("ingest: marshal reply: %v", merr)) // a Reply always marshals
	}
	if m.Reply == "" {
		return // a plain publish: nobody waits for the answer
	}
	// A failed reply is not retried: the requester times out and re-sends,
	// and the message IDs make the second ingest a no-op.
	if err := ledger.SendAnswer(r.nc, m, data); err != nil {
		r.log.Warn("ingest reply not sent", "err", err)
	}
}
