package projector

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/nats-io/nats.go"
	corev1 "k8s.io/api/core/v1"

	"github.com/quotaledger/quota/ledger"
)

// Query subjects answered by Responder.
const (
	// SubjectDescribe takes a DescribeRequest and replies with a
	// QueryReply whose List is a ResourceQuotaList.
	SubjectDescribe = "quota.query.describe"
	// QueueGroup lets several servers share the query subjects.
	QueueGroup = "quota-query"
	// QueryTimeout bounds how long one query may wait for the projection
	// to catch up before it fails.
	QueryTimeout = 10 * time.Second
	// QueriesInFlightMax bounds the queries served at once; more wait in
	// the NATS subscription's pending buffer.
	QueriesInFlightMax = 64
)

// DescribeRequest asks for quotas: one namespace (optionally one quota by
// name), or all namespaces.
type DescribeRequest struct {
	Namespace     string `json:"namespace,omitempty"`
	Name          string `json:"name,omitempty"`
	AllNamespaces bool   `json:"allNamespaces,omitempty"`
}

// QueryReply is the reply to every query subject: Error is set when the
// query failed, and the result field otherwise.
type QueryReply struct {
	Error string                    `json:"error,omitempty"`
	List  *corev1.ResourceQuotaList `json:"list,omitempty"`
}

// Responder answers query subjects from a projection. Every query first
// waits until the projection reflects all events appended before it.
type Responder struct {
	nc  *nats.Conn
	p   *Projector
	log *slog.Logger
}

// NewResponder returns a Responder for p on nc.
func NewResponder(nc *nats.Conn, p *Projector, log *slog.Logger) *Responder {
	if log == nil {
		log = slog.Default()
	}
	return &Responder{nc: nc, p: p, log: log}
}

// Run serves until ctx ends, then drains its subscription: the queries
// already received are answered (each within QueryTimeout) before it
// returns.
func (r *Responder) Run(ctx context.Context) error {
	handleCtx := context.WithoutCancel(ctx)
	sem := make(chan struct{}, QueriesInFlightMax)
	sub, err := r.nc.QueueSubscribe(SubjectDescribe, QueueGroup, func(m *nats.Msg) {
		sem <- struct{}{}
		go func() {
			defer func() { <-sem }()
			r.respond(handleCtx, m, r.describe)
		}()
	})
	if err != nil {
		return fmt.Errorf("subscribe %s: %w", SubjectDescribe, err)
	}
	<-ctx.Done()
	err = sub.Drain()
	if err != nil && !errors.Is(err, nats.ErrConnectionClosed) {
		return fmt.Errorf("drain %s: %w", SubjectDescribe, err)
	}
	WaitDrained(sub, QueryTimeout)
	for range QueriesInFlightMax {
		sem <- struct{}{}
	}
	return nil
}

// WaitDrained waits, at most limit, until a draining subscription has
// handed its last message to its callback, or its connection closed.
func WaitDrained(sub *nats.Subscription, limit time.Duration) {
	const poll = 10 * time.Millisecond
	for deadline := time.Now().Add(limit); sub.IsValid() && time.Now().Before(deadline); {
		time.Sleep(poll)
	}
}

func (r *Responder) respond(ctx context.Context, m *nats.Msg, fn func(context.Context, []byte) (*QueryReply, error)) {
	ctx, cancel := context.WithTimeout(ctx, QueryTimeout)
	defer cancel()
	defer ledger.Survive(r.log, "answer a query", func(err error) { respondError(m, err) })
	reply, err := fn(ctx, m.Data)
	if err != nil {
		r.log.Warn("query failed", "subject", m.Subject, "err", err)
		reply = &QueryReply{Error: err.Error()}
	}
	b, err := json.Marshal(reply)
	if err != nil {
		b, _ = json.Marshal(QueryReply{Error: "encode reply: " + err.Error()})
	}
	if err := ledger.SendAnswer(r.nc, m, b); err != nil {
		r.log.Warn("query reply not sent", "subject", m.Subject, "err", err)
	}
}

// respondError answers m with err alone, in the replies' shared error
// field.
func respondError(m *nats.Msg, err error) {
	b, _ := json.Marshal(QueryReply{Error: err.Error()}) // a string field always marshals
	_ = m.Respond(b)
}

func (r *Responder) describe(ctx context.Context, data []byte) (*QueryReply, error) {
	var req DescribeRequest
	if err := json.Unmarshal(data, &req); err != nil {
		return nil, fmt.Errorf("bad describe request: %w", err)
	}
	if !req.AllNamespaces && req.Namespace == "" {
		return nil, errors.New("bad describe request: namespace is required unless allNamespaces is set")
	}
	if err := r.p.CatchUp(ctx); err != nil {
		return nil, err
	}
	list, err := r.p.Quotas(req.Namespace, req.Name, req.AllNamespaces)
	if err != nil {
		return nil, err
	}
	return &QueryReply{List: list}, nil
}
