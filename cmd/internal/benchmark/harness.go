package benchmark

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/quotaledger/quota/ledger"
	"github.com/quotaledger/quota/ledger/ledgertest/workload"
	"github.com/quotaledger/quota/projector"
)

// Names of the figures, in report order.
const (
	FigureRawPublish        = "raw JetStream publish"
	FigureIngest            = "ingest (durable)"
	FigureRawRead           = "raw JetStream ordered read"
	FigureProjection        = "projection"
	FigureRawRequest1       = "raw request-reply, 1 client"
	FigureRawRequest1P50    = "raw request-reply p50, 1 client"
	FigureRawRequest1P99    = "raw request-reply p99, 1 client"
	FigureRawRequest16      = "raw request-reply, 16 clients"
	FigureDescribe1         = "describe query, 1 client"
	FigureDescribe1P99      = "describe query p99, 1 client"
	FigureDescribe16        = "describe query, 16 clients"
	FigureAdmitDry1         = "admission dry-run, 1 client"
	FigureAdmitDry1P50      = "admission dry-run p50, 1 client"
	FigureAdmitDry1P99      = "admission dry-run p99, 1 client"
	FigureAdmitDry16        = "admission dry-run, 16 clients"
	FigureRawAppend1        = "raw compare-and-swap append, 1 client"
	FigureRawAppend1P50     = "raw compare-and-swap append p50, 1 client"
	FigureRawAppend1P99     = "raw compare-and-swap append p99, 1 client"
	FigureAdmitReserve1     = "admission reserving, 1 client"
	FigureAdmitReserve1P50  = "admission reserving p50, 1 client"
	FigureAdmitReserve1P99  = "admission reserving p99, 1 client"
	FigureAdmitReserve16    = "admission reserving, 16 clients"
	FigureAdmitReserve32    = "admission reserving, 32 clients"
	FigureReplay            = "replay"
	FigurePeakRSSIngest     = "peak RSS, generate and ingest"
	FigurePeakRSSProjection = "peak RSS, projection and queries"
	FigurePeakRSSReserving  = "peak RSS, reserving admissions"
	FigurePeakRSSReplay     = "peak RSS, replay"
	FigureProjectionFile    = "projection file size"
)

// Targets (2-core machine).
const (
	// ProjectionRateMin is the projection rate target in events/s.
	ProjectionRateMin = 100_000
	// CeilingShareMin is the share of its ceiling a figure must reach.
	CeilingShareMin = 0.5
	// AdmissionP99Max is the single-client admission p99 target.
	AdmissionP99Max = time.Millisecond
	// KubernetesPodsPerSecond1 and KubernetesPodsPerSecond32 are
	// kube-apiserver's own quota admission with etcd on a machine like
	// this one, creating pods in one namespace under a quota, with 1 and
	// 32 clients; reserving admissions must reach KubernetesFactor times
	// each.
	KubernetesPodsPerSecond1  = 114
	KubernetesPodsPerSecond32 = 570
	KubernetesFactor          = 10
)

// rssTargets are the peak RSS targets of every phase, each for a
// workload of at least its events and live objects; the largest one a
// workload reaches applies.
var rssTargets = []struct {
	events, live int
	max          float64
}{
	{200_000, 20_000, 256 << 20},
	{1_000_000, 150_000, 512 << 20},
}

// rssTarget is the RSS target of the largest size w reaches, as text
// and in bytes; 0 for none.
func rssTarget(w workload.Config) (string, float64) {
	text, limit := "", 0.0
	for _, t := range rssTargets {
		if w.Events >= t.events && w.LiveObjectsMax >= t.live {
			text, limit = fmt.Sprintf("< %.0f MiB at %d events, %d live", t.max/(1<<20), t.events, t.live), t.max
		}
	}
	return text, limit
}

// withTarget sets f's RSS target for w, checked if f was measured.
func withTarget(f Figure, w workload.Config) Figure {
	text, limit := rssTarget(w)
	if limit == 0 {
		return f
	}
	f.Target = text
	if f.Status == Measured {
		met := f.Value < limit
		f.Met = &met
	}
	return f
}

// peakWithTarget is peakFigure with the RSS target the workload reaches,
// if any, checked.
func peakWithTarget(name string, w workload.Config, sampled memSample) Figure {
	return withTarget(peakFigure(name, "", sampled), w)
}

func halfOfCeiling(_, ratio float64) bool { return ratio >= CeilingShareMin }

