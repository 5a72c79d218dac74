package admission

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"runtime"
	"strings"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	"golang.org/x/sync/errgroup"
	admissionv1 "k8s.io/api/admission/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/quotaledger/quota/ledger"
	"github.com/quotaledger/quota/ledger/object"
	"github.com/quotaledger/quota/ledger/quota"
	"github.com/quotaledger/quota/projector"
)

// Subjects and limits of the admission responder.
const (
	// SubjectPrefix is followed by the namespace: quota.admit.<namespace>.
	SubjectPrefix = "quota.admit."
	// QueueGroup lets several servers share admission requests.
	QueueGroup = "quota-admit"
	// DefaultReservationTTL is how long an unconfirmed reservation holds.
	DefaultReservationTTL = time.Minute
	// DefaultStoreTimeout is the longest kube-apiserver takes to store an
	// object it admitted: its --request-timeout's default.
	DefaultStoreTimeout = time.Minute
	// DefaultSweepInterval is how often expired reservations are released.
	DefaultSweepInterval = time.Second
	// ReserveAttemptsMax bounds the attempts of the round that decides a
	// reserving request (see groupCommit). An attempt decides the round's
	// requests on the namespace's current view and appends their
	// reservations; one whose append another writer's came before, or
	// that must first wait for the projection, is followed by another.
	// Past it the round's requests fail with ErrContention.
	ReserveAttemptsMax = 64
	// RequestTimeout bounds the handling of one request.
	RequestTimeout = 10 * time.Second
	// InFlightMax bounds the requests the workers handle at once:
	// reserving creates waiting for their rounds, and decisions waiting
	// for the projection (see Run).
	InFlightMax = 256
	// PendingMax and PendingBytesMax bound the requests received and not
	// yet handled, per subscription; past them the connection drops requests as a slow
	// consumer's and reports it to its error handler (`quota serve`
	// logs it).
	PendingMax      = 65536
	PendingBytesMax = 256 << 20
	// SweepBatchMax bounds the reservations expired in one sweep.
	SweepBatchMax = 1024
)

// Config configures a Responder.
type Config struct {
	// ReservationTTL is how long an allowed, unconfirmed create holds its
	// charge, on the server's clock, when ReleaseByFeed is off. Zero:
	// DefaultReservationTTL.
	ReservationTTL time.Duration
	// ReleaseByFeed makes every reservation end on the feed's progress
	// (ledger.ReleaseByFeed) instead: it holds until the exporter's feed
	// of its resource shows the cluster StoreTimeout past the
	// reservation, and never ends while the feed is behind. For a ledger
	// fed by `quota export`. False: ReservationTTL ends reservations, for
	// a ledger fed by `quota ingest`.
	ReleaseByFeed bool
	// StoreTimeout is, with ReleaseByFeed, the longest the API server may
	// take to store an object after admitting it (kube-apiserver's
	// --request-timeout). Zero: DefaultStoreTimeout.
	StoreTimeout time.Duration
	// SweepInterval is how often expired reservations are released. Zero:
	// DefaultSweepInterval.
	SweepInterval time.Duration
	// Logger receives logs. Nil: slog.Default().
	Logger *slog.Logger
	// Now is the wall clock used only to decide when to append Expire
	// events (the release itself is recorded in the stream). Nil: time.Now.
	Now func() time.Time
	// Limited is the ResourceQuota admission plugin's limitedResources
	// (LoadLimitedResources reads them from kube-apiserver's admission
	// configuration file): resources that may be consumed only under a
	// quota that covers them. Nil: none, kube-apiserver's default. Every
	// replica sharing a stream should be given the same.
	Limited []quota.LimitedResource
	// Metrics, when set, counts the responder's answers (NewMetrics).
	Metrics *Metrics
	// Subscribers is how many subscriptions of the queue group take
	// requests, each delivering on a goroutine of its own, so that
	// decisions that wait for nothing are made on as many cores. Zero:
	// GOMAXPROCS.
	Subscribers int
	// Quorum, when set, says whether this server is in step with the log:
	// in contact with a quorum of the log's replicas, its projection not
	// behind (nil), or why not (an error wrapping ledger.ErrNoQuorum).
	// While it is not, a request waits for it, within RequestTimeout, and
	// then fails with code 503 saying so, and no sweep runs: a server cut
	// off from the others, or far behind them, would decide from a
	// projection that misses what they append. It is called for every
	// request and must not block. Nil: always in contact (a server of its
	// own, or one on an external NATS).
	Quorum func() error
}

