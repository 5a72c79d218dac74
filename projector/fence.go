package projector

import (
	"encoding/binary"
	"fmt"
	"time"

	"k8s.io/apimachinery/pkg/util/resourceversion"

	"github.com/quotaledger/quota/ledger"
	"github.com/quotaledger/quota/ledger/object"
	"github.com/quotaledger/quota/projector/buckets"
)

// Fencing by resourceVersion (see doc.go): a fact about an object older
// than what the projection holds for it changes nothing. Kubernetes'
// resource versions of one resource are comparable (KEP-5504); a version
// that is not (a manifest's, none at all, an aggregated API's own
// scheme) is never older, and the event is applied as it always was.

// older reports whether resource version a is older than b. Either
// missing or not comparable: false.
func older(a, b string) bool {
	if a == "" || b == "" {
		return false
	}
	c, err := resourceversion.CompareResourceVersion(a, b)
	return err == nil && c < 0
}

// newest returns the newer of two resource versions, a when they cannot
// be compared.
func newest(a, b string) string {
	if older(a, b) || a == "" {
		return b
	}
	return a
}

// factVersion is the resource version of an object a record reports: its
// own metadata's, else an Upsert event's (ingest keeps it on the event, as
// the trimmed form leaves it out). A Resync's version is its list's, not
// its items'.
func factVersion(rec *ledger.Record, o *object.Object) string {
	if o.ResourceVersion == "" && rec.Event.Type == ledger.Upsert {
		return rec.Event.ResourceVersion
	}
	return o.ResourceVersion
}

// fence skips a reported state of object o at resource version rv that
// is older than the projection's (staleFact), and buries the uid of the
// object it replaces under the name: by then that one was deleted.
func (f *fold) fence(rec *ledger.Record, o *object.Object, rv string, old *objectRecord) error {
	if why := f.staleFact(o.UID, rv, old); why != "" {
		return staleSkip(why)
	}
	if old != nil && old.Reservation == "" && old.UID != o.UID {
		return f.bury(old.UID, rv, rec.Time)
	}
	return nil
}

// staleFact says why a reported state of an object (uid, resource
// version rv) is older than what the projection holds: the same name's
// current object (old, if it is a reported one, whatever its uid: the
// versions of a resource are comparable across its objects), or the
// tombstone of the uid's deletion. It returns "" for a state to apply.
func (f *fold) staleFact(uid, rv string, old *objectRecord) string {
	if old != nil && old.Reservation == "" && older(rv, old.ResourceVersion) {
		return fmt.Sprintf("resourceVersion %s is older than %s, which the projection holds for %s/%s (uid %s)",
			rv, old.ResourceVersion, old.Resource, old.Name, old.UID)
	}
	if uid == "" || rv == "" {
		return ""
	}
	if t, ok := f.tombstone(uid); ok && (rv == t.rv || older(rv, t.rv)) {
		return fmt.Sprintf("uid %s was deleted at resourceVersion %s; this state is at %s", uid, t.rv, rv)
	}
	return ""
}

// tombstoneRecord is what the projection keeps of a deleted uid: the
// resource version of its deletion (or of the list that no longer had it)
// and the stream time it was deleted at.
type tombstoneRecord struct {
	rv string
	at time.Time
}

func (f *fold) tombstone(uid string) (tombstoneRecord, bool) {
	v := f.tx.Bucket(bucketTombstones).Get([]byte(uid))
	if len(v) < 8 {
		return tombstoneRecord{}, false
	}
	return tombstoneRecord{at: time.Unix(0, int64(binary.BigEndian.Uint64(v))).UTC(), rv: string(v[8:])}, true
}

// bury keeps a tombstone of uid, deleted at resource version rv at stream
// time at, until the fold passes at plus the tombstone TTL. A uid buried
// again keeps the newer version and the later time.
func (f *fold) bury(uid, rv string, at time.Time) error {
	if uid == "" || rv == "" {
		return nil
	}
	if t, ok := f.tombstone(uid); ok {
		if err := f.tx.Bucket(bucketTombstoneExpiry).Delete(expiryKey(t.at, uid)); err != nil {
			return err
		}
		rv = newest(t.rv, rv)
		if t.at.After(at) {
			at = t.at
		}
	}
	v := make([]byte, 8, 8+len(rv))
	binary.BigEndian.PutUint64(v, uint64(at.UnixNano()))
	v = append(v, rv...)
	if err := f.tx.Bucket(bucketTombstones).Put([]byte(uid), v); err != nil {
		return err
	}
	return f.tx.Bucket(bucketTombstoneExpiry).Put(expiryKey(at, uid), []byte{})
}

// pruneTombstones removes the tombstones of uids deleted before now minus
// ttl: by then no stale writer's event for them is expected (the
// duplicate window bounds how long an exporter re-sends its backlog).
func pruneTombstones(tx *buckets.Set, now time.Time, ttl time.Duration) error {
	cutoff := now.Add(-ttl)
	exp := tx.Bucket(bucketTombstoneExpiry)
	var gone [][]byte
	c := exp.Cursor()
	for k, _ := c.First(); len(k) >= 8; k, _ = c.Next() {
		if !time.Unix(0, int64(binary.BigEndian.Uint64(k[:8]))).Before(cutoff) {
			break
		}
		gone = append(gone, k)
	}
	for _, k := range gone {
		if err := exp.Delete(k); err != nil {
			return err
		}
		if err := tx.Bucket(bucketTombstones).Delete(k[8:]); err != nil {
			return err
		}
	}
	return nil
}

// deleteFact applies a Delete event: the object goes, unless the event
// is older than the state held, and its uid is buried. A delete of an
// object the projection does not hold buries the uid too, so that a late
// state of it is not taken for a new object.
func (f *fold) deleteFact(rec *ledger.Record) error {
	ev := &rec.Event
	old := getObject(f.tx, objectKey(ev.Namespace, ev.Resource, ev.Name))
	if old == nil {
		return f.bury(ev.UID, ev.ResourceVersion, rec.Time)
	}
	if old.Reservation == "" && older(ev.ResourceVersion, old.ResourceVersion) {
		return staleSkip(fmt.Sprintf("a delete at resourceVersion %s is older than %s, which the projection holds for %s/%s (uid %s)",
			ev.ResourceVersion, old.ResourceVersion, old.Resource, old.Name, old.UID))
	}
	if err := f.delete(ev.Namespace, ev.Resource, ev.Name, ""); err != nil {
		return err
	}
	uid := ev.UID
	if uid == "" {
		uid = old.UID
	}
	return f.bury(uid, newest(ev.ResourceVersion, old.ResourceVersion), rec.Time)
}
