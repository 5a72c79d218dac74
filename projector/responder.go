package projector

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"sync"
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
	// QueriesInFlightMax bounds the queries of one subject answered at
	// once; more wait in the subscription's pending buffer.
	QueriesInFlightMax = 64
	// QueriesPendingMax and QueriesPendingBytesMax bound the queries of
	// one subject received and not yet answered; past them the connection
	// drops queries as a slow consumer's, and their clients time out.
	QueriesPendingMax      = 4096
	QueriesPendingBytesMax = 64 << 20
)

// DescribeRequest asks for quotas: one namespace (optionally one quota by
// name), or all namespaces.
type DescribeRequest struct {
	Namespace     string `json:"namespace,omitempty"`
	Name          string `json:"name,omitempty"`
	AllNamespaces bool   `json:"allNamespaces,omitempty"`
}

// QueryReply is the reply to the describe subject: Error is set when the
// query failed, and the result field otherwise.
type QueryReply struct {
	Error string                    `json:"error,omitempty"`
	List  *corev1.ResourceQuotaList `json:"list,omitempty"`
}

// Responder answers the query subjects from a projection: describe and
// versions (this file), explain and snapshot (audit.go), and status
// (status.go). Every query first waits until the projection reflects all
// events appended before it.
type Responder struct {
	nc  *nats.Conn
	p   *Projector
	cfg ResponderConfig
	log *slog.Logger

	mu       sync.Mutex
	webhooks map[string]HeardWebhook
}

// ResponderConfig says what a Responder serves besides the projection's
// describe, versions and explain queries.
type ResponderConfig struct {
	// Server, when set, names this server: it also answers the status and
	// snapshot subjects on MemberSubject(subject, Server).
	Server string
	// Stream, when set, is the log the status subject describes. Nil: no
	// status subject.
	Stream *ledger.Stream
	// Snapshots is the store snapshot requests write to and the status
	// lists the checkpoints of. Nil: snapshot requests fail.
	Snapshots *Snapshots
	// Retention and Archive are the log's retention and archive, shown
	// by the status. Zero: none.
	Retention time.Duration
	Archive   *ledger.Archive
	// Logger receives the queries that failed. Nil: slog.Default().
	Logger *slog.Logger
}

// NewResponder returns a Responder for p on nc.
func NewResponder(nc *nats.Conn, p *Projector, cfg ResponderConfig) *Responder {
	return &Responder{nc: nc, p: p, cfg: cfg, log: cmp.Or(cfg.Logger, slog.Default()), webhooks: map[string]HeardWebhook{}}
}

// Run serves until ctx ends, then drains its subscriptions: the queries
// already received are answered (each within its subject's timeout)
// before it returns. It returns ledger.ErrSubscriptionClosed if a
// subscription closes first. With a Stream, it keeps the newest status
// of every webhook replica it hears from (at most webhooksMax).
func (r *Responder) Run(ctx context.Context) error {
	routes := []queryRoute{
		{SubjectDescribe, QueriesInFlightMax, QueryTimeout, r.describe},
		{ledger.SubjectVersions, QueriesInFlightMax, QueryTimeout, r.versions},
		{SubjectExplain, QueriesInFlightMax, QueryTimeout, r.explain},
		{SubjectSnapshot, snapshotsInFlightMax, SnapshotTimeout, r.snapshot},
	}
	if r.cfg.Stream != nil {
		sub, err := r.nc.Subscribe(SubjectWebhookStatusPrefix+"*", r.heard)
		if err != nil {
			return fmt.Errorf("subscribe %s*: %w", SubjectWebhookStatusPrefix, err)
		}
		defer sub.Unsubscribe()
		routes = append(routes, queryRoute{SubjectStatus, QueriesInFlightMax, QueryTimeout, r.status})
	}
	if r.cfg.Server != "" {
		// The snapshot and status subjects, asked of this server alone.
		for _, rt := range routes[3:] {
			routes = append(routes, queryRoute{MemberSubject(rt.subject, r.cfg.Server), rt.limit, rt.timeout, rt.answer})
		}
	}
	return serveQueries(ctx, r.nc, r.log, routes)
}

// queryRoute is one query subject: at most limit queries of it are
// answered at once, each within timeout; answer returns the reply to
// send.
type queryRoute struct {
	subject string
	limit   int
	timeout time.Duration
	answer  func(context.Context, []byte) (any, error)
}

// serveQueries answers routes on nc until ctx ends (ledger.Serve), then
// answers the queries received before it returns.
func serveQueries(ctx context.Context, nc *nats.Conn, log *slog.Logger, routes []queryRoute) error {
	served := make([]ledger.Route, len(routes))
	for i, rt := range routes {
		served[i] = ledger.Route{
			Subject: rt.subject, Queue: QueueGroup,
			PendingMsgsMax: QueriesPendingMax, PendingBytesMax: QueriesPendingBytesMax,
			InFlightMax: rt.limit,
			Handle: func(ctx context.Context, m *nats.Msg) func() {
				return func() { respond(ctx, nc, log, m, rt) }
			},
		}
	}
	return ledger.Serve(ctx, nc, served...)
}

// respond answers m with rt's reply, or with the error that stopped it
// in the replies' shared error field.
func respond(ctx context.Context, nc *nats.Conn, log *slog.Logger, m *nats.Msg, rt queryRoute) {
	ctx, cancel := context.WithTimeout(ctx, rt.timeout)
	defer cancel()
	defer ledger.Survive(log, "answer a query", func(err error) { respondError(m, err) })
	reply, err := rt.answer(ctx, m.Data)
	if err != nil {
		log.Warn("query failed", "subject", m.Subject, "err", err)
		reply = &QueryReply{Error: err.Error()}
	}
	b, encoded := reply.(encodedReply)
	if !encoded {
		if b, err = json.Marshal(reply); err != nil {
			b, _ = json.Marshal(QueryReply{Error: "encode reply: " + err.Error()})
		}
	}
	if err := ledger.SendAnswer(nc, m, b); err != nil {
		log.Warn("query reply not sent", "subject", m.Subject, "err", err)
	}
}

// respondError answers m with err alone, in the replies' shared error
// field.
func respondError(m *nats.Msg, err error) {
	b, _ := json.Marshal(QueryReply{Error: err.Error()}) // a string field always marshals
	_ = m.Respond(b)
}

// describe answers a DescribeRequest with a QueryReply.
func (r *Responder) describe(ctx context.Context, data []byte) (any, error) {
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
	b, err := r.p.quotaReply(req.Namespace, req.Name, req.AllNamespaces)
	if err != nil {
		return nil, err
	}
	return encodedReply(b), nil
}

// encodedReply is a reply an answer has already encoded: respond sends it
// as it is.
type encodedReply []byte

// versions answers a ledger.VersionsRequest with a ledger.VersionsReply,
// once the projection reflects everything appended before it.
func (r *Responder) versions(ctx context.Context, data []byte) (any, error) {
	var req ledger.VersionsRequest
	if err := json.Unmarshal(data, &req); err != nil {
		return nil, fmt.Errorf("bad versions request: %w", err)
	}
	if req.Resource == "" {
		return nil, errors.New("bad versions request: resource is required")
	}
	if err := r.p.CatchUp(ctx); err != nil {
		return nil, err
	}
	digests, err := r.p.VersionDigests(req.Resource)
	if err != nil {
		return nil, err
	}
	return &ledger.VersionsReply{Digests: digests}, nil
}