// Validate reports every problem of c in one error.
func (c *Config) Validate() error {
	var problems []string
	if c.ReservationTTL < 0 {
		problems = append(problems, "ReservationTTL is negative")
	}
	if c.StoreTimeout < 0 {
		problems = append(problems, "StoreTimeout is negative")
	}
	if c.SweepInterval < 0 {
		problems = append(problems, "SweepInterval is negative")
	}
	if c.Subscribers < 0 {
		problems = append(problems, "Subscribers is negative")
	}
	if len(problems) > 0 {
		return fmt.Errorf("invalid admission config: %s", strings.Join(problems, "; "))
	}
	return nil
}

// Responder answers quota.admit.<namespace>.
type Responder struct {
	nc     *nats.Conn
	stream *ledger.Stream
	proj   *projector.Projector
	cfg    Config
	states *stateCache
	// mu guards queues: per namespace, the reserving creates waiting for
	// a round (see commit.go).
	mu     sync.Mutex
	queues map[string]*queue
}

// NewResponder returns a Responder.
func NewResponder(nc *nats.Conn, stream *ledger.Stream, proj *projector.Projector, cfg Config) (*Responder, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	cfg.ReservationTTL = cmp.Or(cfg.ReservationTTL, DefaultReservationTTL)
	cfg.StoreTimeout = cmp.Or(cfg.StoreTimeout, DefaultStoreTimeout)
	cfg.SweepInterval = cmp.Or(cfg.SweepInterval, DefaultSweepInterval)
	cfg.Subscribers = cmp.Or(cfg.Subscribers, runtime.GOMAXPROCS(0))
	cfg.Logger = cmp.Or(cfg.Logger, slog.Default())
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	return &Responder{nc: nc, stream: stream, proj: proj, cfg: cfg, states: newStateCache(proj, stream.LastSubjectSeq), queues: map[string]*queue{}}, nil
}

// Run serves admission requests and sweeps expired reservations until ctx
// ends or its subscriptions close (ledger.Serve). It takes the first
// request once the projection holds what the log held when Run started.
//
// Config.Subscribers subscriptions of the queue group share the requests.
// Each subscription's goroutine decodes the requests it is given and
// decides those that wait for nothing (dry runs, updates) itself, as they
// arrive: replies written one after the other leave the connection
// together, and a request costs no hand-off between goroutines, while the
// subscriptions together keep every core busy. A reserving create waits
// for its namespace's round (see commit.go), and a decision in a namespace
// whose view waits for the projection (see stateCache.get) would hold up
// every request behind it, so these go to one of InFlightMax workers.
func (r *Responder) Run(ctx context.Context) error {
	// Decisions read the projection, and one still folding the log (a
	// replica rebuilding its file, or restarted after a while) can hold a
	// namespace's quota without the objects that fill it, or without the
	// deletions that free it: it would allow or deny what Kubernetes
	// would not. A reservation finds out through its compare-and-swap,
	// but a dry run or a denial appends nothing. Kubernetes' quota
	// admission serves nothing before its informers have synced either.
	// Meanwhile the queue group's other replicas take the requests; with
	// none, a client is told there are no responders.
	if err := r.proj.CatchUp(ctx); err != nil {
		if ctx.Err() != nil {
			return nil
		}
		return fmt.Errorf("admission: catch up with the stream before taking requests: %w", err)
	}
	g, ctx := errgroup.WithContext(ctx)
	g.Go(func() error {
		return ledger.Serve(ctx, r.nc, ledger.Route{
			Subject: SubjectPrefix + "*", Queue: QueueGroup, Subscriptions: r.cfg.Subscribers,
			PendingMsgsMax: PendingMax, PendingBytesMax: PendingBytesMax, InFlightMax: InFlightMax,
			Handle: r.handle,
		})
	})
	g.Go(func() error {
		r.sweepUntil(ctx)
		return nil
	})
	return g.Wait()
}

