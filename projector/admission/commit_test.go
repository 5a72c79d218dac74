package admission

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	admissionv1 "k8s.io/api/admission/v1"

	"github.com/quotaledger/quota/ledger"
	"github.com/quotaledger/quota/ledger/ledgertest"
	"github.com/quotaledger/quota/projector"
)

// TestRoundDecidesTogetherAndAppendsOnce runs one round of five creates by
// hand: each is decided against the charges of those before it, the
// allowed ones are reserved by a single Reserve event, a second create of
// the same name is decided as Kubernetes decides it (against usage that
// counts the first) but reserves no second charge, and the next decision
// sees the round's charges.
func TestRoundDecidesTogetherAndAppendsOnce(t *testing.T) {
	const ns = "team"
	r, stream := startWithQuota(t, ns, map[string]string{"pods": "4", "requests.cpu": "1"})
	ctx := context.Background()
	before, err := stream.LastSeq(ctx)
	if err != nil {
		t.Fatal(err)
	}
	newJob := func(uid, name, cpu string) *job {
		t.Helper()
		var in struct{ Request *request }
		if err := json.Unmarshal(review(uid, admissionv1.Create, ns, podManifest(ns, name, cpu), "", false), &in); err != nil {
			t.Fatal(err)
		}
		return &job{req: in.Request, reservation: uid, done: make(chan outcome, 1)}
	}
	jobs := []*job{
		newJob("uid-a", "a", "400m"),
		newJob("uid-b", "b", "400m"),
		newJob("uid-c", "c", "400m"), // 1200m of 1: denied
		newJob("uid-d", "d", "100m"),
		newJob("uid-a", "a", "100m"), // a second create of a, from the same request uid
	}
	runRound(t, r, ns, jobs, []string{"", "", `pods "c" is forbidden: exceeded quota: q, requested: requests.cpu=400m, used: requests.cpu=800m, limited: requests.cpu=1`, "", ""})
	records := ledgertest.ReadAll(t, stream, before+1)
	if len(records) != 1 {
		t.Fatalf("the round appended %d events, want 1", len(records))
	}
	var names []string
	for _, res := range records[0].Event.Reserved() {
		names = append(names, res.Name)
	}
	if ev := records[0].Event; ev.Type != ledger.Reserve || len(names) != 4 || names[0] != "a" || names[1] != "b" || names[2] != "d" || names[3] != "a" {
		t.Fatalf("the round appended %s of %v, want one reserve of a, b, d, a", ev.Type, names)
	}
	// The next decision sees the round's charges, whether or not the
	// projection has applied them yet.
	resp := ask(t, r.client, ns, review("uid-e", admissionv1.Create, ns, podManifest(ns, "e", "200m"), "", false))
	if msg := `pods "e" is forbidden: exceeded quota: q, requested: requests.cpu=200m, used: requests.cpu=900m, limited: requests.cpu=1`; resp.Allowed || resp.Result.Message != msg {
		t.Errorf("create e: got %+v, want %q", resp.Result, msg)
	}
	if got := r.used(t, ns, "q", "pods"); got != "3" {
		t.Errorf("used pods = %s, want 3", got)
	}
	if got := r.used(t, ns, "q", "requests.cpu"); got != "900m" {
		t.Errorf("used requests.cpu = %s, want 900m", got)
	}
}

// TestCreateOfAnObjectTheProjectionHoldsChargesNothing creates objects the
// namespace holds only in the projection, not among the view's own
// reservations: a pod the cluster reported, and a pod reserved earlier
// whose reservation the projection has applied (so the view no longer
// keeps it). Each is decided as Kubernetes decides a second create of a
// name, but its reservation must charge nothing, in the view as in the
// fold, or the next create would be refused for room that is free.
func TestCreateOfAnObjectTheProjectionHoldsChargesNothing(t *testing.T) {
	const ns = "team"
	r, stream := startWithQuota(t, ns, map[string]string{"pods": "4"})
	create := func(uid, name string) {
		t.Helper()
		resp := ask(t, r.client, ns, review(uid, admissionv1.Create, ns, podManifest(ns, name, "100m"), "", false))
		if !resp.Allowed {
			t.Fatalf("create %s (%s): got denied %+v, want allowed", name, uid, resp.Result)
		}
	}
	ingestWatch(t, stream, `{"type":"ADDED","object":`+strings.Replace(podManifest(ns, "x", "100m"), `"name":"x"`, `"name":"x","uid":"0x","resourceVersion":"7"`, 1)+`}`)
	r.catchUp(t)
	create("uid-x", "x") // the cluster's x: charges nothing
	create("uid-a", "a")
	r.catchUp(t)
	// This round's view drops a, which the projection has applied.
	create("uid-b", "b")
	r.catchUp(t)
	create("uid-a2", "a") // a again: charges nothing
	// x, a and b hold 3 of 4 pods: c fits, and then nothing does.
	create("uid-c", "c")
	resp := ask(t, r.client, ns, review("uid-d", admissionv1.Create, ns, podManifest(ns, "d", "100m"), "", false))
	if msg := `pods "d" is forbidden: exceeded quota: q, requested: pods=1, used: pods=4, limited: pods=4`; resp.Allowed || resp.Result.Message != msg {
		t.Errorf("create d: got %+v, want %q", resp.Result, msg)
	}
	if got := r.used(t, ns, "q", "pods"); got != "4" {
		t.Errorf("used pods = %s, want 4", got)
	}
}

