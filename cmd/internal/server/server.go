package server

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"os"
	"path/filepath"
	"runtime/debug"
	"strings"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"golang.org/x/sync/errgroup"

	"github.com/quotaledger/quota/ingest"
	"github.com/quotaledger/quota/ledger"
	"github.com/quotaledger/quota/projector"
	"github.com/quotaledger/quota/projector/admission"
)

// Defaults of Config.
const (
	DefaultDataDir = "./data"
	DefaultListen  = "127.0.0.1:4222"
	// ProjectionFile is the projection's file name inside the data dir.
	ProjectionFile = "projection.db"
	// JetStreamDir is the embedded JetStream store inside the data dir.
	JetStreamDir = "jetstream"
	// connectTimeout bounds the first connection to NATS.
	connectTimeout = 10 * time.Second
)

// ErrPayloadLimit is returned by Run when the NATS server in use takes
// smaller messages than the largest event the stream does: an event
// between the two would pass the ledger's own check and then fail.
var ErrPayloadLimit = errors.New("NATS payload limit under the largest event")

// Config configures a Server.
type Config struct {
	// DataDir holds the projection file and, when embedded, the JetStream
	// store. Zero: DefaultDataDir.
	DataDir string
	// Listen is the host:port of the embedded NATS server. Zero:
	// DefaultListen. Ignored with NATSURL.
	Listen string
	// AuthFile, when set, is a nats-server configuration file whose
	// authorization block the embedded server requires of its clients
	// (ledger.EmbeddedConfig.AuthFile). Ignored with NATSURL.
	AuthFile string
	// NATSURL, when set, is an external NATS (with JetStream) to use
	// instead of the embedded server.
	NATSURL string
	// ServerName names this server: the embedded server's name (a
	// cluster member's, unique among them) and the server `quota status`
	// names. Zero: the host name, a pod's name in a StatefulSet.
	ServerName string
	// Cluster, when its Routes are set, makes the embedded server a
	// member of a JetStream cluster (ledger.ClusterConfig). Ignored with
	// NATSURL.
	Cluster ledger.ClusterConfig
	// NATSOptions are added to the connection to NATSURL: credentials and
	// TLS for a secured server.
	NATSOptions []nats.Option
	// SyncInterval is the embedded JetStream's sync policy: zero syncs
	// every write before acknowledging it (always); a positive interval
	// flushes periodically. Ignored with NATSURL (the cluster decides).
	SyncInterval time.Duration
	// Stream is the ledger stream's configuration; its zero value is the
	// documented default.
	Stream ledger.Config
	// Projector configures the fold; Path is set from DataDir.
	Projector projector.Config
	// Admission configures the admission responder (reservation TTL).
	Admission admission.Config
	// Snapshots configures the projection's snapshots in the JetStream
	// object store; its zero value is the documented default.
	Snapshots projector.SnapshotConfig
	// Retention, when set, is the age past which events covered by a
	// checkpoint leave the log (projector.Retainer). Zero: the log keeps
	// every event.
	Retention time.Duration
	// ArchiveDir, when set with Retention, is the directory the events
	// are archived to before they leave the log. Zero: none.
	ArchiveDir string
	// MetricsListen, when set, is the HOST:PORT (port 0: any free port)
	// where Prometheus metrics are served, on MetricsPath.
	MetricsListen string
	// Logger receives structured logs. Nil: slog.Default().
	Logger *slog.Logger
	// Ready, when set, is called once every part is serving, with the
	// client URL of the NATS in use.
	Ready func(natsURL string)
}

// Validate reports every problem of c in one error.
func (c *Config) Validate() error {
	var problems []string
	if c.NATSURL == "" && c.Listen != "" {
		if _, _, err := splitHostPort(c.Listen); err != nil {
			problems = append(problems, err.Error())
		}
	}
	if c.SyncInterval < 0 {
		problems = append(problems, "sync interval is negative")
	}
	if c.MetricsListen != "" {
		if _, _, err := splitHostPort(c.MetricsListen); err != nil {
			problems = append(problems, "metrics "+err.Error())
		}
	}
	if len(problems) > 0 {
		return fmt.Errorf("invalid server config: %s", strings.Join(problems, "; "))
	}
	return nil
}

