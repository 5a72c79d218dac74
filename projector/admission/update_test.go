package admission

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	admissionv1 "k8s.io/api/admission/v1"

	"github.com/quotaledger/quota/ledger"
	"github.com/quotaledger/quota/ledger/ledgertest"
)

// pvcManifest is a claim of size in namespace; a resourceVersion marks
// it as stored (an UPDATE's oldObject, or the object's watch event).
func pvcManifest(namespace, name, size, resourceVersion string) string {
	rv := ""
	if resourceVersion != "" {
		rv = `,"resourceVersion":"` + resourceVersion + `"`
	}
	return `{"apiVersion":"v1","kind":"PersistentVolumeClaim","metadata":{"name":"` + name + `","namespace":"` + namespace + `"` + rv + `},` +
		`"spec":{"accessModes":["ReadWriteOnce"],"resources":{"requests":{"storage":"` + size + `"}}}}`
}

// allocated gives a claim manifest the status of a volume of size.
func allocated(manifest, size string) string {
	return strings.TrimSuffix(manifest, "}") + `,"status":{"phase":"Bound","allocatedResources":{"storage":"` + size + `"}}}`
}

// TestConcurrentUpdatesAndCreatesNeverExceedTheQuota races updates that
// grow claims with creates of new claims, from 40 clients on their own
// connections over 3 replicas, for the last 10Gi of a quota: exactly ten
// may be allowed, as each asks for 1Gi. An allowed update reserves its
// growth at once, so every replica's describe shows the quota full before
// any claim's own event arrives; the events then confirm the updates and
// creates without counting them twice, and nothing is left reserved.
func TestConcurrentUpdatesAndCreatesNeverExceedTheQuota(t *testing.T) {
	srv, _, js := ledgertest.StartServer(t)
	stream := ledgertest.OpenStream(t, js)
	const (
		ns      = "claims"
		updates = 20
		creates = 20
	)
	upsert(t, stream, quotaManifest(ns, "q", map[string]string{"requests.storage": "30Gi"}))
	for i := range updates {
		upsert(t, stream, pvcManifest(ns, fmt.Sprintf("old-%d", i), "1Gi", "5"))
	}
	replicas := make([]*replica, raceReplicas)
	for i := range replicas {
		replicas[i] = startReplica(t, srv.ClientURL(), Config{})
		replicas[i].catchUp(t)
	}
	if got := replicas[0].used(t, ns, "q", "requests.storage"); got != "20Gi" {
		t.Fatalf("before the race: used %s, want 20Gi", got)
	}

	type outcome struct {
		name    string
		update  bool
		allowed bool
		err     error
	}
	outcomes := make([]outcome, updates+creates)
	start := make(chan struct{})
	var wg sync.WaitGroup
	for c := range outcomes {
		nc, err := nats.Connect(srv.ClientURL(), nats.MaxReconnects(0))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(nc.Close)
		wg.Go(func() {
			<-start
			o := outcome{update: c < updates}
			var body []byte
			if o.update {
				o.name = fmt.Sprintf("old-%d", c)
				body = review("uid-"+o.name, admissionv1.Update, ns, pvcManifest(ns, o.name, "2Gi", "5"), pvcManifest(ns, o.name, "1Gi", "5"), false)
			} else {
				o.name = fmt.Sprintf("new-%d", c)
				body = review("uid-"+o.name, admissionv1.Create, ns, pvcManifest(ns, o.name, "1Gi", ""), "", false)
			}
			resp, err := askErr(nc, ns, body)
			o.err = err
			if err == nil {
				o.allowed = resp.Allowed
				if !resp.Allowed && (resp.Result == nil || resp.Result.Code != 403 ||
					!strings.HasPrefix(resp.Result.Message, `persistentvolumeclaims "`+o.name+`" is forbidden: exceeded quota: q, requested: requests.storage=1Gi, used: requests.storage=30Gi, limited: requests.storage=30Gi`)) {
					o.err = fmt.Errorf("got %+v, want a 403 exceeded quota", resp.Result)
				}
			}
			outcomes[c] = o
		})
	}
	close(start)
	wg.Wait()

	var allowed []outcome
	updated := 0
	for _, o := range outcomes {
		switch {
		case o.err != nil:
			t.Errorf("%s: %v", o.name, o.err)
		case o.allowed:
			allowed = append(allowed, o)
			if o.update {
				updated++
			}
		}
	}
	if t.Failed() {
		return
	}
	if len(allowed) != 10 {
		t.Fatalf("got %d requests allowed, want exactly 10", len(allowed))
	}
	for i, r := range replicas {
		if got := r.used(t, ns, "q", "requests.storage"); got != "30Gi" {
			t.Errorf("replica %d: describe shows used %s before the claims' events, want 30Gi (%d of the 10 allowed are updates)", i, got, updated)
		}
	}
	// The cluster reports what was allowed: the holds and reservations
	// are confirmed, and the usage stays.
	for _, o := range allowed {
		upsert(t, stream, pvcManifest(ns, o.name, map[bool]string{true: "2Gi", false: "1Gi"}[o.update], "6"))
	}
	for i, r := range replicas {
		if got := r.used(t, ns, "q", "requests.storage"); got != "30Gi" {
			t.Errorf("replica %d: describe shows used %s after the claims' events, want 30Gi", i, got)
		}
		left, err := r.proj.ExpiredReservations(time.Now().Add(time.Hour), 100)
		if err != nil {
			t.Fatal(err)
		}
		if len(left) != 0 {
			t.Errorf("replica %d: %d reservations left after their objects' events: %v", i, len(left), left)
		}
	}
}

