package admission

import (
	"context"
	"strings"
	"testing"
	"time"

	admissionv1 "k8s.io/api/admission/v1"

	"github.com/quotaledger/quota/ledger"
	"github.com/quotaledger/quota/ledger/ledgertest"
	"github.com/quotaledger/quota/projector"
)

// appendProgress appends a Progress event saying the log holds every
// change of resource up to the moment at.
func appendProgress(t *testing.T, stream *ledger.Stream, resource string, at time.Time) {
	t.Helper()
	ev := ledger.Event{Type: ledger.Progress, Source: "test exporter",
		Progress: []ledger.FeedPoint{{Resource: resource, ResourceVersion: "100", At: at}}}
	if _, err := stream.Append(context.Background(), ev, ledger.AppendOptions{}); err != nil {
		t.Fatal(err)
	}
}

// TestReservationsEndOnTheFeed checks the release rule of a ledger fed by
// the exporter: a reservation that no object confirms holds for as long
// as the feed of its resource has not passed its end (its stream time
// plus the store timeout), however far the server's clock runs past it;
// a point of another resource, or one not past the end, releases
// nothing; a point past it releases it by an Expire event, and a
// confirmed reservation is never released.
func TestReservationsEndOnTheFeed(t *testing.T) {
	srv, _, js := ledgertest.StartServer(t)
	stream := ledgertest.OpenStream(t, js)
	const ns = "team"
	upsert(t, stream, quotaManifest(ns, "q", map[string]string{"pods": "2"}))
	clk := newClock()
	const storeTimeout = time.Minute
	r := startReplica(t, srv.ClientURL(), Config{ReleaseByFeed: true, StoreTimeout: storeTimeout,
		ReservationTTL: time.Second, SweepInterval: 5 * time.Millisecond, Now: clk.Now})
	r.catchUp(t)
	create := func(name string) *admissionv1.AdmissionResponse {
		t.Helper()
		return ask(t, r.client, ns, review("uid-"+name, admissionv1.Create, ns, podManifest(ns, name, ""), "", false))
	}
	for _, name := range []string{"a-1", "a-2"} {
		if resp := create(name); !resp.Allowed {
			t.Fatalf("create %s: got denied %+v, want allowed", name, resp.Result)
		}
	}
	var reservedAt time.Time
	for _, rec := range ledgertest.ReadAll(t, stream, 1) {
		if rec.Event.Type == ledger.Reserve {
			if rec.Event.Release != ledger.ReleaseByFeed || rec.Event.ReservationTTL != storeTimeout {
				t.Fatalf("reserve: got release %q, ttl %s; want %q, %s", rec.Event.Release, rec.Event.ReservationTTL, ledger.ReleaseByFeed, storeTimeout)
			}
			reservedAt = rec.Time
		}
	}
	// a-1's object appears; a-2's never does.
	ingestWatch(t, stream, `{"type":"ADDED","object":`+strings.Replace(podManifest(ns, "a-1", ""), `"name":"a-1"`, `"name":"a-1","uid":"u1","resourceVersion":"7"`, 1)+`}`)
	r.catchUp(t)

	// The server's clock far past any TTL, and no feed: a-2 holds.
	clk.Advance(24 * time.Hour)
	if resp := create("a-3"); resp.Allowed {
		t.Fatal("a-3 allowed with a-1 created and a-2 reserved under pods: 2")
	}
	appendProgress(t, stream, "services", reservedAt.Add(time.Hour))
	appendProgress(t, stream, "pods", reservedAt.Add(storeTimeout-time.Second))
	r.catchUp(t)
	if expired, err := r.proj.ExpiredReservations(clk.Now(), SweepBatchMax); err != nil || len(expired) != 0 {
		t.Fatalf("feed not past the end: got released %v (%v), want none", expired, err)
	}
	if got := r.used(t, ns, "q", "pods"); got != "2" {
		t.Fatalf("feed not past the end: used pods %s, want 2", got)
	}
	feeds, err := r.proj.Feeds()
	if err != nil {
		t.Fatal(err)
	}
	want := []projector.Feed{
		{Resource: "pods", At: reservedAt.Add(storeTimeout - time.Second).UTC(), Waiting: 1, OldestEnd: reservedAt.Add(storeTimeout).UTC()},
		{Resource: "services", At: reservedAt.Add(time.Hour).UTC()},
	}
	if len(feeds) != 2 || feeds[0].Resource != want[0].Resource || !feeds[0].At.Equal(want[0].At) || feeds[0].Waiting != 1 ||
		!feeds[0].OldestEnd.Equal(want[0].OldestEnd) || feeds[1].Resource != "services" || feeds[1].Waiting != 0 || feeds[0].Source != "test exporter" {
		t.Fatalf("feeds: got %+v, want %+v", feeds, want)
	}

	// The feed past a-2's end: it is released through the log.
	appendProgress(t, stream, "pods", reservedAt.Add(storeTimeout+time.Second))
	poll(t, "a-2 released", func() bool { return r.used(t, ns, "q", "pods") == "1" })
	var expired []string
	for _, rec := range ledgertest.ReadAll(t, stream, 1) {
		expired = append(expired, rec.Event.ExpiredIDs()...)
	}
	if len(expired) != 1 || expired[0] != "uid-a-2" {
		t.Fatalf("got Expire events for %v, want one for uid-a-2", expired)
	}
	// An older point later changes nothing: the feed never moves back.
	appendProgress(t, stream, "pods", reservedAt)
	r.catchUp(t)
	if feeds, err := r.proj.Feeds(); err != nil || !feeds[0].At.Equal(reservedAt.Add(storeTimeout+time.Second)) {
		t.Fatalf("after an older point: got %+v (%v), want the newer point kept", feeds, err)
	}
}
