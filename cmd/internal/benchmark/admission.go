package benchmark

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/quotaledger/quota/ledger"
	"github.com/quotaledger/quota/ledger/jsonscan"
	"github.com/quotaledger/quota/projector/admission"
)

// AdmissionResponder is the Hooks.Admission of `make bench`: it runs
// projector/admission's Responder on the harness's projection and stream,
// on a connection of its own, with the default reservation TTL. It returns
// once the responder is subscribed; the responder stops when ctx ends.
func AdmissionResponder(ctx context.Context, env Env) error {
	nc, err := env.Connect("benchmark admission")
	if err != nil {
		return fmt.Errorf("admission responder: %w", err)
	}
	resp, err := admission.NewResponder(nc, env.Stream, env.Projector, admission.Config{Logger: discardLogger()})
	if err != nil {
		nc.Close()
		return err
	}
	go func() {
		defer nc.Close()
		_ = resp.Run(ctx)
	}()
	deadline := time.Now().Add(RequestTimeout)
	for nc.NumSubscriptions() == 0 {
		if time.Now().After(deadline) {
			return fmt.Errorf("admission responder did not subscribe within %s", RequestTimeout)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(time.Millisecond):
		}
	}
	return nc.Flush()
}

// reservingReview makes the i-th reserving request a distinct admission:
// its own request uid (the reservation's id, which JetStream deduplicates)
// and its own pod name (a reservation of an existing object charges
// nothing). Without this every request after the first 64 would be a
// retry of an earlier one.
func reservingReview(review []byte, i int) []byte {
	suffix := "-r" + strconv.Itoa(i)
	out := bytes.Replace(review, []byte(`"uid":"bench-`), []byte(`"uid":"bench`+suffix+`-`), 1)
	// The pod's own name is the first "name" of its metadata.
	at := bytes.Index(out, []byte(`"metadata":{`))
	if at < 0 {
		return out
	}
	name := bytes.Index(out[at:], []byte(`"name":"`))
	if name < 0 {
		return out
	}
	end := at + name + len(`"name":"`)
	close := bytes.IndexByte(out[end:], '"')
	if close < 0 {
		return out
	}
	end += close
	return append(append(append([]byte{}, out[:end]...), suffix...), out[end:]...)
}

// ReservingNamespace is the namespace the reserving figures create pods
// in: one namespace under one quota, as Kubernetes' reference figures were
// measured, with limits no run reaches, so that every create is allowed
// and reserved. A LimitRange gives containers that state no compute
// resources their defaults, as the stream's namespaces do.
const ReservingNamespace = "bench-reserving"

// reservingQuota is the quota of ReservingNamespace.
const reservingQuota = `{"apiVersion":"v1","kind":"ResourceQuota","metadata":{"name":"bench","namespace":"` + ReservingNamespace + `","uid":"bench-reserving-quota"},` +
	`"spec":{"hard":{"pods":"100M","count/pods":"100M","requests.cpu":"100M","requests.memory":"100Pi","limits.cpu":"100M","limits.memory":"100Pi"}}}`

// reservingLimitRange is the LimitRange of ReservingNamespace.
const reservingLimitRange = `{"apiVersion":"v1","kind":"LimitRange","metadata":{"name":"defaults","namespace":"` + ReservingNamespace + `","uid":"bench-reserving-limits"},` +
	`"spec":{"limits":[{"type":"Container","default":{"cpu":"500m","memory":"512Mi"},"defaultRequest":{"cpu":"100m","memory":"128Mi"}}]}}`

