package ledger

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// Clustered reports whether the server is a member of a JetStream cluster
// (EmbeddedConfig.Cluster).
func (e *Embedded) Clustered() bool { return e.cfg.Cluster.Enabled() }

// Quorum returns nil when this member's replica of the stream named
// stream is in contact with a quorum of its replicas: it leads them and
// has heard from enough followers within QuorumContactWindow, or it
// follows a leader it has heard from within it and is not catching up
// from a snapshot. Otherwise it returns an error wrapping ErrNoQuorum that
// says why: what this member's projection holds may then miss what the
// others append, so it must not decide from it. A server of its own is
// always its own quorum.
func (e *Embedded) Quorum(stream string) error {
	if !e.Clustered() {
		return nil
	}
	replica, err := e.replica(stream)
	if err != nil {
		return err
	}
	group := replica.RaftGroup
	// A stream's Raft group is filed under the stream's account.
	status := e.srv.Raftz(&server.RaftzOptions{AccountFilter: server.DEFAULT_GLOBAL_ACCOUNT, GroupFilter: group})
	if status != nil {
		for _, groups := range *status {
			if g, ok := groups[group]; ok {
				return quorumOf(&g, stream)
			}
		}
	}
	return fmt.Errorf("%w: this member holds no replica of stream %s (raft group %s)", ErrNoQuorum, stream, group)
}

// quorumOf judges a stream's Raft group as this member sees it.
func quorumOf(g *server.RaftzGroup, stream string) error {
	switch {
	case g.State == "LEADER":
		heard := 1 // itself
		for _, p := range g.Peers {
			if recent(p.LastSeen) {
				heard++
			}
		}
		if heard < g.QuorumNeeded {
			return fmt.Errorf("%w: this member leads stream %s but has heard from %d of the %d replicas a quorum takes within %s", ErrNoQuorum, stream, heard, g.QuorumNeeded, QuorumContactWindow)
		}
		return nil
	case g.Leader == "":
		return fmt.Errorf("%w: stream %s has no leader this member knows of (%s)", ErrNoQuorum, stream, strings.ToLower(g.State))
	case g.CatchingUp:
		return fmt.Errorf("%w: this member's replica of stream %s is catching up with its leader", ErrNoQuorum, stream)
	}
	if p, ok := g.Peers[g.Leader]; !ok || !recent(p.LastSeen) {
		name := g.Leader
		if ok && p.Name != "" {
			name = p.Name
		}
		return fmt.Errorf("%w: this member has not heard from %s, the leader of stream %s, within %s", ErrNoQuorum, name, stream, QuorumContactWindow)
	}
	return nil
}

// recent reports whether a peer last seen lastSeen ago (a Go duration, as
// nats-server's Raftz prints it; empty when never) is within
// QuorumContactWindow.
func recent(lastSeen string) bool {
	d, err := time.ParseDuration(lastSeen)
	return err == nil && d < QuorumContactWindow
}

// replica is this member's replica of stream, in the global account (the
// one the ledger's users share).
func (e *Embedded) replica(stream string) (*server.StreamDetail, error) {
	info, err := e.srv.Jsz(&server.JSzOptions{Account: server.DEFAULT_GLOBAL_ACCOUNT, Streams: true, RaftGroups: true})
	if err != nil {
		return nil, fmt.Errorf("%w: read this member's streams: %v", ErrNoQuorum, err)
	}
	for _, acc := range info.AccountDetails {
		for i, s := range acc.Streams {
			if s.Name == stream && s.RaftGroup != "" {
				return &acc.Streams[i], nil
			}
		}
	}
	return nil, fmt.Errorf("%w: this member holds no replica of stream %s", ErrNoQuorum, stream)
}

// ReplicaLastSeq is the last sequence this member's own replica of
// stream holds: read locally, it tells how far a projection fed from the
// stream could be, without asking the leader.
func (e *Embedded) ReplicaLastSeq(stream string) (uint64, error) {
	s, err := e.replica(stream)
	if err != nil {
		return 0, err
	}
	return s.State.LastSeq, nil
}

// ReadLocally makes LastSeq read the stream's last sequence from e's
// store in process, with no request, when e is a server of its own that
// holds the stream (`quota serve`'s embedded server): such a server
// stores an event before it acknowledges its append, so the read still
// sees every acknowledged event. A cluster member's replica may lag the
// quorum that acknowledged an event, so there LastSeq still asks the
// stream's leader. Call it before the stream is used.
func (s *Stream) ReadLocally(e *Embedded) {
	if !e.Clustered() {
		s.local = e
	}
}

// lastSeq is the last sequence of stream in the server's store, read in
// process; false when the server holds no such stream in the global
// account.
func (e *Embedded) lastSeq(stream string) (uint64, bool) {
	acc, err := e.srv.JszAccount(&server.JSzOptions{Account: server.DEFAULT_GLOBAL_ACCOUNT, Streams: true})
	if err != nil {
		return 0, false
	}
	for _, s := range acc.Streams {
		if s.Name == stream {
			return s.State.LastSeq, true
		}
	}
	return 0, false
}

// LameDuckShutdown stops a cluster member the way that costs the others
// least, and returns once it has stopped: it stops taking new clients,
// hands every leadership it holds (streams, consumers, the JetStream
// meta group) to another member, stops JetStream, tells its clients it
// is going (nats.go's LameDuckModeHandler) and, after
// ClusterConfig.LameDuckGracePeriod, closes their connections spread over
// LameDuckDuration, so that they reconnect to the other members a few at
// a time. A server of its own has no one to hand over to: it shuts down
// at once, as Shutdown.
func (e *Embedded) LameDuckShutdown() {
	if e.Clustered() {
		e.srv.LameDuckShutdown()
	}
	e.Shutdown()
}

// Unavailable reports whether err, from a request to JetStream, says
// that it cannot answer for now, for want of a leader (a cluster electing
// one, its members still joining, a member just back): the same request
// may succeed when made again. On a server known to run JetStream only:
// a NATS server without it answers every request with no responders too.
func Unavailable(err error) bool {
	var apiErr *jetstream.APIError
	if errors.As(err, &apiErr) && apiErr.ErrorCode == errCodeNoPeers {
		return true // members not all known online yet: a cluster starting
	}
	return resendable(err) || errors.Is(err, context.DeadlineExceeded) || errors.Is(err, nats.ErrTimeout)
}

// errCodeNoPeers is JetStream's error code for a stream its cluster
// cannot place: too few members online (JSClusterNoPeersErr).
const errCodeNoPeers jetstream.ErrorCode = 10005

// healthProblem says whether a health report of a cluster member's
// server, why (not OK), is a failure of its own store, which the member
// cannot recover from while it runs (a write error, a stream it could not
// recover, JetStream disabled on a full disk), rather than the cluster's
// state as this member sees it (no meta leader yet, a replica catching
// up, a peer gone), which passes by itself.
func healthProblem(h *server.HealthStatus) bool {
	why := h.Error
	for _, e := range h.Errors {
		why += "; " + e.Error
	}
	if h.StatusCode == http.StatusServiceUnavailable && strings.Contains(why, "not enabled") {
		return true
	}
	return strings.Contains(why, "write error") || strings.Contains(why, "could not be recovered")
}
