package projector_test

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	bolt "go.etcd.io/bbolt"

	"github.com/quotaledger/quota/ledger"
	"github.com/quotaledger/quota/projector"
	"github.com/quotaledger/quota/projector/projectortest"
	"github.com/quotaledger/quota/projector/usedtest"
)

// recorder is a testing.TB that keeps the errors reported on it.
type recorder struct {
	testing.TB
	errors []string
}

func (r *recorder) Helper() {}

func (r *recorder) Errorf(format string, args ...any) {
	r.errors = append(r.errors, fmt.Sprintf(format, args...))
}

// TestCheckUsedFindsAPlantedFigure folds a quota and two pods, passes the
// whole-state check, then plants a wrong figure in the quota's stored used
// behind the fold's back: the check names it. A damaged page then fails
// the check too.
func TestCheckUsedFindsAPlantedFigure(t *testing.T) {
	path := filepath.Join(t.TempDir(), "p.db")
	p, err := projector.Open(projector.Config{Path: path, NoSync: true}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	obj := func(s string) json.RawMessage { return json.RawMessage(s) }
	var records []ledger.Record
	for i, ev := range []ledger.Event{
		{Type: ledger.Upsert, Resource: "resourcequotas", Namespace: "team", Name: "q",
			Object: obj(`{"apiVersion":"v1","kind":"ResourceQuota","metadata":{"name":"q","namespace":"team"},"spec":{"hard":{"pods":"5","requests.cpu":"4"}}}`)},
		{Type: ledger.Upsert, Resource: "pods", Namespace: "team", Name: "a",
			Object: obj(`{"apiVersion":"v1","kind":"Pod","metadata":{"name":"a","namespace":"team"},"spec":{"containers":[{"name":"c","resources":{"requests":{"cpu":"500m"}}}]}}`)},
		{Type: ledger.Upsert, Resource: "pods", Namespace: "team", Name: "b",
			Object: obj(`{"apiVersion":"v1","kind":"Pod","metadata":{"name":"b","namespace":"team"},"spec":{"containers":[{"name":"c","resources":{"requests":{"cpu":"1"}}}]}}`)},
	} {
		ev.Version = ledger.EncodingVersion
		records = append(records, ledger.Record{Seq: uint64(i + 1), Subject: ledger.Subject("team"), Namespace: "team", Event: ev})
	}
	if err := p.Apply(context.Background(), records); err != nil {
		t.Fatal(err)
	}
	clean := &recorder{TB: t}
	usedtest.CheckUsed(clean, p.DB())
	if len(clean.errors) != 0 {
		t.Fatalf("a folded projection fails the check: %v", clean.errors)
	}
	err = p.DB().Update(func(tx *bolt.Tx) error {
		b := tx.Bucket([]byte("quotas"))
		key := []byte("team\x00q")
		planted := strings.Replace(string(b.Get(key)), `"requests.cpu":"=1500m"`, `"requests.cpu":"=1600m"`, 1)
		if planted == string(b.Get(key)) {
			return fmt.Errorf("no requests.cpu of =1500m in %s", b.Get(key))
		}
		return b.Put(key, []byte(planted))
	})
	if err != nil {
		t.Fatal(err)
	}
	planted := &recorder{TB: t}
	usedtest.CheckUsed(planted, p.DB())
	want := "quota team/q requests.cpu: used 1600m, its charges sum to 1500m"
	if len(planted.errors) != 1 || planted.errors[0] != want {
		t.Errorf("after planting a wrong figure: %q, want %q", planted.errors, want)
	}

	// A damaged page fails the check rather than passing it unread.
	projectortest.DamageLeaf(t, p.DB(), path, false)
	damaged := &recorder{TB: t}
	usedtest.CheckUsed(damaged, p.DB())
	if len(damaged.errors) != 1 || !strings.Contains(damaged.errors[0], "projection file damaged") {
		t.Errorf("after damaging a page: %q, want one error naming the damage", damaged.errors)
	}
}
