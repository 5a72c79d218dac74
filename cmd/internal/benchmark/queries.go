package benchmark

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"runtime/pprof"
	"runtime/trace"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/quotaledger/quota/ledger/jsonscan"
	"github.com/quotaledger/quota/projector"
)

// RequestTimeout bounds one request of a request-reply measurement.
const RequestTimeout = 10 * time.Second

// requestSpec describes one request-reply measurement.
type requestSpec struct {
	subject func(i int) string
	payload func(i int) []byte
	// check inspects a reply; nil accepts any.
	check func(reply []byte) error
	// paired measures the request-reply ceiling (the empty responder,
	// with as many clients and requests) right before each run of this
	// spec, so that a figure's ratio compares runs a moment apart: on a
	// shared machine whole seconds go fast or slow, and a ceiling
	// measured in another second can be off by a third.
	paired bool
}

// measured is the outcome of one request-reply measurement.
type measured struct {
	rate     float64
	p50, p99 time.Duration
	// rates are the rates of every run of a repeated measurement, in
	// the order they ran (measureMedian).
	rates []float64
	// For a paired measurement: ceilings are the ceiling's rates, each
	// measured right before the run of the same index, ceiling their
	// median, and ratio the median of the runs' ratios to their own
	// ceiling.
	ceilings []float64
	ceiling  float64
	ratio    float64
}

// runs words a repeated measurement's runs for a figure's note.
func (m measured) runs() string {
	if len(m.rates) < 2 && len(m.ceilings) == 0 {
		return ""
	}
	text := fmt.Sprintf("median of %d runs: %s req/s", len(m.rates), rateList(m.rates))
	if len(m.rates) == 1 {
		text = fmt.Sprintf("one run: %s req/s", rateList(m.rates))
	}
	if len(m.ceilings) > 0 {
		ratios := make([]string, len(m.rates))
		for i := range m.rates {
			ratios[i] = fmt.Sprintf("%.2f", m.rates[i]/m.ceilings[i])
		}
		text += fmt.Sprintf("; ceiling right before each: %s req/s; ratios %s", rateList(m.ceilings), strings.Join(ratios, ", "))
	}
	return text
}

func rateList(rates []float64) string {
	parts := make([]string, len(rates))
	for i, v := range rates {
		parts[i] = fmt.Sprintf("%.0f", v)
	}
	return strings.Join(parts, ", ")
}

// measureMedian runs measureRequests Repeats times, one after the other,
// and returns the run with the median rate (the lower middle for an even
// count), with every run's rate. Only the first run is profiled. On a
// shared machine one run can fall into a slow spell of a few seconds (or
// a quiet one); one such run does not move the median. A paired spec has
// the ceiling measured before each run, and the ratio is the median of
// the runs' ratios.
func (r *run) measureMedian(ctx context.Context, name string, clients, total int, spec requestSpec) (measured, error) {
	repeats := max(1, r.cfg.Repeats)
	runs := make([]measured, 0, repeats)
	rates := make([]float64, 0, repeats)
	var ceilings, ratios []float64
	for i := range repeats {
		if spec.paired && r.echo != nil {
			c, err := r.measureRequests(ctx, "", clients, total, *r.echo)
			if err != nil {
				return measured{}, fmt.Errorf("ceiling: %w", err)
			}
			ceilings = append(ceilings, c.rate)
		}
		profiled := name
		if i > 0 {
			profiled = ""
		}
		m, err := r.measureRequests(ctx, profiled, clients, total, spec)
		if err != nil {
			return measured{}, err
		}
		runs = append(runs, m)
		rates = append(rates, m.rate)
		if len(ceilings) > 0 {
			ratios = append(ratios, m.rate/ceilings[i])
		}
	}
	slices.SortFunc(runs, func(a, b measured) int { return cmp.Compare(a.rate, b.rate) })
	m := runs[(len(runs)-1)/2]
	m.rates = rates
	if len(ceilings) > 0 {
		m.ceilings = ceilings
		m.ceiling = median(ceilings)
		m.ratio = median(ratios)
	}
	return m, nil
}

// pair gives f, compared to the request-reply ceiling, the ceiling
// measured with m's runs, when m is paired.
func (m measured) pair(f *Figure) {
	if f.Ceiling == "" || len(m.ceilings) == 0 {
		return
	}
	f.CeilingValue, f.Ratio, f.Paired = m.ceiling, m.ratio, true
}

// median returns the middle of vs (the lower middle for an even count).
func median(vs []float64) float64 {
	sorted := slices.Clone(vs)
	slices.Sort(sorted)
	return sorted[(len(sorted)-1)/2]
}

