package projector

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"

	"github.com/nats-io/nats.go"
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
	// server, when set, is the server's name: it also answers snapshot
	// requests on MemberSubject(SubjectSnapshot, server).
	server string
}

// Member makes r answer snapshot requests addressed to the server named
// server too (MemberSubject), and returns r.
func (r *AuditResponder) Member(server string) *AuditResponder {
	r.server = server
	return r
}

// NewAuditResponder returns an AuditResponder for p on nc; snaps may be nil
// when the server keeps no snapshots (snapshot requests then fail).
func NewAuditResponder(nc *nats.Conn, p *Projector, snaps *Snapshots, log *slog.Logger) *AuditResponder {
	return &AuditResponder{nc: nc, p: p, snaps: snaps, log: cmp.Or(log, slog.Default())}
}

// Run serves until ctx ends, then drains its subscriptions and waits for
// the queries in flight.
func (r *AuditResponder) Run(ctx context.Context) error {
	routes := []queryRoute{
		{SubjectExplain, QueriesInFlightMax, QueryTimeout, r.explain},
		{SubjectSnapshot, snapshotsInFlightMax, SnapshotTimeout, r.snapshot},
	}
	if r.server != "" {
		routes = append(routes, queryRoute{MemberSubject(SubjectSnapshot, r.server), snapshotsInFlightMax, SnapshotTimeout, r.snapshot})
	}
	return serveQueries(ctx, r.nc, r.log, routes)
}

// explain answers an ExplainRequest with an AuditReply.
func (r *AuditResponder) explain(ctx context.Context, data []byte) (any, error) {
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

// snapshot answers a SnapshotRequest with an AuditReply.
func (r *AuditResponder) snapshot(ctx context.Context, data []byte) (any, error) {
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