// admission measures admission requests, dry-run and reserving, when the
// admission responder is plugged in. Dry runs go to the namespaces of the
// stream's pods; reserving creates go to ReservingNamespace, each a pod of
// its own name.
func (r *run) admission(env Env, beforeReserving func()) {
	names := []string{FigureAdmitDry1, FigureAdmitDry1P50, FigureAdmitDry1P99, FigureAdmitDry16,
		FigureAdmitReserve1, FigureAdmitReserve1P50, FigureAdmitReserve1P99, FigureAdmitReserve16, FigureAdmitReserve32}
	opts := admissionOptions()
	failAll := func(note string, status Status) {
		for _, name := range names {
			f := Figure{Name: name, Status: status, Note: note}
			if status == NotMeasured {
				for _, o := range opts[name] {
					o(&f)
				}
				f.check = nil
			}
			r.add(f)
		}
	}
	if r.cfg.Hooks.Admission == nil || len(r.pods) == 0 {
		note := "the admission responder is not plugged in (Hooks.Admission)"
		if r.cfg.Hooks.Admission != nil {
			note = "no pod in the stream to admit"
		}
		failAll(note, NotMeasured)
		return
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	if err := r.cfg.Hooks.Admission(ctx, env); err != nil {
		failAll(err.Error(), Failed)
		return
	}
	probe := setDryRun(r.pods[0], true)
	if err := waitForResponder(ctx, r.url, r.cfg.Hooks.AdmissionSubject(r.namespaces[0]), probe); err != nil {
		failAll(err.Error(), Failed)
		return
	}
	dry := make([][]byte, len(r.pods))
	for i, p := range r.pods {
		dry[i] = setDryRun(p, true)
	}
	r.addRequestFigures(requestSpec{
		subject: func(i int) string { return r.cfg.Hooks.AdmissionSubject(r.namespaces[i%len(r.namespaces)]) },
		payload: func(i int) []byte { return dry[i%len(dry)] },
		check:   checkAdmissionReview,
		paired:  true,
	}, names[0], names[1], names[2], names[3], opts)

	beforeReserving()
	r.rawAppend(ctx)
	reserving, err := r.reservingPods(ctx, env)
	if err != nil {
		for _, name := range names[4:] {
			r.add(Figure{Name: name, Status: Failed, Note: err.Error()})
		}
		return
	}
	r.reservingFigures(ctx, reserving, names[4:], opts)
}

// admissionOptions are the ceilings and targets of the admission
// figures.
func admissionOptions() map[string][]option {
	kubernetes := func(podsPerSecond float64) func(v, _ float64) bool {
		return func(v, _ float64) bool { return v >= KubernetesFactor*podsPerSecond }
	}
	p99 := target("< 1000 µs", func(v, _ float64) bool { return v < float64(AdmissionP99Max.Microseconds()) })
	return map[string][]option{
		FigureAdmitDry1:        {ceiling(FigureRawRequest1, "", nil)},
		FigureAdmitDry1P99:     {p99},
		FigureAdmitDry16:       {ceiling(FigureRawRequest16, "≥ 0.5 × ceiling", halfOfCeiling)},
		FigureAdmitReserve1:    {ceiling(FigureRawRequest1, fmt.Sprintf("≥ %d req/s (%d × Kubernetes)", KubernetesFactor*KubernetesPodsPerSecond1, KubernetesFactor), kubernetes(KubernetesPodsPerSecond1))},
		FigureAdmitReserve1P99: {p99},
		FigureAdmitReserve16: {ceiling(FigureRawRequest16, fmt.Sprintf("≥ %d req/s (%d × Kubernetes at 32 clients) and ≥ 0.5 × ceiling", KubernetesFactor*KubernetesPodsPerSecond32, KubernetesFactor),
			func(v, ratio float64) bool {
				return kubernetes(KubernetesPodsPerSecond32)(v, ratio) && halfOfCeiling(v, ratio)
			})},
		FigureAdmitReserve32: {target(fmt.Sprintf("≥ %d req/s (%d × Kubernetes)", KubernetesFactor*KubernetesPodsPerSecond32, KubernetesFactor), kubernetes(KubernetesPodsPerSecond32))},
	}
}

// reservingFigures measures reserving creates of the pods reserving, 1,
// 16 and 32 clients, as the figures names, with their options opts.
func (r *run) reservingFigures(ctx context.Context, reserving [][]byte, names []string, opts map[string][]option) {
	// Every request is a create of a pod of its own name, with its own
	// uid, across all three measurements.
	var serial atomic.Int64
	spec := requestSpec{
		subject: func(int) string { return r.cfg.Hooks.AdmissionSubject(ReservingNamespace) },
		payload: func(int) []byte {
			n := int(serial.Add(1))
			return reservingReview(reserving[n%len(reserving)], n)
		},
		check:  checkAllowed,
		paired: true,
	}
	r.addRequestFigures(spec, names[0], names[1], names[2], names[3], opts)
	pctx, pcancel := context.WithTimeout(ctx, PhaseTimeout)
	defer pcancel()
	// The 32-client figure has a target but no ceiling to pair with.
	spec.paired = false
	m, err := r.measureMedian(pctx, FigureAdmitReserve32, KubernetesClients, r.cfg.Requests, spec)
	if err != nil {
		r.add(Figure{Name: FigureAdmitReserve32, Status: Failed, Note: err.Error()})
		return
	}
	f := Figure{Name: FigureAdmitReserve32, Unit: UnitRequestsPerSecond, Value: m.rate,
		Note: joinNotes(fmt.Sprintf("p50 %d µs, p99 %d µs", m.p50.Microseconds(), m.p99.Microseconds()), m.runs())}
	for _, o := range opts[FigureAdmitReserve32] {
		o(&f)
	}
	r.add(f)
}

// rawAppend measures what one reservation costs the log alone: publishes
// of a pod's size to a stream with the ledger's options, one at a time,
// each expecting the subject's last sequence (a compare-and-swap) and
// waiting for its acknowledgement, under the run's sync policy. The
// stream is deleted afterwards.
func (r *run) rawAppend(ctx context.Context) {
	if err := r.createRawStream(ctx, rawCASStreamName, "bench.rawcas.>"); err != nil {
		r.add(Figure{Name: FigureRawAppend1, Status: Failed, Note: err.Error()})
		return
	}
	n := max(100, r.cfg.Requests/5)
	payload := r.podObjects[0]
	elapsed, latencies, err := casAppends(ctx, r.js, n, payload)
	if derr := r.js.DeleteStream(context.WithoutCancel(ctx), rawCASStreamName); derr != nil && err == nil {
		err = fmt.Errorf("delete stream %s: %w", rawCASStreamName, derr)
	}
	if err != nil {
		r.add(Figure{Name: FigureRawAppend1, Status: Failed, Note: err.Error()})
		return
	}
	r.add(Figure{Name: FigureRawAppend1, Unit: UnitRequestsPerSecond, Value: rate(n, elapsed),
		Note: fmt.Sprintf("%d publishes of %d bytes", n, len(payload))})
	r.add(Figure{Name: FigureRawAppend1P50, Unit: UnitMicroseconds, Value: float64(latencies[n/2].Microseconds())})
	// A reservation waits for one such append, so this p99 is about the
	// least the same run's reserving p99 can be.
	r.add(Figure{Name: FigureRawAppend1P99, Unit: UnitMicroseconds, Value: float64(latencies[min(n-1, n*99/100)].Microseconds())})
}

// casAppends publishes payload n times to the raw compare-and-swap
// stream, each expecting the previous one to be the subject's last, and
// returns the time they took and their latencies, sorted.
func casAppends(ctx context.Context, js jetstream.JetStream, n int, payload []byte) (time.Duration, []time.Duration, error) {
	const subject = "bench.rawcas.pods"
	latencies := make([]time.Duration, n)
	var last uint64
	start := time.Now()
	for i := range latencies {
		t0 := time.Now()
		ack, err := js.Publish(ctx, subject, payload, jetstream.WithExpectStream(rawCASStreamName), jetstream.WithExpectLastSequencePerSubject(last))
		if err != nil {
			return 0, nil, err
		}
		latencies[i] = time.Since(t0)
		last = ack.Sequence
	}
	elapsed := time.Since(start)
	slices.Sort(latencies)
	return elapsed, latencies, nil
}

// KubernetesClients is the client count of Kubernetes' concurrent
// reference figure.
const KubernetesClients = 32

// reservingPods puts ReservingNamespace's quota in the stream, waits for
// the projection to apply it, and returns the stream's pods as reserving
// creates in that namespace.
func (r *run) reservingPods(ctx context.Context, env Env) ([][]byte, error) {
	var res ledger.AppendResult
	for _, o := range []struct{ resource, name, object string }{
		{"limitranges", "defaults", reservingLimitRange},
		{"resourcequotas", "bench", reservingQuota},
	} {
		var err error
		res, err = r.stream.Append(ctx, ledger.Event{Type: ledger.Upsert, Resource: o.resource, Namespace: ReservingNamespace,
			Name: o.name, Object: json.RawMessage(o.object), Source: "benchmark"}, ledger.AppendOptions{})
		if err != nil {
			return nil, fmt.Errorf("reserving namespace's %s: %w", o.resource, err)
		}
	}
	wctx, cancel := context.WithTimeout(ctx, RequestTimeout)
	defer cancel()
	if err := env.Projector.WaitApplied(wctx, res.Seq); err != nil {
		return nil, fmt.Errorf("reserving namespace's quota: %w", err)
	}
	out := make([][]byte, len(r.podObjects))
	for i, raw := range r.podObjects {
		var pod map[string]any
		if err := json.Unmarshal(raw, &pod); err != nil {
			return nil, err
		}
		meta, _ := pod["metadata"].(map[string]any)
		if meta == nil {
			return nil, errors.New("a pod without metadata")
		}
		meta["namespace"] = ReservingNamespace
		b, err := json.Marshal(pod)
		if err != nil {
			return nil, err
		}
		out[i] = admissionReview(ReservingNamespace, fmt.Sprintf("bench-%d", i), b)
	}
	return out, nil
}

// checkAllowed accepts an AdmissionReview reply that allows the request:
// under ReservingNamespace's quota a denial means something is wrong.
func checkAllowed(b []byte) error {
	if response, allowed, ok := scanReply(b); ok && response && allowed {
		return nil
	}
	var review struct {
		Response *struct {
			Allowed bool `json:"allowed"`
			Status  *struct {
				Message string `json:"message"`
			} `json:"status"`
		} `json:"response"`
	}
	if err := json.Unmarshal(b, &review); err != nil {
		return fmt.Errorf("admission reply: %w", err)
	}
	if review.Response == nil {
		return fmt.Errorf("admission reply without response: %.200s", b)
	}
	if !review.Response.Allowed {
		msg := ""
		if review.Response.Status != nil {
			msg = review.Response.Status.Message
		}
		return fmt.Errorf("reserving create denied: %s", msg)
	}
	return nil
}

// scanReply reads, without decoding it, whether an admission reply has a
// response object and whether it allows, the way the responder writes a
// reply: plain keys, allowed a literal. It checks the grammar of the whole
// reply. ok false leaves the reply to encoding/json, which also words
// what is wrong. The clients of a measurement check every reply in the
// measured process, so the check costs them a tenth of decoding it.
func scanReply(b []byte) (response, allowed, ok bool) {
	s := jsonscan.New(b)
	walked := s.Members(func(key []byte, plain bool) bool {
		if !plain || string(key) != "response" {
			return plain && s.Skip()
		}
		if response {
			return false // repeated: encoding/json keeps the last
		}
		response = true
		return s.Members(func(key []byte, plain bool) bool {
			if !plain || string(key) != "allowed" {
				return plain && s.Skip()
			}
			lit, ok := s.Literal()
			allowed = lit == "true"
			return ok && lit != "null"
		})
	})
	return response, allowed, walked && s.AtEnd()
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
	if response, _, ok := scanReply(b); ok && response {
		return nil
	}
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
