package admission

import (
	"testing"

	"github.com/nats-io/nats.go"
	admissionv1 "k8s.io/api/admission/v1"

	"github.com/quotaledger/quota/ledger/ledgertest"
)

// TestServiceAccountLookedUp asks for pods naming service accounts in a
// namespace whose ServiceAccounts the log holds: one it lacks is refused
// in the ServiceAccount plugin's words, before quota (whose pods limit is
// spent), until the account is ingested; in a namespace with none in the
// log nothing is looked up.
func TestServiceAccountLookedUp(t *testing.T) {
	srv, _, js := ledgertest.StartServer(t)
	stream := ledgertest.OpenStream(t, js)
	const ns = "accounts"
	account := func(name string) string {
		return `{"apiVersion":"v1","kind":"ServiceAccount","metadata":{"name":"` + name + `","namespace":"` + ns + `","uid":"sa-` + name + `"}}`
	}
	upsert(t, stream, quotaManifest(ns, "q", map[string]string{"pods": "0"}))
	upsert(t, stream, account("default"))
	upsert(t, stream, quotaManifest("other", "q", map[string]string{"pods": "0"}))
	r := startReplica(t, srv.ClientURL(), Config{})
	r.catchUp(t)
	nc, err := nats.Connect(srv.ClientURL())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
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

	upsert(t, stream, account("builder"))
	r.catchUp(t)
	check(ns, "builder", `pods "job" is forbidden: exceeded quota: q, requested: pods=1, used: pods=0, limited: pods=0`)
}
