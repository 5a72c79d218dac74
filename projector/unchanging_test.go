package projector

import (
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/quotaledger/quota/ledger"
)

const unchangingPod = `{"apiVersion":"v1","kind":"Pod","metadata":{"name":"a","namespace":"ns","uid":"u-a","resourceVersion":"%RV%"%META%},"spec":{"containers":[{"name":"c","image":"i","resources":{"requests":{"cpu":"%CPU%"}}}]}%STATUS%}`

func unchangingLine(typ, rv, cpu, meta, status string) []byte {
	r := strings.NewReplacer("%RV%", rv, "%CPU%", cpu, "%META%", meta, "%STATUS%", status)
	return []byte(`{"type":"` + typ + `","object":` + r.Replace(unchangingPod) + `}`)
}

// TestUnchangingUpsertTellsWhatChangesNothing folds a quota and a pod,
// then checks which further records UnchangingUpsert passes, with the
// charge to compare against the projection's (Lookup.Charge), and that
// applying the one it passes at the same charge leaves every quota's used
// as it was.
func TestUnchangingUpsertTellsWhatChangesNothing(t *testing.T) {
	p := openTemp(t)
	base := time.Unix(1_700_000_000, 0)
	setup := watchLineRecords(t, base, 0, [][]byte{
		[]byte(`{"type":"ADDED","object":{"apiVersion":"v1","kind":"ResourceQuota","metadata":{"name":"q","namespace":"ns","uid":"u-q"},"spec":{"hard":{"pods":"5","requests.cpu":"2"}}}}`),
		unchangingLine("ADDED", "1", "100m", "", ""),
	})
	applyAll(t, p, setup, 10)
	podSeq := setup[1].Seq
	look, err := p.Lookup()
	if err != nil {
		t.Fatal(err)
	}
	held, ok, err := look.Charge("ns", "pods", "a", podSeq)
	if err != nil || !ok {
		t.Fatalf("Charge of a up to %d: %v, %v", podSeq, ok, err)
	}
	if _, ok, _ := look.Charge("ns", "pods", "a", podSeq-1); ok {
		t.Errorf("Charge of a up to %d, before the event that wrote it: found", podSeq-1)
	}
	if _, ok, _ := look.Charge("ns", "pods", "b", podSeq); ok {
		t.Errorf("Charge of b, which the projection lacks: found")
	}
	look.Close()

	lines := map[string][]byte{
		"status":         unchangingLine("MODIFIED", "2", "100m", "", `,"status":{"phase":"Running"}`),
		"resized":        unchangingLine("MODIFIED", "3", "300m", "", ""),
		"deleting":       unchangingLine("MODIFIED", "4", "100m", `,"deletionTimestamp":"2023-11-14T22:13:30Z","deletionGracePeriodSeconds":30`, ""),
		"deleted":        unchangingLine("DELETED", "5", "100m", "", ""),
		"quota":          []byte(`{"type":"MODIFIED","object":{"apiVersion":"v1","kind":"ResourceQuota","metadata":{"name":"q","namespace":"ns","uid":"u-q"},"spec":{"hard":{"pods":"5","requests.cpu":"2"}}}}`),
		"limitrange":     []byte(`{"type":"ADDED","object":{"apiVersion":"v1","kind":"LimitRange","metadata":{"name":"lr","namespace":"ns","uid":"u-lr"},"spec":{"limits":[{"type":"Container","defaultRequest":{"cpu":"100m"}}]}}}`),
		"serviceaccount": []byte(`{"type":"ADDED","object":{"apiVersion":"v1","kind":"ServiceAccount","metadata":{"name":"sa","namespace":"ns","uid":"u-sa"}}}`),
	}
	for name, want := range map[string]struct{ ok, same bool }{
		"status": {true, true}, "resized": {true, false}, "deleting": {false, false}, "deleted": {false, false},
		"quota": {false, false}, "limitrange": {false, false}, "serviceaccount": {false, false},
	} {
		rec := watchLineRecords(t, base, podSeq, [][]byte{lines[name]})[0]
		_, _, charge, ok := UnchangingUpsert(&rec)
		if ok != want.ok || ok && SameCharge(held, charge) != want.same {
			t.Errorf("%s: ok %v, same charge %v; want %v, %v", name, ok, ok && SameCharge(held, charge), want.ok, want.same)
		}
	}
	broken := ledger.Record{Seq: podSeq + 1, Namespace: "ns", Err: errors.New("does not decode")}
	if _, _, _, ok := UnchangingUpsert(&broken); ok {
		t.Error("a record that does not decode passed")
	}

	before, err := p.Namespace("ns")
	if err != nil {
		t.Fatal(err)
	}
	applyAll(t, p, watchLineRecords(t, base, podSeq, [][]byte{lines["status"]}), 1)
	after, err := p.Namespace("ns")
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(before.Quotas, after.Quotas) {
		t.Errorf("the status change moved the quotas:\nbefore %+v\nafter  %+v", before.Quotas, after.Quotas)
	}
}
