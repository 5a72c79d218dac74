package benchmark

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"sync"
	"time"

	"github.com/nats-io/nats.go"

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
}

// measured is the outcome of one request-reply measurement.
type measured struct {
	rate     float64
	p50, p99 time.Duration
}

// measureRequests sends total requests from clients goroutines, each on
// its own connection and waiting for each reply before the next request.
func (r *run) measureRequests(ctx context.Context, clients, total int, spec requestSpec) (measured, error) {
	conns := make([]*nats.Conn, clients)
	for i := range conns {
		nc, err := nats.Connect(r.url, nats.MaxReconnects(0))
		if err != nil {
			return measured{}, err
		}
		defer nc.Close()
		conns[i] = nc
	}
	latencies := make([]time.Duration, total)
	errs := make([]error, clients)
	var wg sync.WaitGroup
	start := time.Now()
	for c := 0; c < clients; c++ {
		wg.Add(1)
		go func(c int) {
			defer wg.Done()
			for i := c; i < total; i += clients {
				t0 := time.Now()
				rctx, cancel := context.WithTimeout(ctx, RequestTimeout)
				m, err := conns[c].RequestWithContext(rctx, spec.subject(i), spec.payload(i))
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
	single, err := r.measureRequests(ctx, 1, r.cfg.Requests, spec)
	if err != nil {
		failAll(err)
		return
	}
	multi, err := r.measureRequests(ctx, ConcurrentClients, r.cfg.Requests, spec)
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
		if v.name == many {
			f.Note = fmt.Sprintf("p50 %d µs, p99 %d µs", multi.p50.Microseconds(), multi.p99.Microseconds())
		}
		r.add(f)
	}
}

// echoSubject is answered by the empty responder of the ceiling.
const echoSubject = "bench.echo"

// requests measures the request-reply ceiling: an empty responder on its
// own connection, requests the size of an admission review.
func (r *run) requests() {
	nc, err := nats.Connect(r.url, nats.MaxReconnects(0))
	if err != nil {
		r.add(Figure{Name: FigureRawRequest1, Status: Failed, Note: err.Error()})
		return
	}
	defer nc.Close()
	sub, err := nc.Subscribe(echoSubject, func(m *nats.Msg) { _ = m.Respond(nil) })
	if err != nil {
		r.add(Figure{Name: FigureRawRequest1, Status: Failed, Note: err.Error()})
		return
	}
	defer sub.Unsubscribe()
	if err := nc.Flush(); err != nil {
		r.add(Figure{Name: FigureRawRequest1, Status: Failed, Note: err.Error()})
		return
	}
	payload := []byte(`{}`)
	if len(r.pods) > 0 {
		payload = r.pods[0]
	}
	r.addRequestFigures(requestSpec{
		subject: func(int) string { return echoSubject },
		payload: func(int) []byte { return payload },
	}, FigureRawRequest1, FigureRawRequest1P50, FigureRawRequest1P99, FigureRawRequest16, nil)
}

// describe measures the describe query of one namespace, served by the
// projector's Responder (which first catches up with the stream).
func (r *run) describe(p *projector.Projector) {
	if len(r.namespaces) == 0 {
		r.add(Figure{Name: FigureDescribe1, Status: Failed, Note: "no namespace with a pod in the stream"})
		return
	}
	ctx, cancel := context.WithCancel(context.Background())
	nc, err := nats.Connect(r.url, nats.MaxReconnects(0))
	if err != nil {
		cancel()
		r.add(Figure{Name: FigureDescribe1, Status: Failed, Note: err.Error()})
		return
	}
	done := make(chan error, 1)
	go func() { done <- projector.NewResponder(nc, p, discardLogger()).Run(ctx) }()
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
		check: func(b []byte) error {
			var q projector.QueryReply
			if err := json.Unmarshal(b, &q); err != nil {
				return err
			}
			if q.Error != "" {
				return errors.New(q.Error)
			}
			return nil
		},
	}
	if err := waitForResponder(ctx, r.url, spec.subject(0), spec.payload(0)); err != nil {
		r.add(Figure{Name: FigureDescribe1, Status: Failed, Note: err.Error()})
		return
	}
	r.addRequestFigures(spec, FigureDescribe1, "", FigureDescribe1P99, FigureDescribe16, map[string][]option{
		FigureDescribe1:  {ceiling(FigureRawRequest1, "", nil)},
		FigureDescribe16: {ceiling(FigureRawRequest16, "", nil)},
	})
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

// admission measures admission requests, dry-run and reserving, when the
// admission responder is plugged in.
func (r *run) admission(env Env) {
	names := []string{FigureAdmitDry1, FigureAdmitDry1P50, FigureAdmitDry1P99, FigureAdmitDry16,
		FigureAdmitReserve1, FigureAdmitReserve1P50, FigureAdmitReserve1P99, FigureAdmitReserve16}
	opts := map[string][]option{
		FigureAdmitDry1:        {ceiling(FigureRawRequest1, "", nil)},
		FigureAdmitDry1P99:     {target("< 1000 µs", func(v, _ float64) bool { return v < float64(AdmissionP99Max.Microseconds()) })},
		FigureAdmitDry16:       {ceiling(FigureRawRequest16, "≥ 0.5 × ceiling", halfOfCeiling)},
		FigureAdmitReserve1:    {ceiling(FigureRawRequest1, "", nil)},
		FigureAdmitReserve1P99: {target("< 1000 µs", func(v, _ float64) bool { return v < float64(AdmissionP99Max.Microseconds()) })},
		FigureAdmitReserve16:   {ceiling(FigureRawRequest16, "≥ 0.5 × ceiling", halfOfCeiling)},
	}
	if r.cfg.Hooks.Admission == nil || len(r.pods) == 0 {
		note := "the admission responder is not plugged in (Hooks.Admission)"
		if r.cfg.Hooks.Admission != nil {
			note = "no pod in the stream to admit"
		}
		for _, name := range names {
			f := Figure{Name: name, Status: NotMeasured, Note: note}
			for _, o := range opts[name] {
				o(&f)
			}
			f.check = nil
			r.add(f)
		}
		return
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	if err := r.cfg.Hooks.Admission(ctx, env); err != nil {
		for _, name := range names {
			r.add(Figure{Name: name, Status: Failed, Note: err.Error()})
		}
		return
	}
	probe := setDryRun(r.pods[0], true)
	if err := waitForResponder(ctx, r.url, r.cfg.Hooks.AdmissionSubject(r.namespaces[0]), probe); err != nil {
		for _, name := range names {
			r.add(Figure{Name: name, Status: Failed, Note: err.Error()})
		}
		return
	}
	for _, dryRun := range []bool{true, false} {
		payloads := make([][]byte, len(r.pods))
		for i, p := range r.pods {
			payloads[i] = setDryRun(p, dryRun)
		}
		spec := requestSpec{
			subject: func(i int) string { return r.cfg.Hooks.AdmissionSubject(r.namespaces[i%len(r.namespaces)]) },
			payload: func(i int) []byte {
				if dryRun {
					return payloads[i%len(payloads)]
				}
				return reservingReview(payloads[i%len(payloads)], i)
			},
			check: checkAdmissionReview,
		}
		n := names[:4]
		if !dryRun {
			n = names[4:]
		}
		r.addRequestFigures(spec, n[0], n[1], n[2], n[3], opts)
	}
}

func setDryRun(review []byte, dryRun bool) []byte {
	if !dryRun {
		return review
	}
	return bytes.Replace(review, []byte(`"dryRun":false`), []byte(`"dryRun":true`), 1)
}

// checkAdmissionReview accepts a reply that is an AdmissionReview with a
// response, allowed or not: a denial is a valid answer to measure.
func checkAdmissionReview(b []byte) error {
	var review struct {
		Response *struct {
			UID string `json:"uid"`
		} `json:"response"`
	}
	if err := json.Unmarshal(b, &review); err != nil {
		return fmt.Errorf("admission reply: %w", err)
	}
	if review.Response == nil {
		return fmt.Errorf("admission reply without response: %.200s", b)
	}
	return nil
}

// replay rebuilds a fresh projection from the whole stream through
// Hooks.Replay.
func (r *run) replay() {
	r.phase(FigureReplay, UnitEventsPerSecond, func(ctx context.Context) (float64, string, error) {
		if r.cfg.Hooks.Replay == nil {
			return 0, "the replay package is not plugged in (Hooks.Replay)", ErrNotMeasured
		}
		last, err := r.stream.LastSeq(ctx)
		if err != nil {
			return 0, "", err
		}
		start := time.Now()
		applied, err := r.cfg.Hooks.Replay(ctx, r.stream, filepath.Join(r.cfg.Dir, "replay.db"))
		elapsed := time.Since(start)
		if err != nil {
			return 0, "", err
		}
		if applied != last {
			return 0, "", fmt.Errorf("replay applied up to seq %d, the stream ends at %d", applied, last)
		}
		return rate(int(applied), elapsed), "into a fresh file", nil
	}, ceiling(FigureRawRead, "≥ 0.5 × ceiling", halfOfCeiling))
}
