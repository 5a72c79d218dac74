package benchmark

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/quotaledger/quota/ledger"
	"github.com/quotaledger/quota/ledger/ledgertest/workload"
	"github.com/quotaledger/quota/ledger/object"
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
	// PeakRSSMax is the peak RSS target for RSSTargetEvents events with
	// RSSTargetLiveObjects live objects.
	PeakRSSMax           = 512 << 20
	RSSTargetEvents      = 1_000_000
	RSSTargetLiveObjects = 100_000
)

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
	// Each peak RSS covers what the ledger does, not the ceilings
	// measured before it: their garbage is returned to the system first.
	startPeak := func(part string) {
		debug.FreeOSMemory()
		resetPeakRSS()
		r.mem = startMemSampler(part)
	}
	startPeak(FigureIngest)
	r.phase(FigureIngest, UnitEventsPerSecond, r.ingest, ceiling(FigureRawPublish, "≥ 0.5 × ceiling", halfOfCeiling))
	r.add(peakFigure(FigurePeakRSSIngest, "", r.mem.end()))
	r.phase(FigureRawRead, UnitEventsPerSecond, r.rawRead)
	startPeak(FigureProjection)

	p, stop, err := r.projection()
	if err == nil {
		r.measureQueries(p, Env{Conn: r.nc, Connect: r.connect, Stream: r.stream, Projector: p, Dir: cfg.Dir}, startPeak)
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
	r.nc, r.js, r.stream = nc, js, stream
	return nil
}

// measureQueries measures what is measured on the projection p: its
// file, the request-reply ceiling, describe, admission and replay, with
// their peak RSS; startPeak starts a peak's measurement.
func (r *run) measureQueries(p *projector.Projector, env Env, startPeak func(part string)) {
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
	r.mem.at("the admissions")
	r.admission(env)
	stopEcho()
	r.addProjectionPeak(r.rep)
	// `quota replay` runs in a process of its own: its peak is its
	// own figure (still beside the server's, in this process).
	startPeak(FigureReplay)
	r.replay()
	r.add(peakFigure(FigurePeakRSSReplay, "", r.mem.end()))
}