// TestUpdateHoldExpires checks that the growth an update reserved is
// released when the claim's event does not come within the TTL (the
// update failed after admission, say), and that the release is in the log.
func TestUpdateHoldExpires(t *testing.T) {
	srv, _, js := ledgertest.StartServer(t)
	stream := ledgertest.OpenStream(t, js)
	const ns = "claims"
	upsert(t, stream, quotaManifest(ns, "q", map[string]string{"requests.storage": "10Gi"}))
	upsert(t, stream, pvcManifest(ns, "db", "4Gi", "5"))
	clk := newClock()
	r := startReplica(t, srv.ClientURL(), Config{ReservationTTL: time.Minute, SweepInterval: 10 * time.Millisecond, Now: clk.Now})
	r.catchUp(t)
	grow := review("uid-grow", admissionv1.Update, ns, pvcManifest(ns, "db", "9Gi", "5"), pvcManifest(ns, "db", "4Gi", "5"), false)
	if resp := ask(t, r.client, ns, grow); !resp.Allowed {
		t.Fatalf("growing db to 9Gi: %+v", resp.Result)
	}
	if got := r.used(t, ns, "q", "requests.storage"); got != "9Gi" {
		t.Fatalf("after the update: used %s, want 9Gi", got)
	}
	other := review("uid-other", admissionv1.Create, ns, pvcManifest(ns, "logs", "2Gi", ""), "", true)
	if resp := ask(t, r.client, ns, other); resp.Allowed {
		t.Fatal("a 2Gi claim was allowed while the growth is held")
	}
	clk.Advance(2 * time.Minute)
	poll(t, "the update's hold expired", func() bool { return r.used(t, ns, "q", "requests.storage") == "4Gi" })
	if resp := ask(t, r.client, ns, other); !resp.Allowed {
		t.Fatalf("a 2Gi claim after the hold expired: %+v", resp.Result)
	}
}