// run is the state of one Run.
type run struct {
	cfg    Config
	rep    *Report
	url    string
	srv    *ledger.Embedded
	nc     *nats.Conn
	js     jetstream.JetStream
	stream *ledger.Stream
	log    io.Writer
	// pods are admission requests built from pods of the stream.
	pods [][]byte
	// podObjects are the same pods' objects.
	podObjects []json.RawMessage
	// namespaces seen in the stream, for the per-namespace queries.
	namespaces []string
	// echo is the request-reply ceiling's spec while its responder is up.
	echo *requestSpec
	// mem samples the memory of the phase under way, labelled with the
	// figure being measured.
	mem *memSampler
	// workloadEnd is the stream's last sequence once the workload is in
	// it, before the admissions append their reservations: what the
	// replay rebuilds.
	workloadEnd uint64
}

// Run measures every figure on the stream cfg.Workload describes and
// returns the report. A figure that fails is reported as Failed with its
// error; Run itself fails only when the infrastructure cannot start.
func Run(ctx context.Context, cfg Config) (*Report, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	cfg = cfg.withDefaults()
	gen, err := workload.New(cfg.Workload)
	if err != nil {
		return nil, err
	}
	rep := &Report{
		Workload:     gen.Config(),
		SyncInterval: cfg.SyncInterval,
		Requests:     cfg.Requests,
		Repeats:      cfg.Repeats,
		GoVersion:    runtime.Version(),
		MemoryLimit:  memoryLimit(),
		CPUs:         runtime.NumCPU(),
		Started:      time.Now().UTC(),
	}
	srv, err := ledger.StartEmbedded(ledger.EmbeddedConfig{
		Port:         ledger.RandomPort,
		StoreDir:     filepath.Join(cfg.Dir, "jetstream"),
		SyncInterval: cfg.SyncInterval,
	})
	if err != nil {
		return nil, fmt.Errorf("benchmark: %w", err)
	}
	defer srv.Shutdown()
	r := &run{cfg: cfg, rep: rep, url: srv.ClientURL(), srv: srv, log: cfg.Log}
	if err := r.open(ctx); err != nil {
		return nil, err
	}
	defer r.nc.Close()

	r.phase(FigureRawPublish, UnitEventsPerSecond, r.rawPublish)
	if err := r.dropRawStream(ctx); err != nil {
		return nil, fmt.Errorf("benchmark: delete the raw publish stream: %w", err)
	}
	r.startPeak(FigureIngest)
	r.phase(FigureIngest, UnitEventsPerSecond, r.ingest, ceiling(FigureRawPublish, "≥ 0.5 × ceiling", halfOfCeiling))
	r.add(peakWithTarget(FigurePeakRSSIngest, r.cfg.Workload, r.mem.end()))
	r.phase(FigureRawRead, UnitEventsPerSecond, r.rawRead)
	r.startPeak(FigureProjection)

	p, stop, err := r.projection()
	if err == nil {
		r.measureQueries(p, Env{Conn: r.nc, Connect: r.connect, Stream: r.stream, Projector: p, Dir: cfg.Dir})
		stop()
	} else {
		r.requests()()
		for _, name := range []string{FigureDescribe1, FigureAdmitDry1, FigureReplay} {
			r.add(Figure{Name: name, Status: Failed, Note: "no projection: " + err.Error()})
		}
		r.addProjectionPeak(rep)
	}
	rep.Duration = time.Since(rep.Started)
	rep.settle()
	return rep, nil
}

// startPeak starts the peak RSS of a phase, labelled part. Each peak
// covers what the ledger does, not the ceilings measured before it: their
// garbage is returned to the system first.
func (r *run) startPeak(part string) {
	debug.FreeOSMemory()
	resetPeakRSS()
	r.mem = startMemSampler(part, r.cfg.ProfileDir)
}

// open connects to the embedded server and opens the ledger's stream on
// it. On success the caller closes r.nc.
func (r *run) open(ctx context.Context) error {
	// The ledger's components connect as `quota serve` connects them to
	// its embedded server: in-process. The clients of the request-reply
	// measurements connect through the network, as clients do.
	nc, err := r.connect("benchmark")
	if err != nil {
		return fmt.Errorf("benchmark: connect: %w", err)
	}
	js, err := jetstream.New(nc)
	if err != nil {
		nc.Close()
		return fmt.Errorf("benchmark: %w", err)
	}
	stream, err := ledger.Open(ctx, js, ledger.Config{})
	if err != nil {
		nc.Close()
		return fmt.Errorf("benchmark: %w", err)
	}
	stream.ReadLocally(r.srv)
	r.nc, r.js, r.stream = nc, js, stream
	return nil
}

