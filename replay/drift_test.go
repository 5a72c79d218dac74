package replay

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	bolt "go.etcd.io/bbolt"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/quotaledger/quota/ledger"
	"github.com/quotaledger/quota/ledger/ledgertest"
	"github.com/quotaledger/quota/projector"
)

func podObject(ns, name, cpu string) json.RawMessage {
	return json.RawMessage(fmt.Sprintf(`{"apiVersion":"v1","kind":"Pod","metadata":{"name":%q,"namespace":%q,"uid":"uid-%s"},`+
		`"spec":{"containers":[{"name":"app","image":"nginx","resources":{"requests":{"cpu":%q,"memory":"128Mi"}}}]},"status":{"phase":"Running"}}`,
		name, ns, name, cpu))
}

func upsertPod(ns, name, cpu string) ledger.Event {
	return ledger.Event{Version: ledger.EncodingVersion, Type: ledger.Upsert, Resource: "pods", Namespace: ns, Name: name,
		UID: "uid-" + name, Object: podObject(ns, name, cpu)}
}

func computeQuota(ns string) ledger.Event {
	obj := fmt.Sprintf(`{"apiVersion":"v1","kind":"ResourceQuota","metadata":{"name":"compute","namespace":%q},`+
		`"spec":{"hard":{"requests.cpu":"4","requests.memory":"4Gi","pods":"10"}}}`, ns)
	return ledger.Event{Version: ledger.EncodingVersion, Type: ledger.Upsert, Resource: "resourcequotas", Namespace: ns,
		Name: "compute", Object: json.RawMessage(obj)}
}

// serveAudit runs the audit responder of a live projector, as the server
// does, until the returned function (or the end of the test) stops it.
func serveAudit(t *testing.T, nc *nats.Conn, l *liveProjector, snaps *projector.Snapshots) (stop func()) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	// The responder subscribes to the describe, versions, explain and
	// snapshot subjects as it starts; requests sent before that meet "no
	// responders".
	subscribed := nc.NumSubscriptions() + 4
	go func() { done <- projector.NewResponder(nc, l.p, projector.ResponderConfig{Snapshots: snaps}).Run(ctx) }()
	deadline := time.Now().Add(10 * time.Second)
	for nc.NumSubscriptions() < subscribed {
		if time.Now().After(deadline) {
			t.Fatal("audit responder did not subscribe within 10s")
		}
		time.Sleep(time.Millisecond) // poll interval, bounded by the deadline
	}
	if err := nc.Flush(); err != nil {
		t.Fatal(err)
	}
	var once sync.Once
	stop = func() {
		once.Do(func() {
			running := nc.NumSubscriptions()
			cancel()
			if err := <-done; err != nil {
				t.Errorf("audit responder: %v", err)
			}
			// Run drains its two subscriptions, which ends after it
			// returns; a responder started next counts subscriptions from
			// what is left.
			deadline := time.Now().Add(10 * time.Second)
			for nc.NumSubscriptions() > running-2 {
				if time.Now().After(deadline) {
					t.Error("audit responder's subscriptions not drained within 10s")
					return
				}
				time.Sleep(time.Millisecond) // poll interval, bounded by the deadline
			}
		})
	}
	t.Cleanup(stop)
	return stop
}

func verify(t *testing.T, nc *nats.Conn, stream *ledger.Stream, snaps *projector.Snapshots) []string {
	t.Helper()
	v, err := Verify(context.Background(), nc, stream, snaps, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer v.Close()
	var lines []string
	for _, d := range v.Differences {
		lines = append(lines, d.String())
	}
	return lines
}

// TestLostDeleteVerifyReportsDriftAndResyncRepairs removes an object from
// the live projection behind its back, as a delete that never reached the
// log leaves the projection and the cluster apart. Verify reports the
// drift; a resync listing what the cluster holds records the correction in
// the log, after which the live projection and a replay agree again, and a
// replay to just before the resync still shows the object.
func TestLostDeleteVerifyReportsDriftAndResyncRepairs(t *testing.T) {
	_, nc, js := ledgertest.StartServer(t)
	stream := ledgertest.OpenStream(t, js)
	snaps := openSnapshots(t, js)
	path := filepath.Join(t.TempDir(), "live.db")
	live := startLive(t, path, stream)
	appendAll(t, stream, []ledger.Event{
		computeQuota("team-a"),
		upsertPod("team-a", "web-1", "500m"),
		upsertPod("team-a", "web-2", "1"),
		upsertPod("team-a", "batch-7", "1500m"),
	})
	live.waitCaughtUp()
	stopAudit := serveAudit(t, nc, live, snaps)
	if got := verify(t, nc, stream, snaps); len(got) != 0 {
		t.Fatalf("before the loss: differences %q, want none", got)
	}
	stopAudit()

	// The delete of batch-7 is lost: the live projection drops the object
	// behind its own back (its quota usage is left as it was).
	live.stop()
	db, err := bolt.Open(path, 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := db.Update(func(tx *bolt.Tx) error {
		return tx.Bucket([]byte("objects")).Delete([]byte("team-a\x00pods\x00batch-7"))
	}); err != nil {
		t.Fatal(err)
	}
	db.Close()
	live.start()
	live.waitCaughtUp()
	serveAudit(t, nc, live, snaps)

	got := verify(t, nc, stream, snaps)
	want := "namespace team-a object pods/batch-7: present: live absent, rebuilt charged count/pods=1,cpu=1500m,memory=128Mi,pods=1,requests.cpu=1500m,requests.memory=128Mi"
	if len(got) != 1 || got[0] != want {
		t.Fatalf("after the loss: differences\n%s\nwant\n%s", strings.Join(got, "\n"), want)
	}
	beforeResync, err := stream.LastSeq(context.Background())
	if err != nil {
		t.Fatal(err)
	}

	// The cluster's list of pods lacks batch-7: a resync records that.
	appendAll(t, stream, []ledger.Event{{Version: ledger.EncodingVersion, Type: ledger.Resync, Resource: "pods", Namespace: "team-a",
		Items: []json.RawMessage{podObject("team-a", "web-1", "500m"), podObject("team-a", "web-2", "1")}}})
	live.waitCaughtUp()
	if got := verify(t, nc, stream, snaps); len(got) != 0 {
		t.Fatalf("after the resync: differences\n%s\nwant none", strings.Join(got, "\n"))
	}
	list, err := live.p.Quotas("team-a", "compute", false)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := list.Items[0].Status.Used.Name("requests.cpu", resource.DecimalSI).String(), "1500m"; got != want {
		t.Errorf("live requests.cpu after resync: got %s, want %s", got, want)
	}

	// The log keeps the history: a replay to just before the resync still
	// charges batch-7.
	r, err := Rebuild(context.Background(), stream, Options{UntilSeq: beforeResync})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	old, err := r.Projector.Quotas("team-a", "compute", false)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := old.Items[0].Status.Used.Name("requests.cpu", resource.DecimalSI).String(), "3"; got != want {
		t.Errorf("replayed requests.cpu before resync: got %s, want %s", got, want)
	}
}
