package projector

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/quotaledger/quota/ledger"
	"github.com/quotaledger/quota/ledger/ledgertest"
)

// fenceQuota is the quota every fencing case counts against.
const fenceQuota = `{"type":"ADDED","object":{"apiVersion":"v1","kind":"ResourceQuota","metadata":{"name":"q","namespace":"team","uid":"q1","resourceVersion":"1"},"spec":{"hard":{"pods":"10","requests.cpu":"10"}}}}`

// fencePod is a watch line of pod name, uid and resource version rv
// requesting cpu.
func fencePod(typ, name, uid, rv, cpu string) string {
	return `{"type":"` + typ + `","object":{"apiVersion":"v1","kind":"Pod","metadata":{"name":"` + name + `","namespace":"team","uid":"` + uid +
		`","resourceVersion":"` + rv + `"},"spec":{"nodeName":"n","containers":[{"name":"c","image":"x","resources":{"requests":{"cpu":"` + cpu + `"}}}]}}}`
}

// foldLines folds watch lines into a fresh projection, one record a
// batch, and returns it.
func foldLines(t *testing.T, lines ...string) *Projector {
	t.Helper()
	raw := make([][]byte, len(lines))
	for i, l := range lines {
		raw[i] = []byte(l)
	}
	p := openTemp(t)
	applyAll(t, p, watchLineRecords(t, time.Date(2026, 1, 5, 10, 0, 0, 0, time.UTC), 1, raw), 1)
	return p
}

// usedOf returns quota q's used pods and requests.cpu in team.
func usedOf(t *testing.T, p *Projector) (pods, cpu string) {
	t.Helper()
	list, err := p.Quotas("team", "q", false)
	if err != nil {
		t.Fatal(err)
	}
	used := list.Items[0].Status.Used
	pc, cc := used["pods"], used["requests.cpu"]
	return pc.String(), cc.String()
}

// TestFenceIgnoresOlderFacts holds the fencing rule on the three ways a
// stale writer restates an old state: a late MODIFIED after the DELETED
// that followed it, a late event of a re-created pod's old uid, and a
// late DELETED of the old uid once the name has a new object. Each stale
// event is skipped with its reason and counted; the projection is what
// the cluster holds.
func TestFenceIgnoresOlderFacts(t *testing.T) {
	cases := []struct {
		name      string
		lines     []string
		pods, cpu string
	}{
		{"late update after delete", []string{
			fenceQuota,
			fencePod("ADDED", "a", "u1", "10", "1"),
			fencePod("DELETED", "a", "u1", "20", "1"),
			fencePod("MODIFIED", "a", "u1", "15", "2"),
		}, "0", "0"},
		{"old uid of a re-created pod", []string{
			fenceQuota,
			fencePod("ADDED", "a", "u1", "10", "1"),
			fencePod("DELETED", "a", "u1", "20", "1"),
			fencePod("ADDED", "a", "u2", "30", "3"),
			fencePod("MODIFIED", "a", "u1", "15", "2"),
		}, "1", "3"},
		{"late delete of the old uid", []string{
			fenceQuota,
			fencePod("ADDED", "a", "u1", "10", "1"),
			fencePod("ADDED", "a", "u2", "30", "3"),
			fencePod("DELETED", "a", "u1", "20", "1"),
		}, "1", "3"},
		{"an update older than the state held", []string{
			fenceQuota,
			fencePod("ADDED", "a", "u1", "10", "1"),
			fencePod("MODIFIED", "a", "u1", "30", "3"),
			fencePod("MODIFIED", "a", "u1", "20", "2"),
		}, "1", "3"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			p := foldLines(t, c.lines...)
			if pods, cpu := usedOf(t, p); pods != c.pods || cpu != c.cpu {
				t.Fatalf("used pods=%s requests.cpu=%s, want %s and %s", pods, cpu, c.pods, c.cpu)
			}
			if p.Stale() != 1 || p.Skipped() != 1 {
				t.Fatalf("stale %d, skipped %d; want the one stale event skipped", p.Stale(), p.Skipped())
			}
			skipped := skippedRecords(t, p)
			if len(skipped) != 1 || !strings.HasPrefix(skipped[0].Reason, "stale: ") || skipped[0].Seq != p.Applied() {
				t.Fatalf("skipped records %+v, want the last, as stale", skipped)
			}
		})
	}
}

// TestFenceKeepsVersionlessFacts: objects without a comparable version
// (manifests from files) keep the rule of the log's order.
func TestFenceKeepsVersionlessFacts(t *testing.T) {
	p := foldLines(t, fenceQuota,
		fencePod("ADDED", "a", "u1", "", "1"),
		fencePod("MODIFIED", "a", "u1", "", "2"),
		fencePod("MODIFIED", "a", "u1", "x7", "3"),
	)
	if pods, cpu := usedOf(t, p); pods != "1" || cpu != "3" {
		t.Fatalf("used pods=%s requests.cpu=%s, want 1 and 3", pods, cpu)
	}
	if p.Stale() != 0 {
		t.Fatalf("stale %d, want none", p.Stale())
	}
}