// addProjectionPeak adds the peak RSS of the projection and the queries,
// the figure the memory target applies to.
func (r *run) addProjectionPeak(rep *Report) {
	rss := peakFigure(FigurePeakRSSProjection, "", r.mem.end())
	rss.Target = fmt.Sprintf("< %d MiB at %d events, %d live", PeakRSSMax>>20, RSSTargetEvents, RSSTargetLiveObjects)
	if rep.Workload.Events >= RSSTargetEvents && rep.Workload.LiveObjectsMax >= RSSTargetLiveObjects && rss.Status == Measured {
		met := rss.Value < PeakRSSMax
		rss.Met = &met
	}
	r.add(rss)
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

// chunks yields the stream ChunkEvents lines at a time; the lines are only
// valid during the call.
func (r *run) chunks(fn func(lines [][]byte) error) error {
	g, err := workload.New(r.cfg.Workload)
	if err != nil {
		return err
	}
	buf := make([]byte, 0, ChunkEvents*6<<10)
	ends := make([]int, 0, ChunkEvents)
	lines := make([][]byte, 0, ChunkEvents)
	for done := false; !done; {
		buf, ends, lines = buf[:0], ends[:0], lines[:0]
		for len(ends) < ChunkEvents {
			var ok bool
			buf, ok = g.Next(buf)
			if !ok {
				done = true
				break
			}
			ends = append(ends, len(buf))
		}
		start := 0
		for _, end := range ends {
			lines = append(lines, buf[start:end:end])
			start = end
		}
		if len(lines) > 0 {
			if err := fn(lines); err != nil {
				return err
			}
		}
	}
	r.rep.Stats = g.Stats()
	return nil
}

// watchEvent is the Kubernetes watch framing.
type watchEvent struct {
	Type   string          `json:"type"`
	Object json.RawMessage `json:"object"`
}

// convert turns one watch line into the ledger event ingest appends for it,
// with a message ID that makes a re-sent event a no-op.
func convert(line []byte) (ledger.BatchEntry, error) {
	var w watchEvent
	if err := json.Unmarshal(line, &w); err != nil {
		return ledger.BatchEntry{}, fmt.Errorf("watch event: %w", err)
	}
	o, err := object.Decode(w.Object)
	if err != nil {
		return ledger.BatchEntry{}, err
	}
	ev := ledger.Event{Version: ledger.EncodingVersion, Type: ledger.Upsert, Resource: o.Resource,
		Namespace: o.Namespace, Name: o.Name, UID: o.UID, ResourceVersion: o.ResourceVersion, Source: "workload"}
	if w.Type == workload.Deleted {
		ev.Type = ledger.Delete
	} else {
		trimmed, err := o.Trimmed()
		if err != nil {
			return ledger.BatchEntry{}, err
		}
		ev.Object = trimmed
	}
	return ledger.BatchEntry{Event: ev, MsgID: o.UID + "@" + o.ResourceVersion}, nil
}

// rawStreamName names the stream of the raw publish ceiling. It is
// deleted once measured, before ingest (dropRawStream), and
// rawCASStreamName, the stream of the raw compare-and-swap append, lives
// only for that measurement: a server running the ledger carries neither,
// nor their duplicate tables, which the later phases would otherwise hold
// in memory and garbage collection would mark.
const (
	rawStreamName    = "BENCH_RAW"
	rawCASStreamName = "BENCH_RAW_CAS"
)

// createRawStream creates a plain stream with the ledger's stream options.
func (r *run) createRawStream(ctx context.Context, name, subjects string) error {
	_, err := r.js.CreateOrUpdateStream(ctx, jetstream.StreamConfig{
		Name: name, Subjects: []string{subjects},
		Retention: jetstream.LimitsPolicy, MaxConsumers: -1, MaxMsgs: -1, MaxBytes: -1, MaxMsgsPerSubject: -1,
		MaxMsgSize: ledger.DefaultMaxMsgSize, Discard: jetstream.DiscardNew, Storage: jetstream.FileStorage,
		Replicas: 1, Duplicates: ledger.DefaultDuplicateWindow, DenyDelete: true, DenyPurge: false,
		Compression: jetstream.NoCompression,
	})
	return err
}

// dropRawStream deletes the raw publish ceiling's stream.
func (r *run) dropRawStream(ctx context.Context) error {
	err := r.js.DeleteStream(ctx, rawStreamName)
	if errors.Is(err, jetstream.ErrStreamNotFound) {
		return nil
	}
	return err
}

// rawPublish publishes the encoded events the ledger will append, with the
// same options, message IDs and in-flight window, to a plain stream. Only
// the publishing is timed; converting and encoding is not.
func (r *run) rawPublish(ctx context.Context) (float64, string, error) {
	err := r.createRawStream(ctx, rawStreamName, "bench.raw.>")
	if err != nil {
		return 0, "", err
	}
	window := ledger.DefaultAppendBatchInFlightMax
	var (
		elapsed time.Duration
		events  int
	)
	msgs := make([]*nats.Msg, 0, ChunkEvents)
	pending := make([]jetstream.PubAckFuture, 0, window)
	wait := func(f jetstream.PubAckFuture) error {
		select {
		case <-f.Ok():
			return nil
		case err := <-f.Err():
			return err
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	err = r.chunks(func(lines [][]byte) error {
		msgs = msgs[:0]
		for _, line := range lines {
			e, err := convert(line)
			if err != nil {
				return err
			}
			data, err := ledger.Encode(e.Event)
			if err != nil {
				return err
			}
			token := e.Event.Namespace
			if token == "" {
				token = ledger.ClusterToken
			}
			m := nats.NewMsg("bench.raw." + token)
			m.Data = data
			m.Header.Set(jetstream.MsgIDHeader, e.MsgID)
			msgs = append(msgs, m)
		}
		start := time.Now()
		for _, m := range msgs {
			if len(pending) == window {
				if err := wait(pending[0]); err != nil {
					return err
				}
				pending = append(pending[:0], pending[1:]...)
			}
			f, err := r.js.PublishMsgAsync(m, jetstream.WithExpectStream(rawStreamName))
			if err != nil {
				return err
			}
			pending = append(pending, f)
		}
		for _, f := range pending {
			if err := wait(f); err != nil {
				return err
			}
		}
		pending = pending[:0]
		elapsed += time.Since(start)
		events += len(msgs)
		return nil
	})
	if err != nil {
		return 0, "", fmt.Errorf("raw publish: %w", err)
	}
	return rate(events, elapsed), fmt.Sprintf("async, %d in flight, Nats-Msg-Id set, the ledger's encoded events", window), nil
}

// ingest appends the stream to the ledger, durably.
func (r *run) ingest(ctx context.Context) (float64, string, error) {
	if r.cfg.Hooks.Ingest != nil {
		return r.ingestHook(ctx)
	}
	var (
		elapsed time.Duration
		events  int
	)
	entries := make([]ledger.BatchEntry, 0, ChunkEvents)
	err := r.chunks(func(lines [][]byte) error {
		r.collect(lines)
		start := time.Now()
		entries = entries[:0]
		for _, line := range lines {
			e, err := convert(line)
			if err != nil {
				return err
			}
			entries = append(entries, e)
		}
		if _, err := r.stream.AppendBatch(ctx, entries); err != nil {
			return err
		}
		elapsed += time.Since(start)
		events += len(entries)
		return nil
	})
	if err != nil {
		return 0, "", fmt.Errorf("ingest: %w", err)
	}
	return rate(events, elapsed), "decode, trim and Stream.AppendBatch per chunk of " + fmt.Sprint(ChunkEvents) + " (the ingest package is not plugged in)", nil
}

// ingestHook streams the watch JSON lines through Hooks.Ingest; the
// generator runs concurrently and its time is included.
func (r *run) ingestHook(ctx context.Context) (float64, string, error) {
	pr, pw := io.Pipe()
	go func() {
		err := r.chunks(func(lines [][]byte) error {
			r.collect(lines)
			for _, l := range lines {
				if _, err := pw.Write(append(l, '\n')); err != nil {
					return err
				}
			}
			return nil
		})
		pw.CloseWithError(err)
	}()
	start := time.Now()
	n, err := r.cfg.Hooks.Ingest(ctx, r.stream, pr)
	elapsed := time.Since(start)
	pr.CloseWithError(io.ErrClosedPipe)
	if err != nil {
		return 0, "", fmt.Errorf("ingest: %w", err)
	}
	return rate(n, elapsed), "through Hooks.Ingest, generation included", nil
}

// collect keeps a few pod objects and the namespaces, for the queries.
func (r *run) collect(lines [][]byte) {
	const podsKept = 64
	for _, line := range lines {
		if len(r.pods) >= podsKept {
			return
		}
		if !strings.HasPrefix(string(line[:min(len(line), 40)]), `{"type":"ADDED","object":{"kind":"Pod"`) {
			continue
		}
		var w watchEvent
		if json.Unmarshal(line, &w) != nil {
			continue
		}
		o, err := object.Decode(w.Object)
		if err != nil {
			continue
		}
		r.pods = append(r.pods, admissionReview(o.Namespace, fmt.Sprintf("bench-%d", len(r.pods)), w.Object))
		r.podObjects = append(r.podObjects, w.Object)
		r.namespaces = append(r.namespaces, o.Namespace)
	}
}

// admissionReview wraps a pod in an admission.k8s.io/v1 AdmissionReview
// request; the harness patches dryRun per request.
func admissionReview(namespace, uid string, pod json.RawMessage) []byte {
	b, _ := json.Marshal(map[string]any{
		"apiVersion": "admission.k8s.io/v1",
		"kind":       "AdmissionReview",
		"request": map[string]any{
			"uid":       uid,
			"kind":      map[string]string{"group": "", "version": "v1", "kind": "Pod"},
			"resource":  map[string]string{"group": "", "version": "v1", "resource": "pods"},
			"namespace": namespace,
			"operation": "CREATE",
			"object":    pod,
			"dryRun":    false,
		},
	})
	return b
}

// rawRead reads the ledger's stream through a plain ordered consumer,
// touching each message's data and nothing else.
func (r *run) rawRead(ctx context.Context) (float64, string, error) {
	last, err := r.stream.LastSeq(ctx)
	if err != nil {
		return 0, "", err
	}
	if last == 0 {
		return 0, "", errors.New("raw read: the stream is empty")
	}
	start := time.Now()
	cons, err := r.js.OrderedConsumer(ctx, r.stream.Config().StreamName, jetstream.OrderedConsumerConfig{
		DeliverPolicy: jetstream.DeliverAllPolicy, ReplayPolicy: jetstream.ReplayInstantPolicy,
	})
	if err != nil {
		return 0, "", err
	}
	iter, err := cons.Messages(jetstream.PullMaxMessages(ledger.ReaderBufferMax))
	if err != nil {
		return 0, "", err
	}
	defer iter.Stop()
	var n, size int
	for {
		m, err := iter.Next()
		if err != nil {
			return 0, "", fmt.Errorf("raw read after %d: %w", n, err)
		}
		n++
		size += len(m.Data())
		meta, err := m.Metadata()
		if err != nil {
			return 0, "", err
		}
		if meta.Sequence.Stream >= last {
			break
		}
	}
	return rate(n, time.Since(start)), fmt.Sprintf("%d events, %s; %d in flight", n, bytesText(float64(size)), ledger.ReaderBufferMax), nil
}

// projection follows the stream with a fresh projector until it has
// applied everything, and leaves it running for the queries.
func (r *run) projection() (*projector.Projector, func(), error) {
	ctx, cancel := context.WithTimeout(context.Background(), PhaseTimeout)
	defer cancel()
	fail := func(err error) (*projector.Projector, func(), error) {
		r.add(Figure{Name: FigureProjection, Unit: UnitEventsPerSecond, Status: Failed, Note: err.Error(), Ceiling: FigureRawRead})
		return nil, nil, err
	}
	last, err := r.stream.LastSeq(ctx)
	if err != nil {
		return fail(err)
	}
	p, err := projector.Open(projector.Config{
		Path:   filepath.Join(r.cfg.Dir, "projection.db"),
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
	}, r.stream)
	if err != nil {
		return fail(err)
	}
	runCtx, stopRun := context.WithCancel(context.Background())
	exited := make(chan error, 1)
	start := time.Now()
	go func() {
		defer func() {
			if v := recover(); v != nil {
				exited <- fmt.Errorf("projector panicked: %v", v)
			}
		}()
		exited <- p.Run(runCtx)
	}()
	stop := func() {
		stopRun()
		<-exited
		p.Close()
	}
	caught := make(chan error, 1)
	go func() { caught <- p.WaitApplied(ctx, last) }()
	select {
	case err = <-caught:
	case err = <-exited:
		if err == nil {
			err = errors.New("projector stopped before catching up")
		}
		stopRun()
		p.Close()
		return fail(err)
	}
	elapsed := time.Since(start)
	if err != nil {
		stop()
		return fail(err)
	}
	r.add(Figure{Name: FigureProjection, Unit: UnitEventsPerSecond, Value: rate(int(last), elapsed),
		Ceiling: FigureRawRead, Target: "≥ 0.5 × ceiling, ≥ 100k events/s",
		check: func(v, ratio float64) bool { return ratio >= CeilingShareMin && v >= ProjectionRateMin },
		Note:  fmt.Sprintf("fresh projection file, default batch %d, bbolt sync per batch", projector.DefaultBatchSizeMax)})
	return p, stop, nil
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