// Run runs the ledger until ctx ends.
func Run(ctx context.Context, cfg Config) (err error) {
	if err := cfg.Validate(); err != nil {
		return err
	}
	cfg.DataDir = cmp.Or(cfg.DataDir, DefaultDataDir)
	cfg.Listen = cmp.Or(cfg.Listen, DefaultListen)
	cfg.ServerName = cmp.Or(cfg.ServerName, hostName())
	log := cmp.Or(cfg.Logger, slog.Default())
	if err := os.MkdirAll(cfg.DataDir, 0o750); err != nil {
		return fmt.Errorf("create data dir: %w", err)
	}
	// Locked before anything in the directory is opened: bbolt locks the
	// projection file, but the embedded server would have started on the
	// JetStream store, which nothing else locks, by then.
	unlock, err := lockDataDir(cfg.DataDir)
	if err != nil {
		return err
	}
	defer unlock()

	p := &parts{url: cfg.NATSURL, storeDir: filepath.Join(cfg.DataDir, JetStreamDir)}
	if p.url == "" {
		if p.embedded, err = startEmbedded(cfg, p.storeDir, log); err != nil {
			return err
		}
		// A cluster member hands its leaderships over and lets its
		// clients move before it stops (a server of its own just stops).
		defer p.embedded.LameDuckShutdown()
		p.url = p.embedded.ClientURL()
	}
	js, err := p.connect(ctx, cfg, log)
	if err != nil {
		return err
	}
	defer p.nc.Close()

	if err := p.openProjection(ctx, js, cfg, log); err != nil {
		return err
	}
	defer p.proj.Close()
	defer func() {
		if errors.Is(err, projector.ErrWrite) {
			err = fmt.Errorf("%w; it holds every event to seq %d: once its disk has room (or a file size limit is lifted), start serve again and it goes on from there; the stream keeps every event", err, p.proj.Checkpointed())
		}
	}()

	if err := p.build(ctx, js, cfg, log); err != nil {
		return err
	}
	if p.metrics != nil {
		defer p.metrics.ln.Close()
	}
	return p.run(ctx, cfg, log)
}

// openProjection opens the checkpoints' store, then the projection,
// from its file or a checkpoint (openProjection).
func (p *parts) openProjection(ctx context.Context, js jetstream.JetStream, cfg Config, log *slog.Logger) error {
	pcfg := cfg.Projector
	pcfg.Path = filepath.Join(cfg.DataDir, ProjectionFile)
	pcfg.Logger = log
	p.path = pcfg.Path
	err := p.untilAvailable(ctx, log, "the snapshot store to be opened", func() (err error) {
		octx, cancel := p.attempt(ctx)
		defer cancel()
		p.snaps, err = projector.OpenSnapshots(octx, js, cfg.Snapshots)
		return err
	})
	if err != nil {
		return err
	}
	p.proj, err = openProjection(ctx, pcfg, p.stream, p.snaps, log)
	return err
}

// parts are what Run starts: the connection to NATS, the stream, the
// projection and the parts that serve from them.
type parts struct {
	// url is the NATS in use; embedded, when not nil, is the embedded
	// server behind it, storing under storeDir.
	url      string
	embedded *ledger.Embedded
	storeDir string
	// path is the projection file.
	path string

	nc     *nats.Conn
	stream *ledger.Stream
	proj   *projector.Projector
	snaps  *projector.Snapshots
	// retainer, when not nil, trims the log (--retention), archiving to
	// archive when that is not nil.
	retainer *projector.Retainer
	archive  *ledger.Archive
	// responders start with the projection; adm starts once the
	// projection has caught up with the stream.
	responders []interface{ Run(context.Context) error }
	adm        *admission.Responder
	// metrics, when not nil, serves Prometheus metrics and the probes.
	metrics *metricsServer
	// admitting is set once admission takes requests (ReadyPath).
	admitting atomic.Bool
	// quorum, on a cluster member, says whether it is in contact with
	// the quorum of the log's replicas; nil otherwise.
	quorum *quorumWatch
}