// measureRequests sends total requests from clients goroutines, each on
// its own connection and waiting for each reply before the next request.
// The requests are built before the clock starts, so that building them
// does not take the measured server's CPU. name names the measurement's
// CPU profile, when the run takes them.
func (r *run) measureRequests(ctx context.Context, name string, clients, total int, spec requestSpec) (measured, error) {
	conns := make([]*nats.Conn, clients)
	for i := range conns {
		nc, err := nats.Connect(r.url, nats.MaxReconnects(0))
		if err != nil {
			return measured{}, err
		}
		defer nc.Close()
		conns[i] = nc
	}
	payloads := make([][]byte, total)
	for i := range payloads {
		payloads[i] = spec.payload(i)
	}
	latencies := make([]time.Duration, total)
	errs := make([]error, clients)
	var wg sync.WaitGroup
	stop, err := r.profile(name)
	if err != nil {
		return measured{}, err
	}
	start := time.Now()
	for c := 0; c < clients; c++ {
		wg.Add(1)
		go func(c int) {
			defer wg.Done()
			for i := c; i < total; i += clients {
				t0 := time.Now()
				rctx, cancel := context.WithTimeout(ctx, RequestTimeout)
				m, err := conns[c].RequestWithContext(rctx, spec.subject(i), payloads[i])
				cancel()
				if err == nil && spec.check != nil {
					err = spec.check(m.Data)
				}
				if err != nil {
					errs[c] = fmt.Errorf("request %d on %s: %w", i, spec.subject(i), err)
					return
				}
				latencies[i] = time.Since(t0)
			}
		}(c)
	}
	wg.Wait()
	elapsed := time.Since(start)
	if err := stop(); err != nil {
		return measured{}, err
	}
	if err := errors.Join(errs...); err != nil {
		return measured{}, err
	}
	slices.Sort(latencies)
	return measured{
		rate: rate(total, elapsed),
		p50:  latencies[total/2],
		p99:  latencies[min(total-1, total*99/100)],
	}, nil
}

// profile starts a CPU profile of the measurement name when the run takes
// them, and returns what stops it. It also writes the process's
// allocation profile before and after the measurement (name.allocs-base
// and name.allocs), so that pprof's -base shows what the measurement
// allocated.
func (r *run) profile(name string) (stop func() error, err error) {
	if r.cfg.ProfileDir == "" || name == "" {
		return func() error { return nil }, nil
	}
	base := filepath.Join(r.cfg.ProfileDir, name)
	if err := writeAllocs(base + ".allocs-base.pprof"); err != nil {
		return nil, err
	}
	path := base + ".pprof"
	f, err := os.Create(path)
	if err != nil {
		return nil, fmt.Errorf("CPU profile: %w", err)
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		f.Close()
		return nil, fmt.Errorf("CPU profile %s: %w", path, err)
	}
	tpath := base + ".trace"
	tf, err := os.Create(tpath)
	if err != nil {
		pprof.StopCPUProfile()
		f.Close()
		return nil, fmt.Errorf("execution trace: %w", err)
	}
	if err := trace.Start(tf); err != nil {
		pprof.StopCPUProfile()
		f.Close()
		tf.Close()
		return nil, fmt.Errorf("execution trace %s: %w", tpath, err)
	}
	return func() error {
		trace.Stop()
		pprof.StopCPUProfile()
		if err := tf.Close(); err != nil {
			return fmt.Errorf("execution trace %s: %w", tpath, err)
		}
		if err := f.Close(); err != nil {
			return fmt.Errorf("CPU profile %s: %w", path, err)
		}
		return writeAllocs(base + ".allocs.pprof")
	}, nil
}

// writeAllocs writes the process's allocation profile to path, after a
// garbage collection: the profile counts allocations as of the last one.
func writeAllocs(path string) error {
	runtime.GC()
	f, err := os.Create(path)
	if err != nil {
		return fmt.Errorf("allocation profile: %w", err)
	}
	err = pprof.Lookup("allocs").WriteTo(f, 0)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("allocation profile %s: %w", path, err)
	}
	return nil
}

