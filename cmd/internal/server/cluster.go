package server

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/quotaledger/quota/ledger"
)

// Timings of a cluster member.
const (
	// clusterWaitLogInterval is how often a member waiting for its
	// cluster (a leader to be elected, its peers to start) says so.
	clusterWaitLogInterval = 10 * time.Second
	// clusterRetryWait is the pause between two requests a member makes
	// while its cluster cannot answer them.
	clusterRetryWait = 250 * time.Millisecond
	// quorumCheckInterval is how often a member checks that it is in
	// contact with the quorum of the event stream's replicas.
	quorumCheckInterval = 250 * time.Millisecond
	// streamOpenTimeout bounds one attempt to open a stream. Just after
	// a cluster's members start, nats-server (2.15) sometimes creates a
	// stream and loses the answer; the next attempt finds it made.
	streamOpenTimeout = 2 * time.Second
	// metaLeaderPoll bounds one request a starting member makes to see
	// whether its cluster has a JetStream meta leader.
	metaLeaderPoll = time.Second
)

// logMember logs the cluster the embedded server is a member of, and
// warns of settings that lose what a cluster is for.
func logMember(cfg Config, log *slog.Logger) {
	c := cfg.Cluster
	log.Info("member of a JetStream cluster", "server", cfg.ServerName, "cluster", c.Name,
		"cluster_listen", net.JoinHostPort(c.Host, strconv.Itoa(c.Port)), "routes", strings.Join(c.Routes, ","),
		"replicas", max(1, cfg.Stream.Replicas))
	if cfg.SyncInterval > 0 {
		log.Warn("every member syncs its writes to disk only every --sync interval: an event a quorum acknowledged can be lost if its members lose power within it (nats-server's lazy sync lost acknowledged writes under Jepsen's tests); --sync always, the default, syncs each write on each member",
			"sync", cfg.SyncInterval)
	}
	if r := max(1, cfg.Stream.Replicas); r < len(c.Routes) {
		log.Warn("the log has fewer copies than the cluster has members: losing a member that holds one loses what only it holds; --replicas 3 on three members keeps every event on each",
			"replicas", r, "members", len(c.Routes))
	}
}

// member reports whether this server is an embedded cluster member.
func (p *parts) member() bool { return p.embedded != nil && p.embedded.Clustered() }

// untilAvailable calls f, and on a cluster member calls it again while
// it fails for want of a JetStream leader (ledger.Unavailable: members
// still starting, an election), saying every clusterWaitLogInterval what
// it waits for. It returns f's last error, or nil once ctx ends.
func (p *parts) untilAvailable(ctx context.Context, log *slog.Logger, what string, f func() error) error {
	err := f()
	if !p.member() {
		return err
	}
	started, told := time.Now(), time.Now()
	for err != nil && ledger.Unavailable(err) {
		if time.Since(told) >= clusterWaitLogInterval {
			told = time.Now()
			log.Info("waiting for the JetStream cluster to answer: its members starting, or electing a leader", "for", what,
				"waited", time.Since(started).Round(time.Second), "err", err)
		}
		t := time.NewTimer(clusterRetryWait)
		select {
		case <-ctx.Done():
			t.Stop()
			return err
		case <-t.C:
		}
		err = f()
	}
	return err
}

// attempt bounds one attempt to open a stream on a cluster member
// (streamOpenTimeout); elsewhere it is ctx as it is.
func (p *parts) attempt(ctx context.Context) (context.Context, context.CancelFunc) {
	if !p.member() {
		return ctx, func() {}
	}
	return context.WithTimeout(ctx, streamOpenTimeout)
}

// quorumWatch keeps whether this cluster member may decide: its replica
// of the event stream in contact with a quorum of the replicas
// (ledger.Embedded.Quorum), and its projection in step with that replica,
// having applied what the replica held projectionLagMax ago (after a
// partition heals, or while the projection's consumer moves to another
// member, it is behind, and decisions on it would be stale). It checks
// every quorumCheckInterval: what admission asks before each decision
// (admission.Config.Quorum), and /readyz.
type quorumWatch struct {
	emb     *ledger.Embedded
	stream  string
	applied func() uint64
	// last is the last check's error; nil inside: in contact.
	last atomic.Pointer[error]
	// held are the replica's last sequences at the recent checks, oldest
	// first: what the projection must have applied by now.
	held []heldAt
}

// heldAt is the replica's last sequence at a check.
type heldAt struct {
	at  time.Time
	seq uint64
}

// projectionLagMax is how far behind its replica of the log a member's
// projection may be, in time, for the member to decide.
const projectionLagMax = ledger.QuorumContactWindow

func newQuorumWatch(emb *ledger.Embedded, stream string, applied func() uint64) *quorumWatch {
	q := &quorumWatch{emb: emb, stream: stream, applied: applied}
	q.check()
	return q
}

// check asks again, and returns the answer and whether it changed.
func (q *quorumWatch) check() (error, bool) {
	err := q.emb.Quorum(q.stream)
	if err == nil {
		err = q.inStep(time.Now())
	}
	was := q.last.Swap(&err)
	return err, was == nil || (*was == nil) != (err == nil)
}

// inStep records the replica's last sequence now and says whether the
// projection has applied what the replica held projectionLagMax ago (the
// oldest record, until there is one as old).
func (q *quorumWatch) inStep(now time.Time) error {
	seq, err := q.emb.ReplicaLastSeq(q.stream)
	if err != nil {
		return nil // no replica here: nothing to keep step with
	}
	q.held = append(q.held, heldAt{now, seq})
	for len(q.held) > 1 && now.Sub(q.held[1].at) >= projectionLagMax {
		q.held = q.held[1:]
	}
	due := q.held[0]
	if applied := q.applied(); applied < due.seq {
		return fmt.Errorf("%w: this member's projection has applied seq %d, behind the %d its replica of the log held %s ago: it decides again once caught up",
			ledger.ErrNoQuorum, applied, due.seq, now.Sub(due.at).Round(time.Millisecond))
	}
	return nil
}

// Err is the last check's answer: nil while in contact.
func (q *quorumWatch) Err() error {
	if err := q.last.Load(); err != nil {
		return *err
	}
	return nil
}

// Run checks until ctx ends, logging each change.
func (q *quorumWatch) Run(ctx context.Context, log *slog.Logger) error {
	tick := time.NewTicker(quorumCheckInterval)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-tick.C:
		}
		err, changed := q.check()
		switch {
		case !changed:
		case err != nil:
			log.Warn("out of step with the log's replicas: admissions here wait, and fail when it does not pass in time; the other members decide", "err", err)
		default:
			log.Info("in step with the log's replicas again: admissions decided here again")
		}
	}
}