// build makes the parts that serve from the projection: ingest, the
// metrics server, the admission responder, the snapshots and the query
// responders. On success the caller closes p.metrics' listener.
func (p *parts) build(ctx context.Context, js jetstream.JetStream, cfg Config, log *slog.Logger) error {
	// A plain manifest is skipped only when the projection, caught up
	// with the log, holds its object in the state it states.
	in, err := ingest.New(p.stream, ingest.Options{States: ingest.ProjectionStates(p.proj)})
	if err != nil {
		return err
	}
	acfg := cfg.Admission
	acfg.Logger = log
	if p.member() {
		p.quorum = newQuorumWatch(p.embedded, p.stream.Config().StreamName, p.proj.Applied)
		acfg.Quorum = p.quorum.Err
	}
	if err := p.buildRetention(ctx, js, cfg, log); err != nil {
		return err
	}
	if cfg.MetricsListen != "" {
		reg, m, err := newRegistry(p.proj)
		if err != nil {
			return err
		}
		reg.MustRegister(storeCollector{js: js, stream: p.stream, dataDir: cfg.DataDir, embedded: p.embedded != nil, retainer: p.retainer})
		acfg.Metrics = m
		ready := func() (bool, string) {
			if p.admitting.Load() && p.quorum != nil && p.quorum.Err() != nil {
				return false, "admissions wait: " + p.quorum.Err().Error()
			}
			if p.admitting.Load() {
				feeds, err := p.proj.Feeds()
				if err != nil {
					return true, "cannot read the feeds: " + err.Error()
				}
				return true, feedsBehind(feeds, time.Now())
			}
			return false, fmt.Sprintf("catching up with the stream: applied seq %d; admissions wait for the projection", p.proj.Applied())
		}
		if p.metrics, err = listenMetrics(cfg.MetricsListen, reg, ready, log); err != nil {
			return err
		}
	}
	closeMetrics := func() {
		if p.metrics != nil {
			p.metrics.ln.Close()
			p.metrics = nil
		}
	}
	if p.adm, err = admission.NewResponder(p.nc, p.stream, p.proj, acfg); err != nil {
		closeMetrics()
		return err
	}
	retention := time.Duration(0)
	if p.retainer != nil {
		retention = cfg.Retention
	}
	// Admission starts apart from these, once the projection has caught
	// up with the stream (see run).
	p.responders = []interface{ Run(context.Context) error }{
		projector.NewResponder(p.nc, p.proj, projector.ResponderConfig{Server: cfg.ServerName, Stream: p.stream,
			Snapshots: p.snaps, Retention: retention, Archive: p.archive, Logger: log}),
		ingest.NewResponder(p.nc, in, log),
	}
	return nil
}

