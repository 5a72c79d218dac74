package admission

import (
	"strings"
	"testing"

	admissionv1 "k8s.io/api/admission/v1"

	"github.com/quotaledger/quota/ledger/ledgertest"
	"github.com/quotaledger/quota/ledger/object"
)

// TestSurvivesAPanicDeciding makes the decision of one pod panic, as a bug
// would: its dry run and its reserving create are each answered with a
// 500 naming the panic, and the responder goes on deciding, in the same
// namespace too (the round that panicked leaves its queue usable).
func TestSurvivesAPanicDeciding(t *testing.T) {
	srv, _, js := ledgertest.StartServer(t)
	stream := ledgertest.OpenStream(t, js)
	const ns = "team"
	upsert(t, stream, quotaManifest(ns, "q", map[string]string{"pods": "2"}))
	testHookDecide = func(o *object.Object) {
		if o.Name == "boom" {
			panic("a bug")
		}
	}
	t.Cleanup(func() { testHookDecide = nil })
	r := startReplica(t, srv.ClientURL(), Config{})
	r.catchUp(t)

	for _, dryRun := range []bool{true, false} {
		resp := ask(t, r.client, ns, review("uid-boom", admissionv1.Create, ns, podManifest(ns, "boom", "100m"), "", dryRun))
		if resp.Allowed || resp.Result == nil || resp.Result.Code != 500 || resp.UID != "uid-boom" ||
			!strings.Contains(resp.Result.Message, "internal error: ") || !strings.Contains(resp.Result.Message, "panic: a bug") {
			t.Errorf("dry run %v of the pod whose decision panics: %+v; want a 500 naming the panic", dryRun, resp)
		}
	}
	for _, dryRun := range []bool{true, false} {
		if resp := ask(t, r.client, ns, review("uid-web", admissionv1.Create, ns, podManifest(ns, "web", "100m"), "", dryRun)); !resp.Allowed {
			t.Errorf("dry run %v of another pod after the panics: %+v; want allowed", dryRun, resp.Result)
		}
	}
	if got := r.used(t, ns, "q", "pods"); got != "1" {
		t.Errorf("used pods = %s after one reserved create, want 1", got)
	}
}
