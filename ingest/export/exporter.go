package export

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/prometheus/client_golang/prometheus"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/leaderelection"
	"k8s.io/client-go/tools/leaderelection/resourcelock"

	"github.com/quotaledger/quota/ledger"
)

// Exporter streams a cluster into the ledger. Build it with New and run
// it with Run.
type Exporter struct {
	cfg       Config
	log       *slog.Logger
	stream    *ledger.Stream
	rest      *rest.RESTClient
	typed     *rest.RESTClient
	meta      metadata.Interface
	client    kubernetes.Interface
	discovery discovery.DiscoveryInterface
	metrics   *metrics
	window    *window

	checkpoints *checkpoints
	// points are the feed's points noted and not yet appended.
	points feedPoints
	// access is what the last check of whether this replica could lead
	// found (access.go).
	access accessState

	mu      sync.Mutex
	leading bool
	streams map[string]*running
}

// running is a stream and how to stop it.
type running struct {
	s      *stream
	cancel context.CancelFunc
	done   chan struct{}
}

// New checks cfg and builds the clients of an Exporter. It does not reach
// the API server or NATS yet.
func New(cfg Config) (*Exporter, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	cfg = cfg.withDefaults()
	kc := rest.CopyConfig(cfg.Kubernetes)
	if kc.QPS == 0 {
		kc.QPS, kc.Burst = DefaultAPIQPS, DefaultAPIBurst
	}
	kc.UserAgent = "quota-export"
	raw := rest.CopyConfig(kc)
	raw.NegotiatedSerializer = scheme.Codecs.WithoutConversion()
	rc, err := rest.UnversionedRESTClientFor(raw)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrInvalidConfig, err)
	}
	// Protobuf where the API server has it (protobuf.go): its own clients
	// read it, so it encodes each watch event in it anyway.
	pb := rest.CopyConfig(raw)
	pb.AcceptContentTypes, pb.ContentType = AcceptProtobuf, runtime.ContentTypeProtobuf
	typed, err := rest.UnversionedRESTClientFor(pb)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrInvalidConfig, err)
	}
	meta, err := metadata.NewForConfig(kc)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrInvalidConfig, err)
	}
	client, err := kubernetes.NewForConfig(pb)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrInvalidConfig, err)
	}
	// Discovery requests are bounded: a hung one would stop every later
	// discovery.
	dc := rest.CopyConfig(kc)
	dc.Timeout = RequestTimeout
	discoveryClient, err := discovery.NewDiscoveryClientForConfig(dc)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrInvalidConfig, err)
	}
	m := newMetrics()
	if cfg.Registry != nil {
		if err := m.register(cfg.Registry); err != nil {
			return nil, fmt.Errorf("register the exporter's metrics: %w", err)
		}
	}
	return &Exporter{
		cfg: cfg, log: cfg.Log, stream: cfg.Stream, rest: rc, typed: typed, meta: meta, client: client,
		discovery: discoveryClient, metrics: m,
		window:  newWindow(cfg.InFlightMax, m),
		streams: map[string]*running{},
	}, nil
}

// Run opens the checkpoint bucket, then takes part in the leader election
// until ctx ends: while it leads, it streams. It returns nil once ctx has
// ended and every stream has stopped.
func (x *Exporter) Run(ctx context.Context) error {
	cp, err := retry(ctx, x.log, "open the checkpoint bucket "+x.cfg.CheckpointBucket, func() (*checkpoints, error) {
		return openCheckpoints(ctx, x.cfg.JetStream, x.cfg.CheckpointBucket, max(1, x.stream.Config().Replicas))
	})
	if err != nil {
		if ctx.Err() != nil {
			return nil
		}
		return err
	}
	x.checkpoints = cp
	checked := make(chan struct{})
	go func() {
		defer close(checked)
		x.checkAccessLoop(ctx)
	}()
	defer func() { <-checked }()
	for ctx.Err() == nil {
		x.elect(ctx)
	}
	return nil
}

