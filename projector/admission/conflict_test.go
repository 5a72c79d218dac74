package admission

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	admissionv1 "k8s.io/api/admission/v1"

	"github.com/quotaledger/quota/projector/usedtest"
)

// withUID gives a manifest of podManifest the uid and resourceVersion the
// API server gives the stored object.
func withUID(manifest, name string) string {
	return strings.Replace(manifest, `"name":"`+name+`"`, `"name":"`+name+`","uid":"u-`+name+`","resourceVersion":"1"`, 1)
}

// reviewBehind sends a review to b's responder and returns its answer,
// failing if there is none within wait.
func reviewBehind(t *testing.T, b *behind, namespace string, body []byte, wait time.Duration) *admissionv1.AdmissionResponse {
	t.Helper()
	answered := make(chan *admissionv1.AdmissionReview, 1)
	go func() {
		out, err := b.resp.reviewBody(t.Context(), namespace, body)
		if err != nil {
			t.Errorf("review: %v", err)
		}
		answered <- out
	}()
	select {
	case out := <-answered:
		if out == nil || out.Response == nil {
			t.Fatalf("no response")
		}
		return out.Response
	case <-time.After(wait):
		t.Fatalf("no answer within %s", wait)
		return nil
	}
}

// untilCleanup is a context for running b's projection that ends with
// the test, which then checks how the projection stopped.
func untilCleanup(t *testing.T, b *behind) context.Context {
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(func() {
		cancel()
		if err := <-b.running; err != nil {
			t.Error(err)
		}
	})
	return ctx
}

func catchUpBehind(t *testing.T, b *behind) {
	t.Helper()
	last, err := b.stream.LastSeq(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), waitTimeout)
	defer cancel()
	if err := b.proj.WaitApplied(ctx, last); err != nil {
		t.Fatal(err)
	}
	usedtest.CheckUsed(t, b.proj.DB())
}

const limitRangeTeam = `{"apiVersion":"v1","kind":"LimitRange","metadata":{"name":"lr","namespace":"team","uid":"u-lr"},"spec":{"limits":[{"type":"Container","defaultRequest":{"cpu":"100m"}}]}}`

// TestAppendRefusedByAChangedChargeDecidesAgain appends an event that
// reports a reserved pod at a larger charge than its reservation's: the
// next create's append is refused, and the round must wait for the
// projection and decide again on the larger figure, which refuses it.
func TestAppendRefusedByAChangedChargeDecidesAgain(t *testing.T) {
	const ns = "team"
	b := holdBehind(t, quotaManifest(ns, "q", map[string]string{"pods": "10", "requests.cpu": "350m"}), limitRangeTeam)
	m := newTestMetrics(t)
	b.resp.cfg.Metrics = m
	if resp := reviewBehind(t, b, ns, review("u-web-1", admissionv1.Create, ns, podManifest(ns, "web-1", "100m"), "", false), waitTimeout); !resp.Allowed {
		t.Fatalf("create web-1: %+v, want allowed", resp.Result)
	}
	upsert(t, b.stream, withUID(podManifest(ns, "web-1", "300m"), "web-1"))
	out := b.answer(t, untilCleanup(t, b), ns, review("u-web-2", admissionv1.Create, ns, podManifest(ns, "web-2", "100m"), "", false))
	if c := testutil.ToFloat64(m.conflicts); c != 1 {
		t.Errorf("conflicts %v, want 1: the append refused while the projection was stopped", c)
	}
	want := `pods "web-2" is forbidden: exceeded quota: q, requested: requests.cpu=100m, used: requests.cpu=300m, limited: requests.cpu=350m`
	if out == nil || out.Response.Allowed || out.Response.Result.Message != want {
		t.Fatalf("create web-2: %+v, want denied with %q", out, want)
	}
	catchUpBehind(t, b)
}
