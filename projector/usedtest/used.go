// Package usedtest holds the whole-state check of a projection, for the
// tests of every package that folds one.
package usedtest

import (
	"bytes"
	"testing"

	bolt "go.etcd.io/bbolt"

	"github.com/quotaledger/quota/ledger/quantity"
	"github.com/quotaledger/quota/projector"
)

// CheckUsed is the whole-state check of a projection: every valid quota's
// used, per resource, equals the sum of what the objects it matches
// charge it, reservations and holds included (as explain lists them).
// It reads the bbolt file db (a projection's DB) in one transaction and
// reports each figure that differs on t. Tests run it after every test
// that touches a projection.
//
// A file whose pages bbolt's own check finds damaged fails the check
// without being read: its figures cannot be trusted either way, and a walk
// of a damaged page may panic. A test that damages a file on purpose
// checks that file with projector.Check instead.
func CheckUsed(t testing.TB, db *bolt.DB) {
	t.Helper()
	if err := projector.Check(db); err != nil {
		t.Errorf("check used: %v", err)
		return
	}
	tx, err := projector.LoadDB(db)
	if err != nil {
		t.Errorf("check used: %v", err)
		return
	}
	err = func() error {
		b := tx.Bucket([]byte("quotas"))
		if b == nil {
			return nil
		}
		var namespaces []string
		if err := b.ForEach(func(k, _ []byte) error {
			ns, _, _ := bytes.Cut(k, []byte{0})
			if len(namespaces) == 0 || namespaces[len(namespaces)-1] != string(ns) {
				namespaces = append(namespaces, string(ns))
			}
			return nil
		}); err != nil {
			return err
		}
		for _, ns := range namespaces {
			e, err := projector.ExplainTx(tx, ns, "")
			if err != nil {
				return err
			}
			checkExplanation(t, e)
		}
		return nil
	}()
	if err != nil {
		t.Errorf("check used: %v", err)
	}
}

// checkExplanation compares each resource's used with the sum of its
// charges.
func checkExplanation(t testing.TB, e *projector.Explanation) {
	t.Helper()
	for _, q := range e.Quotas {
		for _, r := range q.Resources {
			used, err := quantity.Parse(r.Used)
			if err != nil {
				t.Errorf("quota %s/%s %s: used %q: %v", e.Namespace, q.Name, r.Resource, r.Used, err)
				continue
			}
			var sum quantity.Quantity
			for _, c := range r.Charges {
				v, err := quantity.Parse(c.Charge)
				if err != nil {
					t.Errorf("quota %s/%s %s: charge of %s %q: %v", e.Namespace, q.Name, r.Resource, c.Object, c.Charge, err)
				}
				sum = sum.Add(v)
			}
			if used.Cmp(sum) != 0 {
				t.Errorf("quota %s/%s %s: used %s, its charges sum to %s", e.Namespace, q.Name, r.Resource, r.Used, sum)
			}
		}
	}
}
