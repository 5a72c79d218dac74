package admission

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/sync/errgroup"

	admissionv1 "k8s.io/api/admission/v1"

	"github.com/quotaledger/quota/ledger"
	"github.com/quotaledger/quota/ledger/ledgertest"
)

// testTTL is the reservation TTL of the lifecycle test. The sweeper's clock
// is moved past it by hand, so its length costs no time.
const testTTL = time.Hour

// TestReservationLifecycle follows reservations through their life: an
// allowed create is charged at once, a dry run changes nothing, the
// object's ADDED event confirms its reservation without counting it twice,
// and a reservation never confirmed is released after its TTL by an Expire
// event in the stream.
func TestReservationLifecycle(t *testing.T) {
	srv, _, js := ledgertest.StartServer(t)
	stream := ledgertest.OpenStream(t, js)
	const ns = "team"
	upsert(t, stream, quotaManifest(ns, "q", map[string]string{"pods": "2", "requests.cpu": "1"}))
	clk := newClock()
	r := startReplica(t, srv.ClientURL(), Config{ReservationTTL: testTTL, SweepInterval: 5 * time.Millisecond, Now: clk.Now})
	r.catchUp(t)
	ctx := context.Background()
	lastSeq := func() uint64 {
		t.Helper()
		seq, err := stream.LastSeq(ctx)
		if err != nil {
			t.Fatal(err)
		}
		return seq
	}
	wantUsed := func(step, pods, cpu string) {
		t.Helper()
		if got := r.used(t, ns, "q", "pods"); got != pods {
			t.Errorf("%s: got used pods=%s, want %s", step, got, pods)
		}
		if got := r.used(t, ns, "q", "requests.cpu"); got != cpu {
			t.Errorf("%s: got used requests.cpu=%s, want %s", step, got, cpu)
		}
	}
	create := func(uid, name, cpu string, dryRun bool) *admissionv1.AdmissionResponse {
		t.Helper()
		return ask(t, r.client, ns, review(uid, admissionv1.Create, ns, podManifest(ns, name, cpu), "", dryRun))
	}

	// An allowed create is charged before the reply: describe and the
	// next decision see it without catching up.
	if resp := create("uid-a", "a", "500m", false); !resp.Allowed {
		t.Fatalf("create a: got denied %+v, want allowed", resp.Result)
	}
	wantUsed("after reserving a", "1", "500m")

	// A dry run decides against the reservation and appends nothing.
	before := lastSeq()
	resp := create("uid-b", "b", "600m", true)
	want := `pods "b" is forbidden: exceeded quota: q, requested: requests.cpu=600m, used: requests.cpu=500m, limited: requests.cpu=1`
	if resp.Allowed || resp.Result == nil || resp.Result.Code != 403 || resp.Result.Reason != "Forbidden" || resp.Result.Message != want {
		t.Errorf("dry-run b: got %+v, want 403 Forbidden %q", resp.Result, want)
	}
	if resp.UID != "uid-b" {
		t.Errorf("dry-run b: got response uid %q, want uid-b", resp.UID)
	}
	if resp := create("uid-b2", "b", "500m", true); !resp.Allowed {
		t.Errorf("dry-run b of 500m: got denied %+v, want allowed", resp.Result)
	}
	if got := lastSeq(); got != before {
		t.Errorf("dry runs moved the stream from seq %d to %d, want unchanged", before, got)
	}
	wantUsed("after dry runs", "1", "500m")

	// The ADDED event of a confirms its reservation: the charge is the
	// object's now, counted once.
	ingestWatch(t, stream, `{"type":"ADDED","object":`+strings.Replace(podManifest(ns, "a", "500m"), `"name":"a"`, `"name":"a","uid":"0a","resourceVersion":"7"`, 1)+`}`)
	r.catchUp(t)
	wantUsed("after a's ADDED event", "1", "500m")

	// c takes the rest of the quota; d no longer fits.
	if resp := create("uid-c", "c", "500m", false); !resp.Allowed {
		t.Fatalf("create c: got denied %+v, want allowed", resp.Result)
	}
	wantUsed("after reserving c", "2", "1")
	if resp := create("uid-d", "d", "100m", false); resp.Allowed || resp.Result.Code != 403 ||
		!strings.HasPrefix(resp.Result.Message, `pods "d" is forbidden: exceeded quota: q, requested: pods=1,requests.cpu=100m`) {
		t.Errorf("create d: got %+v, want exceeded quota", resp.Result)
	}

	// Before its expiry nothing is released.
	if expired, err := r.proj.ExpiredReservations(clk.Now(), SweepBatchMax); err != nil || len(expired) != 0 {
		t.Fatalf("before the TTL: got expired %v (%v), want none", expired, err)
	}
	// Past the TTL the sweeper releases c, never a (confirmed).
	clk.Advance(testTTL + time.Minute)
	poll(t, "c released", func() bool { return r.used(t, ns, "q", "pods") == "1" })
	wantUsed("after c expired", "1", "500m")
	var expires []string
	for _, rec := range ledgertest.ReadAll(t, stream, 1) {
		if rec.Event.Type == ledger.Expire {
			expires = append(expires, rec.Event.Reservation)
		}
	}
	if len(expires) != 1 || expires[0] != "uid-c" {
		t.Errorf("got Expire events for %v, want one for uid-c", expires)
	}
	// The room c held is free again. The sweeper's clock goes back to the
	// real time first: left past the TTL, it would expire e at once.
	clk.Reset()
	if resp := create("uid-e", "e", "500m", false); !resp.Allowed {
		t.Errorf("create e after c expired: got denied %+v, want allowed", resp.Result)
	}
	wantUsed("after reserving e", "2", "1")
}