// TestResyncIsFencedByItsList: a resync whose list was taken at
// resourceVersion 35 removes what it lacks only if older than the list,
// so a pod created at 40 stays; a listed item whose uid was deleted after
// the list is not revived, and counts as stale.
func TestResyncIsFencedByItsList(t *testing.T) {
	p := foldLines(t, fenceQuota,
		fencePod("ADDED", "old", "u1", "10", "1"),
		fencePod("ADDED", "new", "u2", "40", "2"),
		fencePod("ADDED", "gone", "u3", "20", "4"),
		fencePod("DELETED", "gone", "u3", "38", "4"),
	)
	// An item as the exporter lists it: trimmed, with its version.
	item := func(line string) json.RawMessage {
		var ev struct{ Object json.RawMessage }
		if err := json.Unmarshal([]byte(line), &ev); err != nil {
			t.Fatal(err)
		}
		return ev.Object
	}
	resync := ledger.Event{Version: ledger.EncodingVersion, Type: ledger.Resync, Resource: "pods", Namespace: "team", ResourceVersion: "35",
		Items: []json.RawMessage{item(fencePod("ADDED", "gone", "u3", "30", "4"))}}
	applyAll(t, p, []ledger.Record{{Seq: p.Applied() + 1, Subject: ledger.Subject("team"), Namespace: "team",
		Time: time.Date(2026, 1, 5, 11, 0, 0, 0, time.UTC), Event: resync}}, 1)
	if pods, cpu := usedOf(t, p); pods != "1" || cpu != "2" {
		t.Fatalf("used pods=%s requests.cpu=%s, want only the pod created after the list (1 pod, 2 cpu)", pods, cpu)
	}
	if p.Stale() != 1 {
		t.Fatalf("stale %d, want the one item of a deleted uid", p.Stale())
	}
}

// TestTombstonesEndAfterTheirTTL: a deleted uid is remembered for the
// tombstone TTL of stream time, then forgotten, so their number stays
// bounded by the deletes of one TTL.
func TestTombstonesEndAfterTheirTTL(t *testing.T) {
	p := foldLines(t, fenceQuota,
		fencePod("ADDED", "a", "u1", "10", "1"),
		fencePod("DELETED", "a", "u1", "20", "1"),
	)
	tombstones := func() int { return p.View().Bucket(bucketTombstones).Len() }
	if n := tombstones(); n != 1 {
		t.Fatalf("%d tombstones after a delete, want 1", n)
	}
	later := watchLineRecords(t, time.Date(2026, 1, 7, 10, 0, 0, 0, time.UTC), p.Applied()+1,
		[][]byte{[]byte(fencePod("ADDED", "b", "u9", "50", "1"))})
	applyAll(t, p, later, 1)
	if n := tombstones(); n != 0 {
		t.Fatalf("%d tombstones two days after the delete, want 0 (TTL %s)", n, ledger.DefaultDuplicateWindow)
	}
}

// skippedRecords reads the projection's notes of the records it skipped.
func skippedRecords(t *testing.T, p *Projector) []skippedRecord {
	t.Helper()
	var out []skippedRecord
	err := p.View().Bucket(bucketSkipped).ForEach(func(_, v []byte) error {
		var r skippedRecord
		if err := json.Unmarshal(v, &r); err != nil {
			return err
		}
		out = append(out, r)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// TestVersionDigestsOverNATS: the versions query answers, per namespace,
// the digest of the reported objects' versions, leaving reservations and
// other resources out, after catching up with the log.
func TestVersionDigestsOverNATS(t *testing.T) {
	_, nc, js := ledgertest.StartServer(t)
	stream := ledgertest.OpenStream(t, js)
	ctx := t.Context()
	p, err := Open(Config{Path: filepath.Join(t.TempDir(), "p.db"), NoSync: true}, stream)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close() })
	go p.Run(ctx)
	go NewResponder(nc, p, ResponderConfig{}).Run(ctx)
	pod := func(name, uid, rv string) json.RawMessage {
		return json.RawMessage(`{"apiVersion":"v1","kind":"Pod","metadata":{"name":"` + name + `","namespace":"team","uid":"` + uid + `","resourceVersion":"` + rv + `"},"spec":{"containers":[{"name":"c"}]}}`)
	}
	for i, o := range []json.RawMessage{pod("a", "u1", "10"), pod("b", "u2", "11")} {
		ev := ledger.Event{Type: ledger.Upsert, Resource: "pods", Namespace: "team", Name: []string{"a", "b"}[i], Object: o}
		if _, err := stream.Append(ctx, ev, ledger.AppendOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	req, _ := json.Marshal(ledger.VersionsRequest{Resource: "pods"})
	msg, err := nc.Request(ledger.SubjectVersions, req, 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	var reply ledger.VersionsReply
	if err := json.Unmarshal(msg.Data, &reply); err != nil || reply.Error != "" {
		t.Fatalf("reply %s: %v", msg.Data, err)
	}
	want := ledger.VersionsDigest([]ledger.ObjectVersion{{Name: "a", UID: "u1", ResourceVersion: "10"}, {Name: "b", UID: "u2", ResourceVersion: "11"}})
	if len(reply.Digests) != 1 || reply.Digests["team"] != want {
		t.Fatalf("digests %v, want team: %s", reply.Digests, want)
	}
	msg, err = nc.Request(ledger.SubjectVersions, []byte(`{}`), 10*time.Second)
	if err != nil || !strings.Contains(string(msg.Data), "resource is required") {
		t.Fatalf("a request without a resource: %v %s", err, msg.Data)
	}
}