// TestRoundReservesUpdatesAsTheFoldDoes runs rounds of updates and
// creates by hand. Two updates of one claim in a round are decided as
// Kubernetes decides them, each against usage that counts the one before,
// and charged as the fold charges them: the larger of the two. A round
// right after (its view keeping the first round's reservations, which the
// projection may not have applied yet) decides on that view. After each
// round the view's usage is the projection's once the projection has
// caught up.
func TestRoundReservesUpdatesAsTheFoldDoes(t *testing.T) {
	const ns = "claims"
	r, stream := startWithQuota(t, ns, map[string]string{"requests.storage": "20Gi"})
	upsert(t, stream, pvcManifest(ns, "db", "2Gi", "5"))
	upsert(t, stream, pvcManifest(ns, "logs", "1Gi", "5"))
	r.catchUp(t)
	newJob := func(uid string, op admissionv1.Operation, obj, old string) *job {
		t.Helper()
		var in struct{ Request *request }
		if err := json.Unmarshal(review(uid, op, ns, obj, old, false), &in); err != nil {
			t.Fatal(err)
		}
		j := &job{req: in.Request, reservation: uid, done: make(chan outcome, 1)}
		o, err := decodeObject(in.Request.Object, ns)
		if err != nil {
			t.Fatal(err)
		}
		if op == admissionv1.Update {
			prev, err := decodeObject(in.Request.OldObject, ns)
			if err != nil {
				t.Fatal(err)
			}
			j.update = &update{obj: o, old: prev}
		}
		return j
	}
	grow := func(uid, name, from, to string) *job {
		return newJob(uid, admissionv1.Update, pvcManifest(ns, name, to, "5"), pvcManifest(ns, name, from, "5"))
	}
	round := func(want []string, jobs ...*job) {
		t.Helper()
		runRound(t, r, ns, jobs, want)
	}
	sameAsFold := func(want string) {
		t.Helper()
		viewUsed := mustView(t, r, ns).Quotas[0].Used["requests.storage"]
		if got := r.used(t, ns, "q", "requests.storage"); got != want || viewUsed.String() != want {
			t.Errorf("used requests.storage: the view %s, the projection %s; want %s", viewUsed.String(), got, want)
		}
	}
	round([]string{"", "", "", `persistentvolumeclaims "logs" is forbidden: exceeded quota: q, requested: requests.storage=2Gi, used: requests.storage=19Gi, limited: requests.storage=20Gi`},
		// u1 holds db at 6Gi: 7Gi used.
		grow("u1", "db", "2Gi", "6Gi"),
		// Kubernetes adds u2's 2Gi to decide; the fold holds the
		// larger of u1 and u2, 6Gi.
		grow("u2", "db", "2Gi", "4Gi"),
		// cache: 19Gi.
		newJob("u3", admissionv1.Create, pvcManifest(ns, "cache", "12Gi", ""), ""),
		// logs to 3Gi: 21Gi, denied.
		grow("u4", "logs", "1Gi", "3Gi"),
	)
	// db made at 6Gi, grown again to 7Gi: 1Gi more fills the quota.
	round([]string{"", `persistentvolumeclaims "logs" is forbidden: exceeded quota: q, requested: requests.storage=1Gi, used: requests.storage=20Gi, limited: requests.storage=20Gi`},
		grow("u5", "db", "6Gi", "7Gi"),
		grow("u6", "logs", "1Gi", "2Gi"),
	)
	sameAsFold("20Gi")
	// The cluster reports db at 7Gi: the holds it covers are released and
	// nothing changes; 4Gi of them were never more than db's own charge.
	upsert(t, stream, pvcManifest(ns, "db", "7Gi", "6"))
	sameAsFold("20Gi")
	records := ledgertest.ReadAll(t, stream, 1)
	var ops []string
	for _, rec := range records {
		for _, res := range rec.Event.Reserved() {
			ops = append(ops, res.ID+":"+map[string]string{"": "create", ledger.HoldOperation: "update"}[res.Operation])
		}
	}
	if got, want := strings.Join(ops, " "), "u1:update u2:update u3:create u5:update"; got != want {
		t.Errorf("reservations in the log: %s, want %s", got, want)
	}
}