// TestRoundPreparesAgainWhenDefaultsChange prepares a create against a
// namespace without a LimitRange, then adds one before the round: the round
// must default the create with the LimitRange, as a fresh request would.
func TestRoundPreparesAgainWhenDefaultsChange(t *testing.T) {
	const ns = "team"
	r, stream := startWithQuota(t, ns, map[string]string{"pods": "4", "requests.cpu": "1"})
	var in struct{ Request *request }
	if err := json.Unmarshal(review("uid-a", admissionv1.Create, ns, podManifest(ns, "a", ""), "", false), &in); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	env, err := r.resp.states.env(ctx, ns)
	if err != nil {
		t.Fatal(err)
	}
	obj, err := decodeObject(in.Request.Object, ns)
	if err != nil {
		t.Fatal(err)
	}
	p := prepare(env, obj, nil)
	p.reserveAs("uid-a")
	j := &job{req: in.Request, prepared: p, reservation: "uid-a", done: make(chan outcome, 1)}
	if j.prepared.denial == nil {
		// Without defaults, the pod states no cpu request: must specify.
		d := j.prepared.decide(mustView(t, r, ns).NamespaceState)
		if d.allowed {
			t.Fatalf("without a LimitRange the create was allowed; the test needs a denial to tell the cases apart")
		}
	}
	upsert(t, stream, `{"apiVersion":"v1","kind":"LimitRange","metadata":{"name":"defaults","namespace":"team","uid":"lr"},"spec":{"limits":[{"type":"Container","defaultRequest":{"cpu":"300m"},"default":{"cpu":"300m"}}]}}`)
	r.catchUp(t)
	r.resp.round(context.Background(), ns, []*job{j})
	if o := <-j.done; o.err != nil || !o.resp.Allowed {
		t.Fatalf("create a after the LimitRange: %+v %v, want allowed", o.resp, o.err)
	}
	if got := r.used(t, ns, "q", "requests.cpu"); got != "300m" {
		t.Errorf("used requests.cpu = %s, want the LimitRange's 300m", got)
	}
}