// measureQueries measures what is measured on the projection p: its
// file, the request-reply ceiling, describe, admission and replay, with
// their peak RSS.
func (r *run) measureQueries(p *projector.Projector, env Env) {
	// The file is measured before the queries: reserving admissions
	// add objects of their own.
	if fi, err := os.Stat(filepath.Join(r.cfg.Dir, "projection.db")); err == nil {
		r.add(Figure{Name: FigureProjectionFile, Unit: UnitBytes, Value: float64(fi.Size()), Status: Measured,
			Note: fmt.Sprintf("%.0f bytes per live object at the end of the stream, before the queries", float64(fi.Size())/float64(max(1, r.rep.Stats.Live)))})
	}
	r.mem.at("the request-reply ceiling")
	stopEcho := r.requests()
	r.mem.at("the describe queries")
	r.describe(p)
	r.mem.at("the dry-run admissions")
	// The reserving admissions hold a reservation for every pod they
	// admit (nothing reports the pods, as `quota export` would): the
	// state grows past the workload's live objects, and their peak is a
	// figure of its own.
	reserving := false
	startReserving := func() {
		r.addProjectionPeak(r.rep)
		r.startPeak(FigurePeakRSSReserving)
		reserving = true
	}
	r.admission(env, startReserving)
	if !reserving { // the admissions stopped before
		startReserving()
	}
	stopEcho()
	r.add(peakFigure(FigurePeakRSSReserving, "", r.mem.end()))
	r.noteReservations(p)
	// `quota replay` runs in a process of its own: its peak is that
	// process's.
	r.mem = nil
	peak, hwm := r.replay()
	r.add(replayPeak(r.cfg.Workload, peak, hwm))
}

// noteReservations adds to the reserving peak's note how many
// reservations the projection holds open at its end.
func (r *run) noteReservations(p *projector.Projector) {
	f := r.rep.Figure(FigurePeakRSSReserving)
	if f == nil {
		return
	}
	n := p.View().Bucket([]byte("reserved"))
	if n == nil {
		return
	}
	f.Note = fmt.Sprintf("%d reservations open at its end, beside the workload's %d live objects; ", n.Len(), r.rep.Stats.Live) + f.Note
}

// replayPeak is the figure of the replay process's peak RSS (hwm, its
// VmHWM, and peak, its largest sample), with its target.
func replayPeak(w workload.Config, peak memSample, hwm int64) Figure {
	f := Figure{Name: FigurePeakRSSReplay, Unit: UnitBytes, Status: Failed, Note: "the replay did not run"}
	if hwm > 0 {
		f.Value, f.Status = float64(hwm), Measured
		f.Note = "the replay's own process (the server's memory is the projection's figure); " + peak.note()
	}
	return withTarget(f, w)
}

// addProjectionPeak adds the peak RSS of the projection and the queries,
// the figure the memory target applies to.
func (r *run) addProjectionPeak(rep *Report) {
	r.add(peakWithTarget(FigurePeakRSSProjection, rep.Workload, r.mem.end()))
}

// option adjusts a figure before it is added.
type option func(*Figure)

func ceiling(name, target string, check func(v, ratio float64) bool) option {
	return func(f *Figure) { f.Ceiling, f.Target, f.check = name, target, check }
}

func target(text string, check func(v, ratio float64) bool) option {
	return func(f *Figure) { f.Target, f.check = text, check }
}

func (r *run) add(f Figure) {
	if f.Status == "" {
		f.Status = Measured
	}
	r.rep.Figures = append(r.rep.Figures, f)
	switch f.Status {
	case Measured:
		fmt.Fprintf(r.log, "benchmark: %s: %s\n", f.Name, valueText(f.Value, f.Unit))
	default:
		fmt.Fprintf(r.log, "benchmark: %s: %s %s\n", f.Name, f.Status, f.Note)
	}
}

// phase runs measure, bounded by PhaseTimeout, and adds its figure.
func (r *run) phase(name, unit string, measure func(context.Context) (float64, string, error), opts ...option) {
	f := Figure{Name: name, Unit: unit}
	for _, o := range opts {
		o(&f)
	}
	if r.mem != nil {
		r.mem.at(name)
	}
	ctx, cancel := context.WithTimeout(context.Background(), PhaseTimeout)
	defer cancel()
	v, note, err := measure(ctx)
	f.Value, f.Note = v, note
	switch {
	case errors.Is(err, ErrNotMeasured):
		f.Status, f.Value = NotMeasured, 0
	case err != nil:
		f.Status, f.Value, f.Note = Failed, 0, err.Error()
	}
	r.add(f)
}

func rate(n int, d time.Duration) float64 {
	if d <= 0 {
		return 0
	}
	return float64(n) / d.Seconds()
}

// connect opens a connection of the ledger's own: in-process to the
// embedded server, as `quota serve` connects.
func (r *run) connect(name string) (*nats.Conn, error) {
	return nats.Connect(r.url, nats.Name(name), nats.MaxReconnects(0), r.srv.InProcess())
}