// elect runs one leader election: it waits for the lease, streams while
// it holds it, and returns when it loses it or ctx ends.
func (x *Exporter) elect(ctx context.Context) {
	prior := x.leaseHolder(ctx)
	lock := &acquireLock{Interface: &resourcelock.LeaseLock{
		LeaseMeta:  metav1.ObjectMeta{Namespace: x.cfg.LeaseNamespace, Name: x.cfg.LeaseName},
		Client:     x.client.CoordinationV1(),
		LockConfig: resourcelock.ResourceLockConfig{Identity: x.cfg.Identity},
	}}
	led := make(chan struct{})
	le, err := leaderelection.NewLeaderElector(leaderelection.LeaderElectionConfig{
		Lock:          lock,
		LeaseDuration: x.cfg.LeaseDuration,
		RenewDeadline: x.cfg.RenewDeadline,
		RetryPeriod:   x.cfg.RetryPeriod,
		// Not released at a stop: a standby takes over once the lease
		// has run out, when this replica's last append is behind it.
		ReleaseOnCancel: false,
		Name:            x.cfg.LeaseName,
		Callbacks: leaderelection.LeaderCallbacks{
			OnStartedLeading: func(lctx context.Context) {
				defer close(led)
				x.lead(lctx, prior != "" && prior != x.cfg.Identity, prior)
			},
			OnStoppedLeading: func() {},
			OnNewLeader: func(identity string) {
				if identity != x.cfg.Identity {
					x.log.Info("standing by: another replica streams", "leader", identity, "lease", x.cfg.LeaseNamespace+"/"+x.cfg.LeaseName)
				}
			},
		},
	})
	if err != nil {
		x.log.Error("cannot run the leader election", "err", err)
		sleep(ctx, x.cfg.RetryPeriod)
		return
	}
	le.Run(ctx)
	if lock.acquired.Load() {
		// Run started OnStartedLeading in a goroutine of its own and
		// cancelled its context: wait until the streams have stopped.
		<-led
	}
	if ctx.Err() == nil {
		x.log.Warn("lost the lease: streams stopped; standing for election again", "lease", x.cfg.LeaseNamespace+"/"+x.cfg.LeaseName)
	}
}

// acquireLock notes whether the elector ever wrote the lease as its
// holder: then Run has started OnStartedLeading.
type acquireLock struct {
	resourcelock.Interface
	acquired atomic.Bool
}

func (l *acquireLock) Create(ctx context.Context, r resourcelock.LeaderElectionRecord) error {
	err := l.Interface.Create(ctx, r)
	if err == nil && r.HolderIdentity == l.Identity() {
		l.acquired.Store(true)
	}
	return err
}

func (l *acquireLock) Update(ctx context.Context, r resourcelock.LeaderElectionRecord) error {
	err := l.Interface.Update(ctx, r)
	if err == nil && r.HolderIdentity == l.Identity() {
		l.acquired.Store(true)
	}
	return err
}

// leaseHolder is who holds the lease now, "" when nobody does or it
// cannot be read.
func (x *Exporter) leaseHolder(ctx context.Context) string {
	l, err := x.client.CoordinationV1().Leases(x.cfg.LeaseNamespace).Get(ctx, x.cfg.LeaseName, metav1.GetOptions{})
	if err != nil {
		if !apierrors.IsNotFound(err) && ctx.Err() == nil {
			x.log.Warn("cannot read the lease", "lease", x.cfg.LeaseNamespace+"/"+x.cfg.LeaseName, "err", err)
		}
		return ""
	}
	if l.Spec.HolderIdentity == nil {
		return ""
	}
	return *l.Spec.HolderIdentity
}

// lead streams while ctx (the lease) lasts. A takeover from another
// replica relists everything and resyncs; otherwise each resource resumes
// from its checkpoint.
func (x *Exporter) lead(ctx context.Context, takeover bool, prior string) {
	x.mu.Lock()
	x.leading = true
	x.mu.Unlock()
	x.metrics.leader.Set(1)
	if takeover {
		x.log.Info("leading: took the lease over; every resource is listed and resynced", "from", prior, "identity", x.cfg.Identity)
	} else {
		x.log.Info("leading: each resource resumes from its checkpoint, or lists and resyncs without one", "identity", x.cfg.Identity)
	}
	defer func() {
		x.stopAll()
		x.mu.Lock()
		x.leading = false
		x.mu.Unlock()
		x.metrics.leader.Set(0)
	}()
	progressed := make(chan struct{})
	go func() {
		defer close(progressed)
		x.appendProgress(ctx)
	}()
	defer func() { <-progressed }()
	tick := time.NewTicker(x.cfg.DiscoveryInterval)
	defer tick.Stop()
	for {
		x.reconcile(ctx, takeover)
		// Resources found later have no stream of this leader's to
		// take over: they list, or resume, as at any start.
		takeover = false
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
	}
}