// buildRetention makes the Retainer that trims the log with --retention,
// and opens (creating it) the archive of --archive.
func (p *parts) buildRetention(ctx context.Context, js jetstream.JetStream, cfg Config, log *slog.Logger) error {
	if cfg.Retention <= 0 {
		return nil
	}
	if !p.stream.PurgeAllowed() {
		// Serving goes on: a retention that cannot apply is no reason to
		// stop answering admissions. The log grows as before; status says
		// it keeps every event.
		log.Error("--retention is not applied: the stream was made denying purges, which JetStream cannot lift, so the log keeps every event; to bound it, start a new log (another --data, or another NATS)",
			"retention", cfg.Retention, "stream", p.stream.Config().StreamName, "err", ledger.ErrPurgeDenied)
		return nil
	}
	var err error
	if cfg.ArchiveDir != "" {
		if p.archive, err = ledger.OpenArchive(cfg.ArchiveDir, true); err != nil {
			return err
		}
	}
	p.retainer, err = projector.NewRetainer(ctx, js, p.stream, p.snaps, projector.RetentionConfig{
		Retention: cfg.Retention,
		Archive:   p.archive,
		TempDir:   cfg.DataDir,
		// The host name names a pod; the process tells apart two servers
		// of one machine.
		Holder:   fmt.Sprintf("%s/%d", cfg.ServerName, os.Getpid()),
		Replicas: cfg.Stream.Replicas,
		Storage:  cfg.Stream.Storage,
		Logger:   log,
	})
	return err
}

// run runs the parts until ctx ends or one of them fails, and returns
// once all of them have stopped.
func (p *parts) run(ctx context.Context, cfg Config, log *slog.Logger) error {
	runCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	stopped, stopProjection := p.startProjection(ctx, cancel)
	defer stopProjection()
	g, gctx := errgroup.WithContext(runCtx)
	g.Go(func() error { return projector.NewSnapshotter(p.proj, p.snaps, log).Run(gctx) })
	if p.retainer != nil {
		g.Go(func() error { return p.retainer.Run(gctx) })
	}
	for _, r := range p.responders {
		g.Go(func() error { return r.Run(gctx) })
	}
	if p.metrics != nil {
		g.Go(func() error { return p.metrics.Run(gctx) })
	}
	if p.embedded != nil {
		g.Go(func() error {
			return watchStore(gctx, p.embedded, storeCheckInterval, p.storeDir, log)
		})
	}
	g.Go(func() error { return watchStream(gctx, p.stream, p.stream.Identity(), streamCheckInterval, log) })
	if p.quorum != nil {
		g.Go(func() error { return p.quorum.Run(gctx, log) })
	}
	// The responders subscribe as they start; announce readiness only once
	// every subscription is registered with the server, so a client that
	// waits for the announcement never meets "no responders".
	// The projector's responder holds several subscriptions (describe,
	// versions, explain, snapshot, status): at least four more.
	if err := waitSubscribed(gctx, p.nc, len(p.responders)+3); err != nil {
		cancel()
		return errors.Join(err, stopped(g.Wait()))
	}
	// Admission decides on the projection, which must first hold what the
	// log held at the start (admission.Responder.Run waits for it too):
	// ingest, describe (which waits for the log's end) and explain serve
	// meanwhile.
	err := p.untilAvailable(gctx, log, "the stream's position", func() error { return awaitProjection(gctx, p.proj, p.stream, log) })
	if err != nil {
		cancel()
		if errors.Is(err, context.Canceled) {
			err = nil // a stop; stopped reports a failure that caused it
		}
		if err = errors.Join(err, stopped(g.Wait())); err == nil {
			log.Info("quota ledger stopped while catching up", "applied_seq", p.proj.Applied())
		}
		return err
	}
	subscribed := p.nc.NumSubscriptions()
	g.Go(func() error { return p.adm.Run(gctx) })
	if err := waitSubscribed(gctx, p.nc, subscribed+1); err != nil {
		cancel()
		return errors.Join(err, stopped(g.Wait()))
	}
	p.admitting.Store(true)
	if cfg.Ready != nil {
		cfg.Ready(p.url)
	}
	log.Info("quota ledger serving", p.serving()...)
	if err := stopped(g.Wait()); err != nil {
		return err
	}
	log.Info("quota ledger stopped", "applied_seq", p.proj.Applied())
	return nil
}