// TestSubresourcesAreDecidedAsKubernetesDecidesThem sends updates on
// subresources: a pod's resize is decided and reserved like a claim's
// growth; a claim's status update is decided and reserved too, but never
// refused for exceeding a quota; quota leaves a plain pod update and any
// other subresource (a pod's status) alone, as Kubernetes' quota plugin
// does.
func TestSubresourcesAreDecidedAsKubernetesDecidesThem(t *testing.T) {
	const ns = "team"
	r, stream := startWithQuota(t, ns, map[string]string{"requests.cpu": "2", "requests.storage": "10Gi"})
	stored := func(manifest string) string {
		return strings.Replace(manifest, `"name":`, `"resourceVersion":"5","name":`, 1)
	}
	upsert(t, stream, stored(podManifest(ns, "web", "1")))
	upsert(t, stream, pvcManifest(ns, "db", "4Gi", "5"))
	r.catchUp(t)
	on := func(subresource string, body []byte) []byte {
		if subresource == "" {
			return body
		}
		return []byte(strings.Replace(string(body), `"operation":`, `"subResource":"`+subresource+`","operation":`, 1))
	}
	resize := func(uid, subresource, cpu string) []byte {
		return on(subresource, review(uid, admissionv1.Update, ns, stored(podManifest(ns, "web", cpu)), stored(podManifest(ns, "web", "1")), false))
	}
	cases := []struct {
		name     string
		body     []byte
		want     string // empty: allowed
		reserves bool
	}{
		{"a resize past the quota", resize("u1", "resize", "3"),
			`pods "web" is forbidden: exceeded quota: q, requested: requests.cpu=2, used: requests.cpu=1, limited: requests.cpu=2`, false},
		{"a plain update of the pod", resize("u2", "", "3"), "", false},
		{"the pod's status", resize("u3", "status", "3"), "", false},
		{"a claim's status, allocated beyond the quota", on("status", review("u4", admissionv1.Update, ns, allocated(pvcManifest(ns, "db", "4Gi", "5"), "12Gi"), pvcManifest(ns, "db", "4Gi", "5"), false)), "", true},
		{"a create on the resize subresource", on("resize", review("u6", admissionv1.Create, ns, podManifest(ns, "big", "3"), "", false)), "", false},
		{"a resize that fits", resize("u5", "resize", "2"), "", true},
	}
	for _, c := range cases {
		before, err := stream.LastSeq(t.Context())
		if err != nil {
			t.Fatal(err)
		}
		resp := ask(t, r.client, ns, c.body)
		got := ""
		if !resp.Allowed {
			got = resp.Result.Message
		}
		if got != c.want {
			t.Errorf("%s: got %q, want %q (empty: allowed)", c.name, got, c.want)
		}
		after, err := stream.LastSeq(t.Context())
		if err != nil {
			t.Fatal(err)
		}
		if reserved := after != before; reserved != c.reserves {
			t.Errorf("%s: reserved %v, want %v", c.name, reserved, c.reserves)
		}
	}
	if got := r.used(t, ns, "q", "requests.cpu"); got != "2" {
		t.Errorf("used requests.cpu %s, want 2: the resize reserved", got)
	}
	if got := r.used(t, ns, "q", "requests.storage"); got != "12Gi" {
		t.Errorf("used requests.storage %s, want 12Gi: a claim's status update charges what it allocates beyond the request", got)
	}
}