// reconcile discovers the resources to stream, starts the new ones and
// stops those the API server no longer serves. A group that fails
// discovery keeps its streams as they are.
func (x *Exporter) reconcile(ctx context.Context, takeover bool) {
	d, err := discover(x.discovery)
	if err != nil {
		x.log.Error("discovery failed; the streams keep running as they are, discovery is tried again", "in", x.cfg.DiscoveryInterval, "err", err)
		return
	}
	x.log.Debug("discovered", "resources", len(d.resources), "failedGroups", len(d.failed))
	for group, e := range d.failed {
		x.log.Warn("discovery of an API group failed; its streams keep running as they are", "group", group, "err", e)
	}
	x.mu.Lock()
	defer x.mu.Unlock()
	for name, r := range x.streams {
		if _, ok := d.resources[name]; ok {
			continue
		}
		if _, failed := d.failed[r.s.res.GVR.Group]; failed {
			continue
		}
		x.log.Info("the API server no longer serves this resource: its stream stops", "resource", name)
		r.cancel()
		<-r.done
		delete(x.streams, name)
		r.s.gone(ctx)
		x.metrics.forget(name)
	}
	names := make([]string, 0, len(d.resources))
	for name := range d.resources {
		names = append(names, name)
	}
	slices.Sort(names)
	for _, name := range names {
		if _, ok := x.streams[name]; ok {
			continue
		}
		if err := x.start(ctx, d.resources[name], takeover); err != nil {
			x.log.Error("cannot start the stream; tried again at the next discovery", "resource", name, "err", err)
		}
	}
	x.metrics.streams.Set(float64(len(x.streams)))
}

// start starts the stream of res, from its checkpoint unless this is a
// takeover. x.mu is held.
func (x *Exporter) start(ctx context.Context, res resource, takeover bool) error {
	resumeRV, reason := "", ReasonInitial
	if takeover {
		reason = ReasonTakeover
	} else {
		got, err := retry(ctx, x.log, "read the checkpoint of "+res.Name(), func() (cpResult, error) {
			c, ok, err := x.checkpoints.get(ctx, res.Name())
			return cpResult{c, ok}, err
		})
		if err != nil {
			return err
		}
		if got.ok {
			resumeRV = got.cp.ResourceVersion
		}
	}
	sctx, cancel := context.WithCancel(ctx)
	s, err := newStream(sctx, x, res, resumeRV, reason)
	if err != nil {
		cancel()
		return err
	}
	r := &running{s: s, cancel: cancel, done: make(chan struct{})}
	x.streams[res.Name()] = r
	go func() {
		defer close(r.done)
		s.run(sctx)
	}()
	x.log.Debug("stream started", "resource", res.Name(), "metadataOnly", res.MetadataOnly, "resume", resumeRV)
	return nil
}

type cpResult struct {
	cp checkpoint
	ok bool
}

// stopAll stops every stream and waits for them.
func (x *Exporter) stopAll() {
	x.mu.Lock()
	defer x.mu.Unlock()
	for _, r := range x.streams {
		r.cancel()
	}
	for name, r := range x.streams {
		<-r.done
		delete(x.streams, name)
	}
	x.metrics.streams.Set(0)
	x.metrics.synced.Set(0)
}

// Identity is this replica's name in the leader election.
func (x *Exporter) Identity() string { return x.cfg.Identity }

// Ready reports whether the exporter is ready, and why not: a standby
// once it could lead (the API server reachable, its lists, watches and
// Lease allowed, checked every AccessCheckInterval); a leader once every
// stream has listed (or resumed) into the log, and while every watch
// keeps up (none has waited FeedBehind for the version it asked for).
func (x *Exporter) Ready() (bool, string) {
	x.mu.Lock()
	defer x.mu.Unlock()
	if !x.leading {
		switch checked, problem := x.access.get(); {
		case !checked:
			return false, "checking that this replica could lead"
		case problem != "":
			return false, "could not lead: " + problem
		}
		return true, "standing by"
	}
	if len(x.streams) == 0 {
		return false, "discovering resources"
	}
	var waiting []string
	for name, r := range x.streams {
		select {
		case <-r.s.synced:
		default:
			waiting = append(waiting, name)
		}
	}
	x.metrics.synced.Set(float64(len(x.streams) - len(waiting)))
	if len(waiting) > 0 {
		slices.Sort(waiting)
		return false, fmt.Sprintf("%d of %d resources not yet synced: %v", len(waiting), len(x.streams), waiting)
	}
	var behind []string
	now := time.Now()
	for name, r := range x.streams {
		if d, late := r.s.behind(now); late {
			behind = append(behind, fmt.Sprintf("%s %s", name, d.Round(time.Second)))
		}
	}
	if len(behind) > 0 {
		slices.Sort(behind)
		return false, "watches behind the API server (no event or bookmark reached the version asked for): " + strings.Join(behind, ", ")
	}
	return true, fmt.Sprintf("leading, %d resources synced", len(x.streams))
}

