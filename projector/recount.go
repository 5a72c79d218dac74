package projector

import (
	"encoding/binary"
	"time"

	bolt "go.etcd.io/bbolt"
)

// keyAppliedTime holds the stream time of the last applied record, so that
// a copy of the projection says which moment it reflects (point-in-time
// replay starts from a snapshot only if that moment is not after the
// target).
var keyAppliedTime = []byte("appliedTime")

func putAppliedTime(tx *bolt.Tx, t time.Time) error {
	var b [8]byte
	binary.BigEndian.PutUint64(b[:], uint64(t.UnixNano()))
	return tx.Bucket(bucketMeta).Put(keyAppliedTime, b[:])
}

// AppliedAt reads the applied sequence of a projection and the stream time
// of the record at that sequence (zero for an empty projection).
func AppliedAt(tx *bolt.Tx) (uint64, time.Time) {
	seq := appliedSeq(tx)
	v := tx.Bucket(bucketMeta).Get(keyAppliedTime)
	if v == nil {
		return seq, time.Time{}
	}
	return seq, time.Unix(0, int64(binary.BigEndian.Uint64(v))).UTC()
}

// recountNamespace recomputes the usage of every valid quota of a namespace
// from its objects, as the quota controller does on its full resync. After
// a Resync event the objects are the truth, and a Used that an earlier loss
// left wrong is corrected here. As in the controller, a recount that gives
// the same values leaves the stored figures (and their print format)
// alone; one that differs replaces Used whole.
func (f *fold) recountNamespace(namespace string) error {
	entries, err := f.cache.namespaceQuotas(f.tx, namespace)
	if err != nil {
		return err
	}
	for _, e := range entries {
		if e.quota == nil {
			continue
		}
		if err := f.recountQuota(e); err != nil {
			return err
		}
	}
	return nil
}

// recountQuota recomputes one valid quota's usage from the objects. As in
// the controller, a recount that gives the same values leaves the stored
// figures (and their print format) alone; one that differs replaces Used
// whole.
func (f *fold) recountQuota(e *quotaEntry) error {
	r := e.rec
	fresh := &quotaRecord{Namespace: r.Namespace, Name: r.Name}
	if err := f.recompute(fresh, e.quota); err != nil {
		return err
	}
	same := len(fresh.Used) == len(r.Used)
	for name, v := range fresh.Used {
		old, ok := r.Used[name]
		if !ok || old.Cmp(v) != 0 {
			same = false
			break
		}
	}
	if same && sameTerms(r.Terms, fresh.Terms) && r.Stale == fresh.Stale {
		return nil
	}
	if !same {
		r.Used, r.StatusHard = fresh.Used, nil
	}
	// Stale still when the recount left out a pod past its deadline that
	// its record charges in full (see recompute).
	r.Terms, r.Stale = fresh.Terms, fresh.Stale
	e.dirty = true
	return nil
}

// sameTerms compares term counts, treating a missing resource as all
// zero: the incremental path creates entries lazily, a recount eagerly.
func sameTerms(a, b map[string]*[formatCount]int) bool {
	var zero [formatCount]int
	get := func(m map[string]*[formatCount]int, k string) [formatCount]int {
		if v := m[k]; v != nil {
			return *v
		}
		return zero
	}
	for k := range a {
		if get(a, k) != get(b, k) {
			return false
		}
	}
	for k := range b {
		if get(a, k) != get(b, k) {
			return false
		}
	}
	return true
}
