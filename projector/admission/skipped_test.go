package admission

import (
	"context"
	"testing"

	admissionv1 "k8s.io/api/admission/v1"

	"github.com/quotaledger/quota/ledger"
	"github.com/quotaledger/quota/ledger/ledgertest"
)

// TestReservesAfterAnUnreadableRecord puts a record no reader can decode
// on a namespace's subject (a foreign publisher's bytes, an event of a
// newer build): the projection skips it, and reserving creates in the
// namespace go on. They failed with "too much contention" until another
// event reached the namespace: the skipped record's sequence was counted
// to the cluster's subject, so every compare-and-swap expected the
// namespace's subject one event short.
func TestReservesAfterAnUnreadableRecord(t *testing.T) {
	srv, _, js := ledgertest.StartServer(t)
	stream := ledgertest.OpenStream(t, js)
	const ns = "team"
	upsert(t, stream, quotaManifest(ns, "q", map[string]string{"pods": "5"}))
	if _, err := js.Publish(context.Background(), ledger.Subject(ns), []byte(`{"v":1,"type":"upsert","resource":"pods","namespace":"team","name":"x","object":{},"unknown":1}`)); err != nil {
		t.Fatal(err)
	}
	r := startReplica(t, srv.ClientURL(), Config{})
	r.catchUp(t)
	for _, name := range []string{"web-1", "web-2"} {
		resp := ask(t, r.client, ns, review("uid-"+name, admissionv1.Create, ns, podManifest(ns, name, "100m"), "", false))
		if !resp.Allowed {
			t.Fatalf("create %s after the unreadable record: %+v; want allowed", name, resp.Result)
		}
	}
	if got := r.used(t, ns, "q", "pods"); got != "2" {
		t.Errorf("used pods = %s, want 2", got)
	}
}