// addRequestFigures runs the 1-client and 16-client measurements of spec
// and adds their figures under the given names (empty: not added).
func (r *run) addRequestFigures(spec requestSpec, one, p50, p99, many string, opts map[string][]option) {
	ctx, cancel := context.WithTimeout(context.Background(), PhaseTimeout)
	defer cancel()
	failAll := func(err error) {
		for _, name := range []string{one, p50, p99, many} {
			if name != "" {
				r.add(Figure{Name: name, Status: Failed, Note: err.Error()})
			}
		}
	}
	single, err := r.measureMedian(ctx, one, 1, r.cfg.Requests, spec)
	if err != nil {
		failAll(err)
		return
	}
	multi, err := r.measureMedian(ctx, many, ConcurrentClients, r.cfg.Requests, spec)
	if err != nil {
		failAll(err)
		return
	}
	values := []struct {
		name, unit string
		v          float64
	}{
		{one, UnitRequestsPerSecond, single.rate},
		{p50, UnitMicroseconds, float64(single.p50.Microseconds())},
		{p99, UnitMicroseconds, float64(single.p99.Microseconds())},
		{many, UnitRequestsPerSecond, multi.rate},
	}
	for _, v := range values {
		if v.name == "" {
			continue
		}
		f := Figure{Name: v.name, Unit: v.unit, Value: v.v}
		for _, o := range opts[v.name] {
			o(&f)
		}
		switch v.name {
		case one:
			f.Note = single.runs()
			single.pair(&f)
		case many:
			f.Note = joinNotes(fmt.Sprintf("p50 %d µs, p99 %d µs", multi.p50.Microseconds(), multi.p99.Microseconds()), multi.runs())
			multi.pair(&f)
		}
		r.add(f)
	}
}

// echoSubject is answered by the empty responder of the ceiling.
const echoSubject = "bench.echo"

// requests measures the request-reply ceiling: an empty responder on its
// own connection, in-process as the ledger's responders connect, and
// requests the size of an admission review. The responder stays up for
// the rest of the run (stopped by the returned function), for the paired
// measurements (requestSpec.paired).
func (r *run) requests() (stop func()) {
	nc, err := r.connect("benchmark echo")
	if err != nil {
		r.add(Figure{Name: FigureRawRequest1, Status: Failed, Note: err.Error()})
		return func() {}
	}
	sub, err := nc.Subscribe(echoSubject, func(m *nats.Msg) { _ = m.Respond(nil) })
	if err == nil {
		err = nc.Flush()
	}
	if err != nil {
		nc.Close()
		r.add(Figure{Name: FigureRawRequest1, Status: Failed, Note: err.Error()})
		return func() {}
	}
	stop = func() {
		r.echo = nil
		_ = sub.Unsubscribe()
		nc.Close()
	}
	payload := []byte(`{}`)
	if len(r.pods) > 0 {
		payload = r.pods[0]
	}
	echo := requestSpec{
		subject: func(int) string { return echoSubject },
		payload: func(int) []byte { return payload },
	}
	r.addRequestFigures(echo, FigureRawRequest1, FigureRawRequest1P50, FigureRawRequest1P99, FigureRawRequest16, nil)
	r.echo = &echo
	return stop
}

// describe measures the describe query of one namespace, served by the
// projector's Responder (which first catches up with the stream).
func (r *run) describe(p *projector.Projector) {
	if len(r.namespaces) == 0 {
		r.add(Figure{Name: FigureDescribe1, Status: Failed, Note: "no namespace with a pod in the stream"})
		return
	}
	ctx, cancel := context.WithCancel(context.Background())
	nc, err := r.connect("benchmark describe")
	if err != nil {
		cancel()
		r.add(Figure{Name: FigureDescribe1, Status: Failed, Note: err.Error()})
		return
	}
	done := make(chan error, 1)
	go func() {
		done <- projector.NewResponder(nc, p, projector.ResponderConfig{Logger: discardLogger()}).Run(ctx)
	}()
	defer func() {
		cancel()
		<-done
		nc.Close()
	}()
	payloads := make([][]byte, len(r.namespaces))
	for i, ns := range r.namespaces {
		payloads[i], _ = json.Marshal(projector.DescribeRequest{Namespace: ns})
	}
	spec := requestSpec{
		subject: func(int) string { return projector.SubjectDescribe },
		payload: func(i int) []byte { return payloads[i%len(payloads)] },
		paired:  true,
		check:   checkDescribe,
	}
	if err := waitForResponder(ctx, r.url, spec.subject(0), spec.payload(0)); err != nil {
		r.add(Figure{Name: FigureDescribe1, Status: Failed, Note: err.Error()})
		return
	}
	r.addRequestFigures(spec, FigureDescribe1, "", FigureDescribe1P99, FigureDescribe16, map[string][]option{
		FigureDescribe1:  {ceiling(FigureRawRequest1, "≥ 0.5 × ceiling", halfOfCeiling)},
		FigureDescribe16: {ceiling(FigureRawRequest16, "≥ 0.5 × ceiling", halfOfCeiling)},
	})
}