// handle reads a request on its subscription's goroutine. It answers
// there a request that waits for nothing, and hands back the answer of
// one that may wait, for a worker.
func (r *Responder) handle(ctx context.Context, m *nats.Msg) func() {
	defer ledger.Survive(r.cfg.Logger, "read an admission request", func(err error) { r.failed(decoded{m: m}, err) })
	d := r.decode(m)
	if d.err != nil || !d.req.reserving() && !r.states.mayWait(d.namespace) && r.quorum() == nil {
		r.answer(ctx, d)
		return nil
	}
	return func() { r.answer(ctx, d) }
}

// decoded is a request message with its request decoded, or the error
// that made it unreadable.
type decoded struct {
	m         *nats.Msg
	namespace string
	req       *request
	err       error
	// received is when the request was taken from the subscription, when
	// the responder keeps metrics.
	received time.Time
}

func (r *Responder) decode(m *nats.Msg) decoded {
	var received time.Time
	if r.cfg.Metrics != nil {
		received = time.Now()
	}
	req, err := decodeRequest(m.Data)
	return decoded{m: m, namespace: strings.TrimPrefix(m.Subject, SubjectPrefix), req: req, err: err, received: received}
}

// answer decides a decoded request and sends the reply.
func (r *Responder) answer(ctx context.Context, d decoded) {
	ctx, cancel := context.WithTimeout(ctx, RequestTimeout)
	defer cancel()
	defer ledger.Survive(r.cfg.Logger, "answer an admission request", func(err error) { r.failed(d, err) })
	review, err := r.review(ctx, d.namespace, d.req, d.err)
	if err != nil {
		r.cfg.Logger.Warn("admission request failed", "subject", d.m.Subject, "err", err)
	}
	r.send(d.m, review)
	if r.cfg.Metrics != nil {
		r.cfg.Metrics.answered(d.mode(), review.Response, time.Since(d.received))
	}
}

// failed answers d with err, an internal error, as a failure with code 500.
func (r *Responder) failed(d decoded, err error) {
	var uid types.UID
	if d.req != nil {
		uid = d.req.UID
	}
	r.cfg.Logger.Error("admission request failed", "subject", d.m.Subject, "uid", uid, "err", err)
	r.send(d.m, reply(uid, failure(500, metav1.StatusReasonInternalError, err.Error())))
}

// send replies to m with review.
func (r *Responder) send(m *nats.Msg, review *admissionv1.AdmissionReview) {
	b, err := encodeReply(review)
	if err != nil {
		r.cfg.Logger.Error("encode admission reply", "err", err)
		return
	}
	if err := m.Respond(b); err != nil {
		r.cfg.Logger.Warn("admission reply not sent", "subject", m.Subject, "err", err)
	}
}

// request is the part of an admission.k8s.io/v1 AdmissionRequest that
// quota reads. Decoding only these fields keeps the request's other parts
// (user info, options) from costing allocations on every admission.
type request struct {
	UID       types.UID             `json:"uid"`
	Namespace string                `json:"namespace"`
	Operation admissionv1.Operation `json:"operation"`
	Object    json.RawMessage       `json:"object"`
	OldObject json.RawMessage       `json:"oldObject"`
	DryRun    *bool                 `json:"dryRun"`
	// SubResource is the subresource the request is for, empty for the
	// object itself: quota evaluates only a pod's resize and a claim's
	// status among them.
	SubResource string `json:"subResource"`
	// statusOfOther is set once the object of a status update is known
	// not to be a claim, whose status alone quota evaluates.
	statusOfOther bool
}