// logNamespaces are the namespaces of which the log holds any event.
func (x *Exporter) logNamespaces(ctx context.Context) ([]string, error) {
	st, err := x.cfg.JetStream.Stream(ctx, x.stream.Config().StreamName)
	if err != nil {
		return nil, err
	}
	info, err := st.Info(ctx, jetstream.WithSubjectFilter(ledger.SubjectsAll))
	if err != nil {
		return nil, err
	}
	var out []string
	for subject := range info.State.Subjects {
		ns, err := ledger.NamespaceOf(subject)
		if err != nil || ns == "" {
			continue
		}
		out = append(out, ns)
	}
	return out, nil
}

// versionsTimeout bounds the wait for the ledger's digests of a
// resource's versions: the server's own query timeout, and a margin.
const versionsTimeout = 15 * time.Second

// logVersions asks the ledger for its digests of resource's object
// versions per namespace (projector.SubjectVersions). It returns nil when
// the ledger cannot say (no server answers the subject, or the query
// fails): every namespace is then resynced.
func (x *Exporter) logVersions(ctx context.Context, resource string) map[string]string {
	req, _ := json.Marshal(ledger.VersionsRequest{Resource: resource}) // a string field always marshals
	ctx, cancel := context.WithTimeout(ctx, versionsTimeout)
	defer cancel()
	msg, err := x.cfg.JetStream.Conn().RequestWithContext(ctx, ledger.SubjectVersions, req)
	var reply ledger.VersionsReply
	if err == nil {
		err = json.Unmarshal(msg.Data, &reply)
	}
	if err == nil && reply.Error != "" {
		err = errors.New(reply.Error)
	}
	if err != nil {
		x.log.Warn("cannot compare the list with the log; resyncing every namespace", "resource", resource, "err", err)
		return nil
	}
	if reply.Digests == nil {
		reply.Digests = map[string]string{}
	}
	return reply.Digests
}

// Probe paths of ListenAndServe.
const (
	MetricsPath = "/metrics"
	HealthPath  = "/healthz"
	ReadyPath   = "/readyz"
)

// Handler serves gatherer's metrics at MetricsPath, HealthPath (200 while
// the process runs) and ReadyPath (see Ready).
func (x *Exporter) Handler(gatherer prometheus.Gatherer) http.Handler {
	mux := http.NewServeMux()
	mux.Handle(MetricsPath, promhttpHandler(gatherer))
	mux.HandleFunc(HealthPath, func(w http.ResponseWriter, _ *http.Request) {
		fmt.Fprintln(w, "ok")
	})
	mux.HandleFunc(ReadyPath, func(w http.ResponseWriter, _ *http.Request) {
		ok, why := x.Ready()
		if !ok {
			w.WriteHeader(http.StatusServiceUnavailable)
		}
		fmt.Fprintln(w, why)
	})
	return mux
}

// Serve serves Handler on l until ctx ends.
func (x *Exporter) Serve(ctx context.Context, l net.Listener, gatherer prometheus.Gatherer) error {
	srv := &http.Server{Handler: x.Handler(gatherer), ReadHeaderTimeout: 10 * time.Second}
	go func() {
		<-ctx.Done()
		shut, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		defer cancel()
		_ = srv.Shutdown(shut)
	}()
	if err := srv.Serve(l); err != nil && !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}

func sleep(ctx context.Context, d time.Duration) {
	select {
	case <-ctx.Done():
	case <-time.After(d):
	}
}

// Attach opens the ledger's event stream on js, trying again with backoff
// while NATS is unreachable or the ledger has not made its stream yet,
// until ctx ends.
func Attach(ctx context.Context, js jetstream.JetStream, log *slog.Logger) (*ledger.Stream, error) {
	return retry(ctx, log, "open the ledger's event stream", func() (*ledger.Stream, error) {
		return ledger.Attach(ctx, js, ledger.Config{})
	})
}