// checkDescribe checks a describe reply as the admission clients check
// theirs: it is JSON, a list with quotas in it and no error. It does not
// decode the quotas into the Kubernetes types, a client's own cost (two
// fifths of the CPU at 1 client), which the ceiling's client does not pay.
func checkDescribe(b []byte) error {
	if items, failed, ok := scanDescribe(b); ok && !failed && items > 0 {
		return nil
	}
	var reply struct {
		Error string `json:"error"`
		List  *struct {
			Items []json.RawMessage `json:"items"`
		} `json:"list"`
	}
	if err := json.Unmarshal(b, &reply); err != nil {
		return fmt.Errorf("describe reply: %w", err)
	}
	if reply.Error != "" {
		return errors.New(reply.Error)
	}
	if reply.List == nil || len(reply.List.Items) == 0 {
		return fmt.Errorf("describe reply without quotas: %.200s", b)
	}
	return nil
}

// scanDescribe reads, without decoding it, whether a describe reply
// carries an error and how many items its list holds, the way the
// responder writes a reply: plain keys, each once, in their case. It
// checks the grammar of the whole reply. ok false leaves the reply to
// encoding/json, which also words what is wrong.
func scanDescribe(b []byte) (items int, failed, ok bool) {
	s := jsonscan.New(b)
	var list bool
	walked := s.Members(func(key []byte, plain bool) bool {
		switch {
		case !plain:
			return false
		case string(key) == "error":
			v, ok := s.String()
			failed = failed || len(v) > 0
			return ok
		case jsonscan.EqualFoldASCII(key, "error") || jsonscan.EqualFoldASCII(key, "list") && string(key) != "list":
			return false // encoding/json matches keys without regard to case
		case string(key) != "list":
			return s.Skip()
		case list:
			return false // repeated: encoding/json keeps the last
		}
		list = true
		var seen bool
		return s.Members(func(key []byte, plain bool) bool {
			if !plain || string(key) != "items" {
				return plain && !jsonscan.EqualFoldASCII(key, "items") && s.Skip()
			}
			if seen {
				return false
			}
			seen = true
			return s.Elements(func() bool { items++; return s.Skip() })
		})
	})
	return items, failed, walked && s.AtEnd()
}

// waitForResponder polls subject until something answers, since a
// responder's Run subscribes asynchronously.
func waitForResponder(ctx context.Context, url, subject string, payload []byte) error {
	nc, err := nats.Connect(url, nats.MaxReconnects(0))
	if err != nil {
		return err
	}
	defer nc.Close()
	deadline := time.Now().Add(RequestTimeout)
	for {
		_, err := nc.Request(subject, payload, 100*time.Millisecond)
		if err == nil {
			return nil
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			return fmt.Errorf("no responder on %s within %s: %w", subject, RequestTimeout, err)
		}
	}
}

// replay rebuilds a fresh projection from the workload's events (the
// stream up to r.workloadEnd, before the admissions' reservations)
// through Hooks.Replay, in a process of its own (replayInChild), as
// `quota replay --until-seq` runs beside the server; it returns that
// process's peak.
func (r *run) replay() (peak memSample, hwm int64) {
	r.phase(FigureReplay, UnitEventsPerSecond, func(ctx context.Context) (float64, string, error) {
		if r.cfg.Hooks.Replay == nil {
			return 0, "the replay package is not plugged in (Hooks.Replay)", ErrNotMeasured
		}
		out, err := r.replayInChild(ctx)
		if err != nil {
			return 0, "", err
		}
		if out.Applied != r.workloadEnd {
			return 0, "", fmt.Errorf("replay applied up to seq %d, the workload ends at %d", out.Applied, r.workloadEnd)
		}
		peak, hwm = out.Peak, out.PeakRSS
		return rate(int(out.Applied), out.Elapsed), fmt.Sprintf("the workload's events (up to seq %d, before the admissions' reservations) into a fresh file, in a process of its own", r.workloadEnd), nil
	}, ceiling(FigureRawRead, "≥ 0.5 × ceiling", halfOfCeiling))
	return peak, hwm
}

// joinNotes joins the non-empty parts of a figure's note.
func joinNotes(parts ...string) string {
	var out []string
	for _, p := range parts {
		if p != "" {
			out = append(out, p)
		}
	}
	return strings.Join(out, "; ")
}