// reserving reports whether req is a create or update that reserves: one
// that waits for its namespace's round.
func (req *request) reserving() bool {
	return req != nil && (req.Operation == admissionv1.Create || req.Operation == admissionv1.Update) && (req.DryRun == nil || !*req.DryRun) && !req.ignored()
}

// ignored reports whether quota leaves req alone, as Kubernetes' quota
// plugin does: a request on a subresource other than an update of a pod's
// resize or of a claim's status (a status update of anything else once
// its object is read).
func (req *request) ignored() bool {
	switch req.SubResource {
	case "":
		return false
	case "resize":
		return req.Operation != admissionv1.Update
	case "status":
		return req.Operation != admissionv1.Update || req.statusOfOther
	}
	return true
}

// review answers one AdmissionReview for namespace, decoded already with
// decodeRequest's error. It always returns a reply to send; the error,
// when set, is what went wrong (the reply says it too, with code 400 for a
// bad request and 500 otherwise).
func (r *Responder) review(ctx context.Context, namespace string, req *request, err error) (*admissionv1.AdmissionReview, error) {
	var uid types.UID
	var resp *admissionv1.AdmissionResponse
	switch {
	case err != nil:
		err = fmt.Errorf("%w: %v", ErrBadRequest, err)
	case req == nil:
		err = fmt.Errorf("%w: request is missing", ErrBadRequest)
	default:
		uid = req.UID
		if err = r.awaitQuorum(ctx); err == nil {
			resp, err = r.admit(ctx, namespace, req)
		}
	}
	if err != nil {
		code, reason := int32(500), metav1.StatusReasonInternalError
		switch {
		case errors.Is(err, ErrBadRequest):
			code, reason = 400, metav1.StatusReasonBadRequest
		case errors.Is(err, ledger.ErrNoQuorum):
			code, reason = 503, metav1.StatusReasonServiceUnavailable
		}
		return reply(uid, failure(code, reason, err.Error())), err
	}
	return reply(uid, resp), nil
}

func reply(uid types.UID, resp *admissionv1.AdmissionResponse) *admissionv1.AdmissionReview {
	resp.UID = uid
	return &admissionv1.AdmissionReview{
		TypeMeta: metav1.TypeMeta{APIVersion: "admission.k8s.io/v1", Kind: "AdmissionReview"},
		Response: resp,
	}
}

func failure(code int32, reason metav1.StatusReason, msg string) *admissionv1.AdmissionResponse {
	return &admissionv1.AdmissionResponse{
		Allowed: false,
		Result:  &metav1.Status{Status: metav1.StatusFailure, Message: msg, Reason: reason, Code: code},
	}
}

func (r *Responder) admit(ctx context.Context, namespace string, req *request) (*admissionv1.AdmissionResponse, error) {
	if err := ledger.ValidateNamespace(namespace); err != nil {
		return nil, fmt.Errorf("%w: subject names no valid namespace: %v", ErrBadRequest, err)
	}
	if req.Namespace != "" && req.Namespace != namespace {
		return nil, fmt.Errorf("%w: request namespace %q on the subject of namespace %q", ErrBadRequest, req.Namespace, namespace)
	}
	op := req.Operation
	switch op {
	case admissionv1.Create, admissionv1.Update, admissionv1.Delete, admissionv1.Connect:
	default:
		return nil, fmt.Errorf("%w: unknown operation %q", ErrBadRequest, op)
	}
	if op == admissionv1.Delete || op == admissionv1.Connect || req.ignored() {
		return &admissionv1.AdmissionResponse{Allowed: true}, nil
	}
	obj, err := decodeObject(req.Object, namespace)
	if req.SubResource == "status" && (err != nil || obj.Resource != "persistentvolumeclaims") {
		// Only a claim's status is evaluated; whatever else it is, it
		// passes, as it did before it was read.
		req.statusOfOther = true
		return &admissionv1.AdmissionResponse{Allowed: true}, nil
	}
	var outside clusterScoped
	if errors.As(err, &outside) {
		// Kubernetes' quota admission passes what is outside every
		// namespace.
		return &admissionv1.AdmissionResponse{Allowed: true, Warnings: []string{outside.Error()}}, nil
	}
	if err != nil {
		return nil, fmt.Errorf("%w: object: %v", ErrBadRequest, err)
	}
	var old *object.Object
	if op == admissionv1.Update {
		if isNull(req.OldObject) {
			return nil, fmt.Errorf("%w: UPDATE without oldObject", ErrBadRequest)
		}
		if old, err = decodeObject(req.OldObject, namespace); err != nil {
			return nil, fmt.Errorf("%w: oldObject: %v", ErrBadRequest, err)
		}
	}
	if req.reserving() {
		return r.admitReserving(ctx, namespace, req, obj, old)
	}
	v, _, err := r.states.get(ctx, namespace)
	if err != nil {
		return nil, err
	}
	d := decide(v, op, obj, old, req.SubResource, r.cfg.Limited)
	if !d.allowed {
		return failure(d.code, d.reason(), d.message), nil
	}
	return &admissionv1.AdmissionResponse{Allowed: true}, nil
}