// startProjection runs the projection in its own goroutine. The
// projection outlives the responders: on a stop, what they received is
// answered first, and a describe waiting for the projection to reach the
// stream's end, or a create deciding again after a conflict, needs it to
// keep applying events. It stops once they have returned; if it fails
// first, it calls cancel to stop them. stopped stops the projection, once
// the responders' g.Wait has returned err, and reports what failed; a
// cancellation is a stop. The caller defers stop.
func (p *parts) startProjection(ctx context.Context, cancel context.CancelFunc) (stopped func(err error) error, stop context.CancelFunc) {
	projCtx, stopProjection := context.WithCancel(context.WithoutCancel(ctx))
	projDone := make(chan error, 1)
	go func() {
		err := p.proj.Run(projCtx)
		if err != nil && projCtx.Err() == nil {
			cancel()
		}
		projDone <- err
	}()
	stopped = func(err error) error {
		stopProjection()
		perr := <-projDone
		if errors.Is(perr, context.Canceled) {
			perr = nil
		}
		if errors.Is(err, context.Canceled) {
			err = nil
		}
		return errors.Join(perr, err)
	}
	return stopped, stopProjection
}

// catchUpLogInterval is how often a long catch-up at start reports its
// progress.
const catchUpLogInterval = 10 * time.Second

// awaitProjection waits until proj has applied what the stream held when
// called, logging its progress while it is behind.
func awaitProjection(ctx context.Context, proj *projector.Projector, stream *ledger.Stream, log *slog.Logger) error {
	last, err := stream.LastSeq(ctx)
	if err != nil {
		return fmt.Errorf("read the stream's position: %w", err)
	}
	if proj.Applied() >= last {
		return nil
	}
	log.Info("projection catching up with the stream; admissions wait for it", "applied_seq", proj.Applied(), "stream_seq", last)
	started := time.Now()
	tick := time.NewTicker(catchUpLogInterval)
	defer tick.Stop()
	done := make(chan error, 1)
	go func() { done <- proj.WaitApplied(ctx, last) }()
	for {
		select {
		case err := <-done:
			if ctx.Err() != nil {
				return ctx.Err() // a stop, or a failure the caller reports
			}
			if err != nil {
				return fmt.Errorf("catch up with the stream: %w", err)
			}
			log.Info("projection caught up", "applied_seq", proj.Applied(), "took", time.Since(started).Round(time.Millisecond))
			return nil
		case <-tick.C:
			log.Info("projection catching up", "applied_seq", proj.Applied(), "stream_seq", last)
		}
	}
}

// storeCheckInterval is how often serve asks the embedded server whether
// it can still serve its store.
const storeCheckInterval = 2 * time.Second

// subscribeTimeout bounds the wait for the responders' subscriptions.
const subscribeTimeout = 10 * time.Second

func waitSubscribed(ctx context.Context, nc *nats.Conn, n int) error {
	deadline := time.Now().Add(subscribeTimeout)
	for nc.NumSubscriptions() < n {
		if time.Now().After(deadline) {
			return fmt.Errorf("responders did not subscribe within %s", subscribeTimeout)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(5 * time.Millisecond):
		}
	}
	if err := nc.Flush(); err != nil {
		return fmt.Errorf("flush NATS subscriptions: %w", err)
	}
	return nil
}

// hostName is this machine's name, a pod's name in a StatefulSet.
func hostName() string {
	name, err := os.Hostname()
	if err != nil || name == "" {
		return "unknown"
	}
	return name
}

// serving is what the line saying the ledger serves names: where, what
// it has applied, and the Go runtime's memory limit if it has one.
func (p *parts) serving() []any {
	attrs := []any{"nats", p.url, "projection", p.path, "applied_seq", p.proj.Applied()}
	if p.metrics != nil {
		attrs = append(attrs, "metrics", p.metrics.URL())
	}
	if limit := debug.SetMemoryLimit(-1); limit < math.MaxInt64 {
		attrs = append(attrs, "memory_limit", fmt.Sprintf("%.0fMiB", float64(limit)/(1<<20)))
	}
	return attrs
}
