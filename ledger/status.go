package ledger

import (
	"context"
	"fmt"
	"time"
)

// LogStatus is what an operator checks first of the log: its extent, its
// size and limits, and where its replicas stand.
type LogStatus struct {
	Stream    string    `json:"stream"`
	FirstSeq  uint64    `json:"firstSeq"`
	FirstTime time.Time `json:"firstTime,omitzero"`
	LastSeq   uint64    `json:"lastSeq"`
	LastTime  time.Time `json:"lastTime,omitzero"`
	Messages  uint64    `json:"messages"`
	Bytes     uint64    `json:"bytes"`
	// MaxBytes and MaxAge are the stream's limits (0: none).
	MaxBytes int64         `json:"maxBytes,omitempty"`
	MaxAge   time.Duration `json:"maxAge,omitempty"`
	// Retention is the age past which the server removes events a
	// checkpoint covers (0: none); the stream itself knows nothing of
	// it, its server fills it in.
	Retention time.Duration `json:"retention,omitempty"`
	Replicas  int           `json:"replicas"`
	// Leader is the server that leads the stream's replicas ("" on a
	// single server that reports none).
	Leader string `json:"leader,omitempty"`
	// Peers are the other replicas, as the leader sees them.
	Peers []PeerStatus `json:"peers,omitempty"`
}

// PeerStatus is one replica of the log other than its leader.
type PeerStatus struct {
	Name string `json:"name"`
	// Current is set when the peer holds everything the leader has
	// committed.
	Current bool `json:"current"`
	Offline bool `json:"offline,omitempty"`
	// Lag is the operations the peer is behind the leader.
	Lag uint64 `json:"lag,omitempty"`
	// Active is how long ago the leader last heard from the peer.
	Active time.Duration `json:"active"`
}

// Status reads the log's status from JetStream.
func (s *Stream) Status(ctx context.Context) (LogStatus, error) {
	info, err := s.events.Info(ctx)
	if err != nil {
		return LogStatus{}, fmt.Errorf("status of %s: %w", s.cfg.StreamName, err)
	}
	st := LogStatus{
		Stream:   info.Config.Name,
		FirstSeq: info.State.FirstSeq, LastSeq: info.State.LastSeq,
		Messages: info.State.Msgs, Bytes: info.State.Bytes,
		MaxBytes: max(0, info.Config.MaxBytes), MaxAge: info.Config.MaxAge,
		Replicas: max(1, info.Config.Replicas),
	}
	if info.State.Msgs > 0 {
		st.FirstTime, st.LastTime = info.State.FirstTime.UTC(), info.State.LastTime.UTC()
	}
	if c := info.Cluster; c != nil {
		st.Leader = c.Leader
		for _, p := range c.Replicas {
			st.Peers = append(st.Peers, PeerStatus{Name: p.Name, Current: p.Current, Offline: p.Offline, Lag: p.Lag, Active: p.Active})
		}
	}
	return st, nil
}