// admitReserving decides a request that reserves (a create or an
// update, not a dry run) in its namespace's next round, and waits for it.
func (r *Responder) admitReserving(ctx context.Context, namespace string, req *request, obj, old *object.Object) (*admissionv1.AdmissionResponse, error) {
	reservation := string(req.UID)
	if reservation == "" {
		reservation = NewUID()
	}
	j := &job{req: req, reservation: reservation, size: len(req.Object), done: make(chan outcome, 1)}
	if req.Operation == admissionv1.Update {
		j.update = &update{obj: obj, old: old, subresource: req.SubResource}
	} else {
		env, err := r.states.env(ctx, namespace)
		if err != nil {
			return nil, err
		}
		j.prepared = prepare(env, obj, r.cfg.Limited)
		j.prepared.reserveAs(reservation)
	}
	o, err := r.groupCommit(ctx, namespace, j)
	if err != nil {
		return nil, err
	}
	return o.resp, o.err
}

// quorum is Config.Quorum's answer, nil without one.
func (r *Responder) quorum() error {
	if r.cfg.Quorum == nil {
		return nil
	}
	return r.cfg.Quorum()
}

// quorumPoll is how often a request waiting for the quorum asks again.
const quorumPoll = 50 * time.Millisecond

// awaitQuorum returns once this server is in contact with the quorum
// (Config.Quorum), or an error wrapping ledger.ErrNoQuorum once ctx ends
// before it is.
func (r *Responder) awaitQuorum(ctx context.Context) error {
	err := r.quorum()
	if err == nil {
		return nil
	}
	waited := time.Now()
	tick := time.NewTicker(quorumPoll)
	defer tick.Stop()
	for err != nil {
		select {
		case <-ctx.Done():
			return fmt.Errorf("not decided: waited %s for this server to be in step with the log's replicas again (in contact with their quorum, its projection caught up), so that it decides on all they hold; the other servers decide: %w",
				time.Since(waited).Round(time.Millisecond), err)
		case <-tick.C:
			err = r.quorum()
		}
	}
	return nil
}

// clusterScoped is decodeObject's error for an object of a
// cluster-scoped kind, which no quota charges.
type clusterScoped string

func (c clusterScoped) Error() string {
	return string(c) + " is cluster-scoped: quotas are per namespace, and none applies"
}

// isNull reports whether a JSON value is absent or null.
func isNull(raw []byte) bool {
	return len(raw) == 0 || string(raw) == "null"
}

// decodeObject decodes an object of a request.
func decodeObject(raw []byte, namespace string) (*object.Object, error) {
	if isNull(raw) {
		return nil, errors.New("missing")
	}
	o, err := object.Decode(raw)
	if err != nil {
		return nil, err
	}
	if o.ClusterScoped() {
		return nil, clusterScoped(o.Kind)
	}
	if o.Namespace == "" {
		o.SetNamespace(namespace)
	}
	if o.Namespace != namespace {
		return nil, fmt.Errorf("object namespace %q differs from %q", o.Namespace, namespace)
	}
	return o, nil
}