// TestReservationReplaysFromTheStream rebuilds a projection from the
// stream after a reservation and its expiry: the release is a recorded
// fact, so a fresh projection that never saw the wall clock agrees.
func TestReservationReplaysFromTheStream(t *testing.T) {
	srv, _, js := ledgertest.StartServer(t)
	stream := ledgertest.OpenStream(t, js)
	const ns = "team"
	upsert(t, stream, quotaManifest(ns, "q", map[string]string{"pods": "5"}))
	clk := newClock()
	r := startReplica(t, srv.ClientURL(), Config{ReservationTTL: testTTL, SweepInterval: 5 * time.Millisecond, Now: clk.Now})
	r.catchUp(t)
	for _, name := range []string{"kept", "dropped"} {
		if resp := ask(t, r.client, ns, review("uid-"+name, admissionv1.Create, ns, podManifest(ns, name, ""), "", false)); !resp.Allowed {
			t.Fatalf("create %s: got %+v", name, resp.Result)
		}
	}
	upsert(t, stream, podManifest(ns, "kept", ""))
	r.catchUp(t)
	clk.Advance(testTTL + time.Second)
	poll(t, "dropped released", func() bool { return r.used(t, ns, "q", "pods") == "1" })

	fresh := startReplica(t, srv.ClientURL(), Config{ReservationTTL: testTTL})
	fresh.catchUp(t)
	if got := fresh.used(t, ns, "q", "pods"); got != "1" {
		t.Errorf("fresh projection: got used pods=%s, want 1", got)
	}
}

// TestSweepReleasesANamespaceInOneEvent expires many reservations of two
// namespaces at once while creates keep arriving in one of them: the
// sweep releases each namespace's expired reservations in one Expire
// event (each append to a namespace makes its round in flight decide
// again, so one event per reservation kept a busy namespace's creates
// retrying until they failed with ErrContention), and the creates
// meanwhile are all allowed.
func TestSweepReleasesANamespaceInOneEvent(t *testing.T) {
	srv, _, js := ledgertest.StartServer(t)
	stream := ledgertest.OpenStream(t, js)
	namespaces := []string{"busy", "quiet"}
	for _, ns := range namespaces {
		upsert(t, stream, quotaManifest(ns, "q", map[string]string{"pods": "100000"}))
	}
	clk := newClock()
	r := startReplica(t, srv.ClientURL(), Config{ReservationTTL: testTTL, SweepInterval: 5 * time.Millisecond, Now: clk.Now})
	r.catchUp(t)

	const reserved = 400
	create := func(ns, name string) error {
		resp, err := askErr(r.client, ns, review("uid-"+ns+"-"+name, admissionv1.Create, ns, podManifest(ns, name, ""), "", false))
		if err == nil && !resp.Allowed {
			err = fmt.Errorf("create %s/%s denied: %+v", ns, name, resp.Result)
		}
		return err
	}
	var g errgroup.Group
	g.SetLimit(16)
	for _, ns := range namespaces {
		for i := range reserved {
			g.Go(func() error { return create(ns, fmt.Sprintf("old-%d", i)) })
		}
	}
	if err := g.Wait(); err != nil {
		t.Fatal(err)
	}
	for _, ns := range namespaces {
		if got := r.used(t, ns, "q", "pods"); got != strconv.Itoa(reserved) {
			t.Fatalf("%s: used pods %s after %d reservations", ns, got, reserved)
		}
	}
	before, err := stream.LastSeq(context.Background())
	if err != nil {
		t.Fatal(err)
	}

	// Past the TTL, with creates arriving in "busy" while the sweep runs
	// (the sweeper's clock stays past the TTL, so their reservations
	// expire too, later).
	clk.Advance(testTTL + time.Minute)
	for i := range 64 {
		g.Go(func() error { return create("busy", fmt.Sprintf("new-%d", i)) })
	}
	if err := g.Wait(); err != nil {
		t.Fatal(err)
	}
	poll(t, "every reservation released", func() bool {
		return r.used(t, "busy", "q", "pods") == "0" && r.used(t, "quiet", "q", "pods") == "0"
	})

	// The first Expire event of each namespace releases all its old
	// reservations, which expired before any new one.
	first := map[string][]string{}
	for _, rec := range ledgertest.ReadAll(t, stream, before+1) {
		if ns := rec.Event.Namespace; rec.Event.Type == ledger.Expire && first[ns] == nil {
			first[ns] = rec.Event.ExpiredIDs()
		}
	}
	for _, ns := range namespaces {
		released := map[string]bool{}
		for _, id := range first[ns] {
			released[id] = true
		}
		for i := range reserved {
			if id := fmt.Sprintf("uid-%s-old-%d", ns, i); !released[id] {
				t.Fatalf("%s: the first Expire event (%d ids) does not release %s", ns, len(first[ns]), id)
			}
		}
	}
}
