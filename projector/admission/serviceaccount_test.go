package admission

import (
	"testing"

	admissionv1 "k8s.io/api/admission/v1"

	"github.com/quotaledger/quota/ledger/ledgertest"
)

// TestServiceAccountLookedUp asks for pods naming service accounts in a
// namespace whose ServiceAccounts the log holds: one it lacks is refused
// in the ServiceAccount plugin's words, before quota (whose pods limit is
// spent), until the account is ingested (not when its create is only
// reserved); in a namespace with none in the log nothing is looked up.
func TestServiceAccountLookedUp(t *testing.T) {
	srv, _, js := ledgertest.StartServer(t)
	stream := ledgertest.OpenStream(t, js)
	const ns = "accounts"
	account := func(name string) string {
		return `{"apiVersion":"v1","kind":"ServiceAccount","metadata":{"name":"` + name + `","namespace":"` + ns + `","uid":"sa-` + name + `"}}`
	}
	upsert(t, stream, quotaManifest(ns, "q", map[string]string{"pods": "0", "count/serviceaccounts": "5"}))
	upsert(t, stream, account("default"))
	upsert(t, stream, quotaManifest("other", "q", map[string]string{"pods": "0"}))
	r := startReplica(t, srv.ClientURL(), Config{})
	r.catchUp(t)
	nc := clientConn(t, srv.ClientURL())
	podAs := func(namespace, account string) string {
		return `{"apiVersion":"v1","kind":"Pod","metadata":{"name":"job","namespace":"` + namespace + `"},"spec":{"serviceAccountName":"` + account + `","containers":[{"name":"a","image":"i"}]}}`
	}
	check := func(namespace, account, want string) {
		t.Helper()
		resp := ask(t, nc, namespace, review("uid-"+account, admissionv1.Create, namespace, podAs(namespace, account), "", true))
		if resp.Allowed || resp.Result == nil || resp.Result.Code != 403 || resp.Result.Message != want {
			t.Fatalf("%s in %s: got %+v, want a 403 %q", account, namespace, resp.Result, want)
		}
	}
	check(ns, "builder", `pods "job" is forbidden: error looking up service account accounts/builder: serviceaccount "builder" not found`)
	check(ns, "default", `pods "job" is forbidden: exceeded quota: q, requested: pods=1, used: pods=0, limited: pods=0`)
	check("other", "builder", `pods "job" is forbidden: exceeded quota: q, requested: pods=1, used: pods=0, limited: pods=0`)

	// An account admitted but not created yet, only reserved, is not
	// there to be found.
	if resp := ask(t, nc, ns, review("uid-sa", admissionv1.Create, ns, account("builder"), "", false)); !resp.Allowed {
		t.Fatalf("account create refused: %+v", resp.Result)
	}
	// A fact of the namespace after it, so that the decision reads the
	// projection again rather than the view its own reservation left.
	upsert(t, stream, `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"settings","namespace":"`+ns+`","uid":"cm1"}}`)
	r.catchUp(t)
	if got := r.used(t, ns, "q", "count/serviceaccounts"); got != "2" {
		t.Fatalf("count/serviceaccounts used %s, want 2 (default and the reservation)", got)
	}
	check(ns, "builder", `pods "job" is forbidden: error looking up service account accounts/builder: serviceaccount "builder" not found`)

	upsert(t, stream, account("builder"))
	r.catchUp(t)
	check(ns, "builder", `pods "job" is forbidden: exceeded quota: q, requested: pods=1, used: pods=0, limited: pods=0`)
}
