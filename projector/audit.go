package projector

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
)

// Audit query subjects, answered by Responder.
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

// explain answers an ExplainRequest with an AuditReply.
func (r *Responder) explain(ctx context.Context, data []byte) (any, error) {
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
func (r *Responder) snapshot(ctx context.Context, data []byte) (any, error) {
	var req SnapshotRequest
	if len(data) > 0 {
		if err := json.Unmarshal(data, &req); err != nil {
			return nil, fmt.Errorf("bad snapshot request: %w", err)
		}
	}
	req.Kind = cmp.Or(req.Kind, SnapshotVerify)
	if req.Kind != SnapshotVerify && req.Kind != SnapshotPeriodic {
		return nil, fmt.Errorf("bad snapshot request: kind %q: want %s or %s", req.Kind, SnapshotVerify, SnapshotPeriodic)
	}
	if r.cfg.Snapshots == nil {
		return nil, errors.New("this server keeps no snapshot store")
	}
	if err := r.p.CatchUp(ctx); err != nil {
		return nil, err
	}
	info, err := r.cfg.Snapshots.Write(ctx, r.p, req.Kind)
	if err != nil {
		return nil, err
	}
	return &AuditReply{Snapshot: &info}, nil
}