func mustView(t *testing.T, r *replica, namespace string) *view {
	t.Helper()
	v, _, err := r.resp.states.get(context.Background(), namespace)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// runRound runs one round of jobs in namespace on r's responder and
// checks each job's verdict against want: the 403 message, or empty for
// allowed.
func runRound(t *testing.T, r *replica, namespace string, jobs []*job, want []string) {
	t.Helper()
	r.resp.round(context.Background(), namespace, jobs)
	for i, j := range jobs {
		o := <-j.done
		if o.err != nil {
			t.Fatalf("job %d: %v", i, o.err)
		}
		got := ""
		if !o.resp.Allowed {
			got = o.resp.Result.Message
		}
		if got != want[i] {
			t.Errorf("job %d: got %q, want %q (empty: allowed)", i, got, want[i])
		}
	}
}

// startWithQuota starts a server and a replica with one quota, q, in
// namespace, and returns once the replica has applied it.
func startWithQuota(t *testing.T, namespace string, hard map[string]string) (*replica, *ledger.Stream) {
	t.Helper()
	srv, _, js := ledgertest.StartServer(t)
	stream := ledgertest.OpenStream(t, js)
	upsert(t, stream, quotaManifest(namespace, "q", hard))
	r := startReplica(t, srv.ClientURL(), Config{})
	r.catchUp(t)
	return r, stream
}

// TestWithReservationsLeavesTheOldViewsAlone checks a chain of views made
// from one read: each view holds the keys reserved up to its own
// sequence and no later ones, whatever the later views reserve, a view
// made after a round in which no reservation charged (its state is the old
// view's) does not change the old view, and a key is forgotten once the
// projection has applied its last reservation (the views then find it in
// the projection), not its first.
func TestWithReservationsLeavesTheOldViewsAlone(t *testing.T) {
	check := func(step, name string, v *view, key string, want bool) {
		t.Helper()
		if got := v.reserved(key); got != want {
			t.Errorf("%s: %s: reserved(%s) = %v, want %v", step, name, key, got, want)
		}
	}
	read := &view{NamespaceState: &projector.NamespaceState{Namespace: "team", SubjectSeq: 3}, read: true}
	v4 := read.withReservations(read.NamespaceState, []string{"pods/a"}, 4, 3)
	check("a reserved at 4", "the read", read, "pods/a", false)
	check("a reserved at 4", "the view after", v4, "pods/a", true)

	v6 := v4.withReservations(v4.NamespaceState, []string{"pods/b"}, 6, 3)
	check("b reserved at 6", "the view before", v4, "pods/b", false)
	check("b reserved at 6", "the view after", v6, "pods/a", true)
	check("b reserved at 6", "the view after", v6, "pods/b", true)

	// A round that charged nothing, once the projection applied seq 5.
	v9 := v6.withReservations(v6.NamespaceState, nil, 9, 5)
	if read.SubjectSeq != 3 || v4.SubjectSeq != 4 || v6.SubjectSeq != 6 || v9.SubjectSeq != 9 {
		t.Errorf("SubjectSeqs %d, %d, %d, %d, want 3, 4, 6, 9", read.SubjectSeq, v4.SubjectSeq, v6.SubjectSeq, v9.SubjectSeq)
	}
	check("seq 5 applied", "the view after", v9, "pods/a", false)
	check("seq 5 applied", "the view after", v9, "pods/b", true)

	// b again at 11 before seq 6 is applied: kept past it, and the
	// views before still hold it as they did.
	v11 := v9.withReservations(v9.NamespaceState, []string{"pods/b"}, 11, 5)
	v12 := v11.withReservations(v11.NamespaceState, nil, 12, 6)
	check("b reserved again, seq 6 applied", "the view after", v12, "pods/b", true)
	check("b reserved again, seq 6 applied", "an earlier view", v9, "pods/b", true)
	check("b reserved again, seq 6 applied", "a view before b", v4, "pods/b", false)
	if n := v12.reservations(); n != 1 {
		t.Errorf("%d keys held after the projection applied seq 6, want 1 (pods/b)", n)
	}
	v13 := v12.withReservations(v12.NamespaceState, nil, 13, 11)
	check("seq 11 applied", "the view after", v13, "pods/b", false)
	if n := v13.reservations(); n != 0 {
		t.Errorf("%d keys held after the projection applied seq 11, want none", n)
	}
}

// TestMayWaitTellsWhenAViewWaitsForTheProjection checks mayWait against
// get itself: a view ahead of the projection waits for it when the cluster
// subject moved (mayWait true, and get does not return before its
// deadline) and is used at once when it did not (mayWait false). The
// namespace has no LimitRange, so the first get looks it up in the log,
// which mayWait tells too.
func TestMayWaitTellsWhenAViewWaitsForTheProjection(t *testing.T) {
	const ns = "team"
	r, _ := startWithQuota(t, ns, map[string]string{"pods": "4"})
	c := r.resp.states
	if !c.mayWait(ns) {
		t.Fatal("mayWait false with no view cached and no look-up in the log yet")
	}
	v, _, err := c.get(context.Background(), ns)
	if err != nil {
		t.Fatal(err)
	}
	ahead := func(clusterShift uint64) {
		st := *v.NamespaceState
		st.SubjectSeq += 5 // reservations the projection has not applied
		st.ClusterSeq += clusterShift
		c.mu.Lock()
		c.m[ns] = &view{NamespaceState: &st, env: v.env}
		c.mu.Unlock()
	}
	for _, tc := range []struct {
		name         string
		clusterShift uint64
		wait         bool
	}{
		{"cluster subject as viewed", 0, false},
		{"cluster subject moved", 1, true},
	} {
		ahead(tc.clusterShift)
		if got := c.mayWait(ns); got != tc.wait {
			t.Errorf("%s: mayWait %v, want %v", tc.name, got, tc.wait)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
		_, _, err := c.get(ctx, ns)
		cancel()
		if waited := errors.Is(err, projector.ErrNotCaughtUp); waited != tc.wait {
			t.Errorf("%s: get waited %v (err %v), want %v", tc.name, waited, err, tc.wait)
		}
	}
}
