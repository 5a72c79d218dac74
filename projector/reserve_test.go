package projector

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/quotaledger/quota/ledger"
)

// TestFoldReservationsDecidedTogether checks a Reserve holding several
// reservations: each is applied as a single Reserve would be, a repeated
// name charges nothing, each expires on its own, and one bad reservation
// drops the event whole.
func TestFoldReservationsDecidedTogether(t *testing.T) {
	base := explainRecords()[:1] // the compute quota of team-a
	pod := func(name, cpu string) json.RawMessage {
		return json.RawMessage(`{"apiVersion":"v1","kind":"Pod","metadata":{"name":"` + name + `","namespace":"team-a"},` +
			`"spec":{"containers":[{"name":"app","resources":{"requests":{"cpu":"` + cpu + `"}}}]}}`)
	}
	at := base[0].Time
	record := func(seq uint64, ev ledger.Event) ledger.Record {
		ev.Version = ledger.EncodingVersion
		return ledger.Record{Seq: seq, Subject: ledger.Subject("team-a"), Namespace: "team-a", Time: at.Add(time.Duration(seq) * time.Second), Event: ev}
	}
	records := append(base,
		record(2, ledger.Event{Type: ledger.Reserve, Namespace: "team-a", ReservationTTL: time.Minute, Reservations: []ledger.Reservation{
			{ID: "r-1", Resource: "pods", Name: "a", Object: pod("a", "250m")},
			{ID: "r-2", Resource: "pods", Name: "b", Object: pod("b", "500m")},
			{ID: "r-3", Resource: "pods", Name: "a", Object: pod("a", "1")}, // a is reserved already
		}}),
		// The second reservation holds a pod of another name: the event
		// is skipped whole, the first reservation included.
		record(3, ledger.Event{Type: ledger.Reserve, Namespace: "team-a", ReservationTTL: time.Minute, Reservations: []ledger.Reservation{
			{ID: "r-4", Resource: "pods", Name: "c", Object: pod("c", "1")},
			{ID: "r-5", Resource: "pods", Name: "d", Object: pod("e", "1")},
		}}),
		record(4, ledger.Event{Type: ledger.Expire, Namespace: "team-a", Reservation: "r-2"}),
	)
	p := openTemp(t)
	applyAll(t, p, records[:2], 10)
	explain := func() string {
		t.Helper()
		e, err := p.Explain("team-a", "compute")
		if err != nil {
			t.Fatal(err)
		}
		var buf bytes.Buffer
		if err := WriteExplain(&buf, e); err != nil {
			t.Fatal(err)
		}
		return buf.String()
	}
	if got := explain(); !strings.Contains(got, "pods: used 2 of 10") || !strings.Contains(got, "requests.cpu: used 750m of 4") {
		t.Fatalf("after two reservations and a repeat:\n%s", got)
	}
	applyAll(t, p, records[2:3], 10)
	if got := explain(); !strings.Contains(got, "pods: used 2 of 10") {
		t.Fatalf("a bad reservation changed usage:\n%s", got)
	}
	if skipped := p.skippedSeqs(t); len(skipped) != 1 || skipped[0] != 3 {
		t.Fatalf("skipped = %v, want [3]", skipped)
	}
	applyAll(t, p, records[3:], 10)
	got := explain()
	if !strings.Contains(got, "pods: used 1 of 10") || !strings.Contains(got, "requests.cpu: used 250m of 4") || !strings.Contains(got, "reserved (r-1,") {
		t.Fatalf("after expiring r-2:\n%s", got)
	}
	checkConsistent(t, p)
}
