package projector

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/quotaledger/quota/ledger"
)

func explainRecords() []ledger.Record {
	base := time.Date(2026, 11, 22, 2, 45, 0, 0, time.UTC)
	pod := func(name, cpu string) json.RawMessage {
		return json.RawMessage(fmt.Sprintf(`{"apiVersion":"v1","kind":"Pod","metadata":{"name":%q,"namespace":"team-a"},`+
			`"spec":{"containers":[{"name":"app","resources":{"requests":{"cpu":%q}}}]},"status":{"phase":"Running"}}`, name, cpu))
	}
	quotaObj := json.RawMessage(`{"apiVersion":"v1","kind":"ResourceQuota","metadata":{"name":"compute","namespace":"team-a"},"spec":{"hard":{"requests.cpu":"4","pods":"10"}}}`)
	evs := []ledger.Event{
		{Type: ledger.Upsert, Resource: "resourcequotas", Namespace: "team-a", Name: "compute", Object: quotaObj},
		{Type: ledger.Upsert, Resource: "pods", Namespace: "team-a", Name: "web-b", Object: pod("web-b", "500m")},
		{Type: ledger.Upsert, Resource: "pods", Namespace: "team-a", Name: "web-a", Object: pod("web-a", "500m")},
		{Type: ledger.Upsert, Resource: "pods", Namespace: "team-a", Name: "big", Object: pod("big", "2")},
		{Type: ledger.Reserve, Resource: "pods", Namespace: "team-a", Name: "new", Object: pod("new", "250m"), Reservation: "r-1", ReservationTTL: time.Minute},
	}
	records := make([]ledger.Record, len(evs))
	for i, ev := range evs {
		ev.Version = ledger.EncodingVersion
		records[i] = ledger.Record{Seq: uint64(i + 1), Subject: ledger.Subject("team-a"), Namespace: "team-a", Time: base.Add(time.Duration(i) * time.Second), Event: ev}
	}
	return records
}

// TestExplainListsChargesLargestFirstWithReservationsMarked checks the
// rules of explain: only non-zero charges, largest first, ties by object,
// reservations marked, and the charges sum to Used.
func TestExplainListsChargesLargestFirstWithReservationsMarked(t *testing.T) {
	p := openTemp(t)
	applyAll(t, p, explainRecords(), 2)
	e, err := p.Explain("team-a", "")
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if err := WriteExplain(&buf, e); err != nil {
		t.Fatal(err)
	}
	want := `Name:       compute
Namespace:  team-a

pods: used 4 of 10
  OBJECT      CHARGE  SEQ  NOTE
  pods/big    1       4
  pods/new    1       5    reserved (r-1, expires 2026-11-22T02:46:04Z)
  pods/web-a  1       3
  pods/web-b  1       2

requests.cpu: used 3250m of 4
  OBJECT      CHARGE  SEQ  NOTE
  pods/big    2       4
  pods/web-a  500m    3
  pods/web-b  500m    2
  pods/new    250m    5    reserved (r-1, expires 2026-11-22T02:46:04Z)
`
	if got := buf.String(); got != want {
		t.Errorf("explain:\n got:\n%s\nwant:\n%s", got, want)
	}
	if _, err := p.Explain("team-a", "missing"); err == nil || !strings.Contains(err.Error(), "quota not found") {
		t.Errorf("explain of a missing quota: got %v, want quota not found", err)
	}
}
