package projector

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"

	"github.com/nats-io/nats.go"

	"github.com/quotaledger/quota/ledger"
)

// Audit query subjects, answered by AuditResponder.
const (
	// SubjectExplain takes an ExplainRequest and replies with an
	// AuditReply whose Explanation is set.
	SubjectExplain = "quota.query.explain"
	// SubjectSnapshot takes a SnapshotRequest; the server writes a
	// snapshot of its projection (after catching up with the stream) and
	// replies with an AuditReply whose Snapshot describes it.
	SubjectSnapshot = "quota.query.snapshot"
	// snapshotsInFlightMax bounds concurrent snapshot requests: each
	// copies the whole projection.
	snapshotsInFlightMax = 2
)

// ExplainRequest asks for the explanation of a namespace's quotas, or of
// one quota by name.
type ExplainRequest struct {
	Namespace string `json:"namespace"`
	Name      string `json:"name,omitempty"`
}

// SnapshotRequest asks the server to write a snapshot now. Kind is
// SnapshotVerify (the default: a copy for comparison, not a replay
// starting point) or SnapshotPeriodic.
type SnapshotRequest struct {
	Kind string `json:"kind,omitempty"`
}

// AuditReply is the reply of the audit subjects: Error when the query
// failed, the result field otherwise.
type AuditReply struct {
	Error       string        `json:"error,omitempty"`
	Explanation *Explanation  `json:"explanation,omitempty"`
	Snapshot    *SnapshotInfo `json:"snapshot,omitempty"`
}

// AuditResponder answers the explain and snapshot subjects.
type AuditResponder struct {
	nc    *nats.Conn
	p     *Projector
	snaps *Snapshots
	log   *slog.Logger
}

// NewAuditResponder returns an AuditResponder for p on nc; snaps may be nil
// when the server keeps no snapshots (snapshot requests then fail).
func NewAuditResponder(nc *nats.Conn, p *Projector, snaps *Snapshots, log *slog.Logger) *AuditResponder {
	if log == nil {
		log = slog.Default()
	}
	return &AuditResponder{nc: nc, p: p, snaps: snaps, log: log}
}

// Run serves until ctx ends, then drains its subscriptions and waits for
// the queries in flight.
func (r *AuditResponder) Run(ctx context.Context) error {
	// Queries already received when ctx ends are answered before Run
	// returns, each within its timeout.
	handleCtx := context.WithoutCancel(ctx)
	type route struct {
		subject string
		limit   int
		fn      func(context.Context, []byte) (*AuditReply, error)
	}
	routes := []route{
		{SubjectExplain, QueriesInFlightMax, r.explain},
		{SubjectSnapshot, snapshotsInFlightMax, r.snapshot},
	}
	var subs []*nats.Subscription
	var sems []chan struct{}
	for _, rt := range routes {
		sem := make(chan struct{}, rt.limit)
		sub, err := r.nc.QueueSubscribe(rt.subject, QueueGroup, func(m *nats.Msg) {
			sem <- struct{}{}
			go func() {
				defer func() { <-sem }()
				r.respond(handleCtx, m, rt.fn)
			}()
		})
		if err != nil {
			for _, s := range subs {
				_ = s.Unsubscribe()
			}
			return fmt.Errorf("subscribe %s: %w", rt.subject, err)
		}
		subs = append(subs, sub)
		sems = append(sems, sem)
	}
	<-ctx.Done()
	var errs []error
	for i, sub := range subs {
		if err := sub.Drain(); err != nil && !errors.Is(err, nats.ErrConnectionClosed) {
			errs = append(errs, fmt.Errorf("drain %s: %w", routes[i].subject, err))
		}
	}
	for _, sub := range subs {
		WaitDrained(sub, QueryTimeout)
	}
	for i, sem := range sems {
		for range routes[i].limit {
			sem <- struct{}{}
		}
	}
	return errors.Join(errs...)
}

func (r *AuditResponder) respond(ctx context.Context, m *nats.Msg, fn func(context.Context, []byte) (*AuditReply, error)) {
	timeout := QueryTimeout
	if m.Subject == SubjectSnapshot {
		timeout = SnapshotTimeout
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	defer ledger.Survive(r.log, "answer a query", func(err error) { respondError(m, err) })
	reply, err := fn(ctx, m.Data)
	if err != nil {
		r.log.Warn("query failed", "subject", m.Subject, "err", err)
		reply = &AuditReply{Error: err.Error()}
	}
	b, err := json.Marshal(reply)
	if err != nil {
		b, _ = json.Marshal(AuditReply{Error: "encode reply: " + err.Error()})
	}
	if err := ledger.SendAnswer(r.nc, m, b); err != nil {
		r.log.Warn("query reply not sent", "subject", m.Subject, "err", err)
	}
}

func (r *AuditResponder) explain(ctx context.Context, data []byte) (*AuditReply, error) {
	var req ExplainRequest
	if err := json.Unmarshal(data, &req); err != nil {
		return nil, fmt.Errorf("bad explain request: %w", err)
	}
	if req.Namespace == "" {
		return nil, errors.New("bad explain request: namespace is required")
	}
	if err := r.p.CatchUp(ctx); err != nil {
		return nil, err
	}
	e, err := r.p.Explain(req.Namespace, req.Name)
	if err != nil {
		return nil, err
	}
	return &AuditReply{Explanation: e}, nil
}

func (r *AuditResponder) snapshot(ctx context.Context, data []byte) (*AuditReply, error) {
	var req SnapshotRequest
	if len(data) > 0 {
		if err := json.Unmarshal(data, &req); err != nil {
			return nil, fmt.Errorf("bad snapshot request: %w", err)
		}
	}
	if req.Kind == "" {
		req.Kind = SnapshotVerify
	}
	if req.Kind != SnapshotVerify && req.Kind != SnapshotPeriodic {
		return nil, fmt.Errorf("bad snapshot request: kind %q: want %s or %s", req.Kind, SnapshotVerify, SnapshotPeriodic)
	}
	if r.snaps == nil {
		return nil, errors.New("this server keeps no snapshot store")
	}
	if err := r.p.CatchUp(ctx); err != nil {
		return nil, err
	}
	info, err := r.snaps.Write(ctx, r.p, req.Kind)
	if err != nil {
		return nil, err
	}
	return &AuditReply{Snapshot: &info}, nil
}
