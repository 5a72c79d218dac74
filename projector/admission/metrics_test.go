package admission

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	dto "github.com/prometheus/client_model/go"
	admissionv1 "k8s.io/api/admission/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/quotaledger/quota/ledger/ledgertest"
)

func newTestMetrics(t *testing.T) *Metrics {
	t.Helper()
	m, err := NewMetrics(prometheus.NewRegistry())
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// TestMetricsCountAnswersByModeAndResult sends one request of each kind
// over NATS and reads the counters: each answer under its mode and
// result, one Reserve append for the reserving create, and its release by
// the sweep once past its TTL.
func TestMetricsCountAnswersByModeAndResult(t *testing.T) {
	const ns = "team"
	m := newTestMetrics(t)
	clk := newClock()
	srv, _, _ := ledgertest.StartServer(t)
	r := startReplica(t, srv.ClientURL(), Config{Metrics: m, ReservationTTL: testTTL, SweepInterval: 5 * time.Millisecond, Now: clk.Now})
	upsert(t, r.stream, quotaManifest(ns, "q", map[string]string{"pods": "1"}))
	r.catchUp(t)

	web := podManifest(ns, "web", "100m")
	for _, c := range []struct {
		what    string
		body    []byte
		allowed bool
	}{
		{"a dry-run create", review("u1", admissionv1.Create, ns, web, "", true), true},
		{"a reserving create", review("u2", admissionv1.Create, ns, web, "", false), true},
		{"a dry-run create past the quota", review("u3", admissionv1.Create, ns, podManifest(ns, "api", "100m"), "", true), false},
		{"a delete", review("u4", admissionv1.Delete, ns, "", web, false), true},
		{"an unreadable request", []byte(`{"request":`), false},
	} {
		if resp := ask(t, r.client, ns, c.body); resp.Allowed != c.allowed {
			t.Fatalf("%s: allowed %v, want %v (%+v)", c.what, resp.Allowed, c.allowed, resp.Result)
		}
	}
	for _, c := range []struct {
		mode, result string
		want         float64
	}{
		{"dry_run", "allowed", 1},
		{"dry_run", "denied", 1},
		{"reserving", "allowed", 1},
		{"other", "allowed", 1},
		{"invalid", "error", 1},
		{"reserving", "denied", 0},
		{"dry_run", "error", 0},
	} {
		if got := testutil.ToFloat64(m.requests.WithLabelValues(c.mode, c.result)); got != c.want {
			t.Errorf("requests{mode=%s,result=%s} = %v, want %v", c.mode, c.result, got, c.want)
		}
	}
	if got := testutil.CollectAndCount(m.requests); got != len(modes)*len(results) {
		t.Errorf("requests has %d series, want every mode and result from the start (%d)", got, len(modes)*len(results))
	}
	for _, mode := range modes {
		want := uint64(1)
		if mode == "dry_run" {
			want = 2
		}
		h := &dto.Metric{}
		if err := m.durations[slices.Index(modes[:], mode)].(prometheus.Histogram).Write(h); err != nil {
			t.Fatal(err)
		}
		if got := h.GetHistogram().GetSampleCount(); got != want {
			t.Errorf("duration{mode=%s} counts %d requests, want %d", mode, got, want)
		}
	}
	if a, n := testutil.ToFloat64(m.appends), testutil.ToFloat64(m.reservations); a != 1 || n != 1 {
		t.Errorf("Reserve appends %v holding %v reservations, want 1 and 1", a, n)
	}

	clk.Advance(2 * testTTL)
	poll(t, "the reservation released and counted", func() bool { return testutil.ToFloat64(m.released) == 1 })
}

// TestMetricsCountReserveConflicts holds the projection behind an event
// of the namespace that is in the log: the create's first append expects
// the subject's older sequence and is refused, which is counted, and the
// create is decided again once the projection has applied the event.
func TestMetricsCountReserveConflicts(t *testing.T) {
	const ns = "team"
	b := holdBehind(t,
		quotaManifest(ns, "q", map[string]string{"pods": "10"}),
		`{"apiVersion":"v1","kind":"LimitRange","metadata":{"name":"lr","namespace":"`+ns+`","uid":"u-lr"},"spec":{"limits":[{"type":"Container","defaultRequest":{"cpu":"100m"}}]}}`)
	m := newTestMetrics(t)
	b.resp.cfg.Metrics = m
	// In the log, not in the projection.
	upsert(t, b.stream, `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"settings","namespace":"`+ns+`","uid":"u-cm"}}`)

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	answered := make(chan *admissionv1.AdmissionReview, 1)
	go func() {
		out, err := b.resp.reviewBody(ctx, ns, review("u1", admissionv1.Create, ns, podManifest(ns, "web", "100m"), "", false))
		if err != nil {
			t.Errorf("review: %v", err)
		}
		answered <- out
	}()
	poll(t, "the refused append counted", func() bool { return testutil.ToFloat64(m.conflicts) == 1 })
	go func() { b.running <- b.proj.Run(ctx) }()
	if out := <-answered; out == nil || !out.Response.Allowed {
		t.Fatalf("create after a conflict: %+v, want allowed", out)
	}
	if c, a := testutil.ToFloat64(m.conflicts), testutil.ToFloat64(m.appends); c != 1 || a != 1 {
		t.Errorf("conflicts %v, appends %v; want 1 and 1", c, a)
	}
	cancel()
	if err := <-b.running; err != nil {
		t.Error(err)
	}
}

// TestVerdictTellsVerdictsFromFailures sorts denials: the API server's
// verdicts (quota admit's exit 1, the metrics' denied) from the
// responder's failures to decide (exit 2, error).
func TestVerdictTellsVerdictsFromFailures(t *testing.T) {
	for _, tc := range []struct {
		st   metav1.Status
		want bool
	}{
		{metav1.Status{Code: 403, Reason: metav1.StatusReasonForbidden}, true},
		{metav1.Status{Code: 422, Reason: metav1.StatusReasonInvalid}, true},
		{metav1.Status{Code: 500}, true}, // a plugin's plain error
		{metav1.Status{Code: 500, Reason: metav1.StatusReasonInternalError}, false},
		{metav1.Status{Code: 400, Reason: metav1.StatusReasonBadRequest}, false},
	} {
		if got := Verdict(&tc.st); got != tc.want {
			t.Errorf("Verdict(%d %q) = %v, want %v", tc.st.Code, tc.st.Reason, got, tc.want)
		}
	}
}