// TestUpdateOfAnObjectNotYetAppliedIsReserved sends an update of a claim
// whose event is in the log but not yet in the projection (the projection
// is held back): the projection does not know the claim, so the update's
// reservation could only charge nothing; appending it all the same, the
// responder learns from the compare-and-swap that the projection is
// behind, waits for it, and reserves the growth.
func TestUpdateOfAnObjectNotYetAppliedIsReserved(t *testing.T) {
	const ns = "claims"
	// The projection holds the quota only; the claim is appended after.
	b := holdBehind(t, quotaManifest(ns, "q", map[string]string{"requests.storage": "10Gi"}))
	upsert(t, b.stream, pvcManifest(ns, "db", "4Gi", "5"))
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	out := b.answer(t, ctx, ns, review("u1", admissionv1.Update, ns, pvcManifest(ns, "db", "8Gi", "5"), pvcManifest(ns, "db", "4Gi", "5"), false))
	if out == nil || !out.Response.Allowed {
		t.Fatalf("growing db to 8Gi: %+v", out)
	}
	if err := b.proj.CatchUp(ctx); err != nil {
		t.Fatal(err)
	}
	list, err := b.proj.Quotas(ns, "q", false)
	if err != nil || len(list.Items) != 1 {
		t.Fatalf("quotas: %v %v", list, err)
	}
	if got := list.Items[0].Status.Used["requests.storage"]; got.String() != "8Gi" {
		t.Errorf("used requests.storage %s, want 8Gi: the growth reserved", got.String())
	}
	cancel()
	if err := <-b.running; err != nil {
		t.Error(err)
	}
}

// TestPodMovedIntoTheTerminatingScope sends a plain update that gives a
// stored pod an active deadline, moving it from the NotTerminating quota
// into the Terminating one: the Terminating quota is charged the whole pod
// and the NotTerminating one nothing, as Kubernetes' plugin charges them;
// the update is reserved, so describe shows the charge at once; and once
// the pod's own event reports the deadline, the NotTerminating quota lets
// it go while the Terminating one keeps it.
func TestPodMovedIntoTheTerminatingScope(t *testing.T) {
	const ns = "team"
	srv, _, js := ledgertest.StartServer(t)
	stream := ledgertest.OpenStream(t, js)
	scoped := func(name, scope string) string {
		return strings.Replace(quotaManifest(ns, name, map[string]string{"pods": "5", "limits.cpu": "4"}), `"spec":{`, `"spec":{"scopes":["`+scope+`"],`, 1)
	}
	upsert(t, stream, scoped("terminating", "Terminating"))
	upsert(t, stream, scoped("not-terminating", "NotTerminating"))
	stored := strings.Replace(podManifest(ns, "job", "1"), `"name":`, `"resourceVersion":"5","name":`, 1)
	upsert(t, stream, stored)
	r := startReplica(t, srv.ClientURL(), Config{})
	r.catchUp(t)
	withDeadline := strings.Replace(stored, `"spec":{`, `"spec":{"activeDeadlineSeconds":600,`, 1)
	if !strings.Contains(withDeadline, "activeDeadlineSeconds") {
		t.Fatal("the pod's manifest has no spec to give a deadline")
	}

	if resp := ask(t, r.client, ns, review("u1", admissionv1.Update, ns, withDeadline, stored, false)); !resp.Allowed {
		t.Fatalf("the move refused: %+v", resp.Result)
	}
	for _, c := range []struct{ quota, resource, want string }{
		{"terminating", "pods", "1"}, {"terminating", "limits.cpu", "1"},
		{"not-terminating", "pods", "1"}, {"not-terminating", "limits.cpu", "1"},
	} {
		if got := r.used(t, ns, c.quota, c.resource); got != c.want {
			t.Errorf("reserved: %s %s used %s, want %s", c.quota, c.resource, got, c.want)
		}
	}

	upsert(t, stream, strings.Replace(withDeadline, `"resourceVersion":"5"`, `"resourceVersion":"6"`, 1))
	r.catchUp(t)
	for _, c := range []struct{ quota, resource, want string }{
		{"terminating", "pods", "1"}, {"not-terminating", "pods", "0"}, {"not-terminating", "limits.cpu", "0"},
	} {
		if got := r.used(t, ns, c.quota, c.resource); got != c.want {
			t.Errorf("made: %s %s used %s, want %s", c.quota, c.resource, got, c.want)
		}
	}
}
