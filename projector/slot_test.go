package projector

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/quotaledger/quota/ledger"
)

// TestQuotaSlots follows the informer slots the fold gives a namespace's
// quotas: the first free one when a quota first reaches the log, kept
// through updates, freed by a deletion and taken again by the next new
// quota. A file of schema 2, which kept no slots, is given those of the
// quotas' name order.
func TestQuotaSlots(t *testing.T) {
	at := time.Date(2026, 11, 22, 3, 0, 0, 0, time.UTC)
	var records []ledger.Record
	record := teamARecorder(&records, at)
	quotaEvent := func(name, pods string) ledger.Event {
		return ledger.Event{Type: ledger.Upsert, Resource: "resourcequotas", Namespace: "team-a", Name: name,
			Object: json.RawMessage(`{"apiVersion":"v1","kind":"ResourceQuota","metadata":{"name":"` + name +
				`","namespace":"team-a"},"spec":{"hard":{"pods":"` + pods + `"}}}`)}
	}
	record(quotaEvent("zeta", "5"))
	record(quotaEvent("alpha", "5"))
	record(quotaEvent("mid", "5"))
	record(quotaEvent("zeta", "6")) // an update keeps the slot
	record(ledger.Event{Type: ledger.Delete, Resource: "resourcequotas", Namespace: "team-a", Name: "alpha"})
	record(quotaEvent("beta", "5")) // takes alpha's slot
	record(quotaEvent("omega", "5"))

	path := filepath.Join(t.TempDir(), "projection.db")
	p, err := Open(Config{Path: path, NoSync: true}, nil)
	if err != nil {
		t.Fatal(err)
	}
	slots := func(p *Projector) string {
		t.Helper()
		st, err := p.Namespace("team-a")
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, s := range st.Quotas {
			out = append(out, fmt.Sprintf("%s=%d", s.Quota.Name, s.Slot))
		}
		return strings.Join(out, " ")
	}
	for i := range records {
		applyAll(t, p, records[i:i+1], 1)
	}
	if got, want := slots(p), "beta=2 mid=3 omega=4 zeta=1"; got != want {
		t.Errorf("slots one event at a time: %s, want %s", got, want)
	}
	p.Close()

	// The same log in one batch gives the same slots.
	q := openTemp(t)
	applyAll(t, q, records, len(records))
	if got, want := slots(q), "beta=2 mid=3 omega=4 zeta=1"; got != want {
		t.Errorf("slots in one batch: %s, want %s", got, want)
	}

	// Make the file a schema 2 file: no informer indexes.
	db, err := bolt.Open(path, 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	err = db.Update(func(tx *bolt.Tx) error {
		if err := tx.DeleteBucket(bucketIndexes); err != nil {
			return err
		}
		return tx.Bucket(bucketMeta).Put(keySchema, seqBytes(2))
	})
	db.Close()
	if err != nil {
		t.Fatal(err)
	}
	p, err = Open(Config{Path: path, NoSync: true}, nil)
	if err != nil {
		t.Fatalf("open a schema 2 file: %v", err)
	}
	defer p.Close()
	if got, want := slots(p), "beta=1 mid=2 omega=3 zeta=4"; got != want {
		t.Errorf("slots after migrating: %s, want %s", got, want)
	}
	record(quotaEvent("late", "5"))
	applyAll(t, p, records[len(records)-1:], 1)
	if got, want := slots(p), "beta=1 late=5 mid=2 omega=3 zeta=4"; got != want {
		t.Errorf("slots after migrating and a new quota: %s, want %s", got, want)
	}
	checkConsistent(t, p)
}
