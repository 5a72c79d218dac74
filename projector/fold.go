package projector

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/quotaledger/quota/projector/buckets"

	"github.com/quotaledger/quota/ledger"
	"github.com/quotaledger/quota/ledger/object"
	"github.com/quotaledger/quota/ledger/quota"
)

// errSkip marks a record that the fold cannot apply (bad bytes, an object
// that does not decode). The record is noted and the fold goes on.
// A stale one is a fact older than what the projection holds (fence.go).
type errSkip struct {
	reason string
	stale  bool
}

func (e *errSkip) Error() string { return e.reason }

func skipf(format string, args ...any) error {
	return &errSkip{reason: fmt.Sprintf(format, args...)}
}

// staleSkip is the skip of a fact older than the projection's state.
func staleSkip(why string) error { return &errSkip{reason: "stale: " + why, stale: true} }

// isStale reports whether err is a stale fact's skip.
func isStale(err error) bool {
	var skip *errSkip
	return errors.As(err, &skip) && skip.stale
}

// Skipped describes a stream record that the fold noted and passed over.
type Skipped struct {
	Seq     uint64
	Subject string
	Reason  string
	// Stale is set for a fact older than the projection's state (an
	// upsert or delete), which was ignored.
	Stale bool
}

// Fold applies stream records to a projection. It is the one fold: the
// projector and replay both use it. It caches the quotas it has read (with
// their usage) across batches, so it must be the only writer of its
// projection; after a failed batch (the transaction rolled back) it forgets
// the cache.
type Fold struct {
	// quotas holds, per namespace, the namespace's quotas in key order.
	quotas map[string][]*quotaEntry
	// TombstoneTTL is how long, in stream time, a deleted uid's tombstone
	// is kept (fence.go). Zero: ledger.DefaultDuplicateWindow.
	TombstoneTTL time.Duration
	// staleItems counts the resync items ignored as stale since the last
	// TakeStaleItems.
	staleItems uint64
}

// TakeStaleItems returns how many resync items the fold has ignored as
// older than the projection's state since it was last asked.
func (fd *Fold) TakeStaleItems() uint64 {
	n := fd.staleItems
	fd.staleItems = 0
	return n
}

// quotaEntry is a cached quota record with its parsed spec.
type quotaEntry struct {
	rec   *quotaRecord
	quota *quota.Quota // nil for an invalid quota
	dirty bool         // changed in this batch, not yet written
}

// NewFold returns a fold with an empty cache.
func NewFold() *Fold { return &Fold{quotas: map[string][]*quotaEntry{}} }

// Forget empties the cache: for a batch whose transaction did not commit
// after ApplyBatch returned (bbolt's commit failed to write the file).
func (fd *Fold) Forget() { fd.quotas = map[string][]*quotaEntry{} }

// ApplyBatch applies stream records, in order, to the projection in tx and
// records the last sequence as applied. Records at or below the applied
// sequence break the exactly-once invariant and are refused with
// ErrInvariant. It returns the records it skipped.
func (fd *Fold) ApplyBatch(tx *buckets.Set, records []ledger.Record) (skipped []Skipped, err error) {
	return fd.ApplyPrepared(tx, Prepare(records))
}

// ApplyPrepared is ApplyBatch of a prepared batch.
func (fd *Fold) ApplyPrepared(tx *buckets.Set, b *Prepared) (skipped []Skipped, err error) {
	records := b.records
	if len(records) == 0 {
		return nil, nil
	}
	defer func() {
		if err != nil {
			fd.Forget()
		}
	}()
	applied := appliedSeq(tx)
	f := fold{tx: tx, cache: fd, pre: b.pre}
	// Each subject's last sequence in the batch, stored once at its end:
	// nothing in the fold reads them.
	subjects := map[string]uint64{}
	for i := range records {
		f.cur = i
		rec := &records[i]
		if rec.Seq <= applied {
			return skipped, fmt.Errorf("%w: record seq %d after applied seq %d", ErrInvariant, rec.Seq, applied)
		}
		applied = rec.Seq
		err := f.apply(rec)
		var skip *errSkip
		switch {
		case errors.As(err, &skip):
			s := Skipped{Seq: rec.Seq, Subject: rec.Subject, Reason: skip.reason, Stale: skip.stale}
			skipped = append(skipped, s)
			b, _ := json.Marshal(skippedRecord{Seq: rec.Seq, Subject: rec.Subject, Time: rec.Time, Reason: skip.reason})
			if err := tx.Bucket(bucketSkipped).Put(seqBytes(rec.Seq), b); err != nil {
				return skipped, fmt.Errorf("note skipped seq %d: %w", rec.Seq, err)
			}
		case err != nil:
			return skipped, fmt.Errorf("apply %s seq %d: %w", rec.Subject, rec.Seq, err)
		}
		// The subject's namespace, not the event's: a record skipped as
		// unreadable has no event, and still moves its subject on.
		subjects[rec.Namespace] = rec.Seq
	}
	ttl := fd.TombstoneTTL
	if ttl <= 0 {
		ttl = ledger.DefaultDuplicateWindow
	}
	if err := pruneTombstones(tx, records[len(records)-1].Time, ttl); err != nil {
		return skipped, fmt.Errorf("prune tombstones: %w", err)
	}
	for namespace, seq := range subjects {
		if err := tx.Bucket(bucketSubjects).Put(subjectKey(namespace), seqBytes(seq)); err != nil {
			return skipped, fmt.Errorf("store subject %q seq %d: %w", namespace, seq, err)
		}
	}
	if err := fd.flush(tx); err != nil {
		return skipped, err
	}
	if err := tx.Bucket(bucketMeta).Put(keyApplied, seqBytes(applied)); err != nil {
		return skipped, fmt.Errorf("store applied seq %d: %w", applied, err)
	}
	if err := putAppliedTime(tx, records[len(records)-1].Time); err != nil {
		return skipped, fmt.Errorf("store applied time of seq %d: %w", applied, err)
	}
	return skipped, nil
}

// flush writes the quotas changed in this batch.
func (fd *Fold) flush(tx *buckets.Set) error {
	for _, entries := range fd.quotas {
		for _, e := range entries {
			if !e.dirty {
				continue
			}
			// The stored record is the view's; the cache's changes on.
			r := e.rec.clone()
			r.parsed = e.quota
			if err := putQuota(tx, r); err != nil {
				return err
			}
			e.dirty = false
		}
	}
	return nil
}

// namespaceQuotas returns the cached quotas of a namespace, reading them
// from tx the first time.
func (fd *Fold) namespaceQuotas(tx *buckets.Set, namespace string) ([]*quotaEntry, error) {
	if entries, ok := fd.quotas[namespace]; ok {
		return entries, nil
	}
	entries := []*quotaEntry{}
	err := forEachQuota(tx, namespace, false, func(r *quotaRecord) error {
		// The cache's records change in place: a copy of the stored one.
		entries = append(entries, &quotaEntry{rec: r.clone(), quota: r.parsed})
		return nil
	})
	if err != nil {
		return nil, err
	}
	fd.quotas[namespace] = entries
	return entries, nil
}

// fold applies records inside one transaction.
type fold struct {
	tx    *buckets.Set
	cache *Fold
	// pre holds, per record of the batch, the evaluations of the objects
	// it carries (one for an upsert or reserve, one per resync item),
	// computed ahead of the sequential apply; cur is the record at hand.
	pre [][]evaluated
	cur int
}

func (f *fold) apply(rec *ledger.Record) error {
	if rec.Err != nil {
		return skipf("undecodable record: %v", rec.Err)
	}
	ev := &rec.Event
	switch ev.Type {
	case ledger.Upsert:
		return f.upsert(rec, ev.Object, f.evaluated(0), "", 0)
	case ledger.Reserve:
		return f.reserve(rec)
	case ledger.Delete:
		return f.deleteFact(rec)
	case ledger.Deadline:
		return f.deadline(rec)
	case ledger.Expire:
		for _, id := range ev.ExpiredIDs() {
			if err := f.expire(id); err != nil {
				return err
			}
		}
		return nil
	case ledger.Resync:
		return f.resync(rec)
	case ledger.Progress:
		return f.progress(rec)
	default:
		return skipf("unknown event type %q", ev.Type)
	}
}

// decode reads an object carried by an event and checks that it is the one
// the event names.
func decode(ev *ledger.Event, raw json.RawMessage) (*object.Object, error) {
	o, err := object.Decode(raw)
	if err != nil {
		return nil, skipf("decode object: %v", err)
	}
	if o.Namespace == "" && !o.ClusterScoped() {
		o.SetNamespace(ev.Namespace)
	}
	if o.Namespace != ev.Namespace {
		return nil, skipf("object %s/%s is in namespace %q, event in %q", o.Resource, o.Name, o.Namespace, ev.Namespace)
	}
	if o.Name == "" {
		return nil, skipf("object %s in %q has no name", o.Resource, o.Namespace)
	}
	return o, nil
}

// evaluated returns the precomputed evaluation of the current record's
// object number i.
func (f *fold) evaluated(i int) *evaluated {
	return &f.pre[f.cur][i]
}

// upsert applies an object's reported state (reservation empty) or a
// create's reservation of it (reservation set, held for ttl).
func (f *fold) upsert(rec *ledger.Record, raw json.RawMessage, e *evaluated, reservation string, ttl time.Duration) error {
	if e.err != nil {
		return e.err
	}
	o := e.object
	key := objectKey(o.Namespace, o.Resource, o.Name)
	old := getObject(f.tx, key)
	if reservation != "" && old != nil {
		// The object exists already (or holds another reservation): a
		// create of it would fail, so the reservation charges nothing.
		return nil
	}
	rv := factVersion(rec, o)
	if reservation == "" {
		if err := f.fence(rec, o, rv, old); err != nil {
			return err
		}
	}
	if err := f.release(old, o, reservation); err != nil {
		return err
	}
	next := &objectRecord{
		Resource:    o.Resource,
		Namespace:   o.Namespace,
		Name:        o.Name,
		UID:         o.UID,
		Kind:        o.Kind,
		Charge:      e.charge,
		Seq:         rec.Seq,
		Reservation: reservation,
	}
	// Nothing reads a reservation's object (the log keeps it): its record
	// holds the charge only. A reported object's bytes are copied out of
	// the record's message, which the projection must not keep.
	if reservation == "" {
		next.Object = bytes.Clone(raw)
		next.ResourceVersion = rv
	}
	if o.Resource == "pods" && reservation == "" {
		var err error
		if next.Charge, err = f.deadlineCharge(o, next.Charge); err != nil {
			return err
		}
	}
	if err := f.keepHolds(old, next); err != nil {
		return err
	}
	if reservation != "" {
		next.ExpiresAt = rec.Time.Add(ttl)
		if err := f.index(reservation, next.ExpiresAt, key, o.Resource, rec.Event.Release); err != nil {
			return err
		}
	}
	if err := putObject(f.tx, next); err != nil {
		return err
	}
	if err := f.recharge(o.Namespace, old, next); err != nil {
		return err
	}
	if o.Resource == "resourcequotas" && reservation == "" {
		return f.upsertQuota(o, raw, rec.Seq)
	}
	return nil
}

// keepHolds carries the holds of an object's old record that its next
// charge does not cover over to next; those it covers are made (or need
// not be): released.
func (f *fold) keepHolds(old, next *objectRecord) error {
	for _, h := range old.holds() {
		if !covers(next.Charge, h.Charge) {
			next.Holds = append(next.Holds, h)
		} else if err := f.unindex(h.ID, h.ExpiresAt, next.Resource); err != nil {
			return err
		}
	}
	return nil
}

// release drops the create's reservation that a reported object o
// confirms: the reservation its record holds, or one held under a
// placeholder of its generateName.
func (f *fold) release(old *objectRecord, o *object.Object, reservation string) error {
	if old != nil && old.Reservation != "" {
		return f.unindex(old.Reservation, old.ExpiresAt, old.Resource)
	}
	if old != nil || reservation != "" {
		return nil
	}
	ph, err := placeholderFor(f.tx, o.Namespace, o.Resource, o.GenerateName, o.Name)
	if err != nil || ph == nil {
		return err
	}
	return f.delete(ph.Namespace, ph.Resource, ph.Name, ph.Reservation)
}

// index enters a reservation or hold of an object of resource in the
// reservation bucket, and by its end in the expiry bucket, or, if it ends
// on the feed (release), in the feed-expiry bucket.
func (f *fold) index(id string, expiresAt time.Time, key []byte, resource, release string) error {
	if err := f.tx.Bucket(bucketReserved).Put([]byte(id), key); err != nil {
		return err
	}
	if release == ledger.ReleaseByFeed {
		return f.tx.Bucket(bucketFeedExpiry).Put(feedExpiryKey(resource, expiresAt, id), key)
	}
	return f.tx.Bucket(bucketExpiry).Put(expiryKey(expiresAt, id), key)
}

// hold applies an update's hold: the object, if the projection holds it,
// is charged at least the updated object's charge (see the type hold)
// until its own charge covers that, the object is deleted or the hold
// expires. An update of an object the projection does not hold charges
// nothing, nor does one whose charge the object's covers already.
func (f *fold) hold(rec *ledger.Record, e *evaluated, id string, ttl time.Duration) error {
	o := e.object
	key := objectKey(o.Namespace, o.Resource, o.Name)
	old := getObject(f.tx, key)
	if old == nil {
		return nil
	}
	if f.tx.Bucket(bucketReserved).Get([]byte(id)) != nil || covers(old.Charge, e.charge) {
		// A hold of that id is held already (a retried request), or the
		// object charges as much already.
		return nil
	}
	next := *old
	next.Seq = rec.Seq
	h := hold{ID: id, ExpiresAt: rec.Time.Add(ttl), Charge: e.charge}
	next.Holds = append(slices.Clip(old.Holds), h)
	if err := f.index(id, h.ExpiresAt, key, o.Resource, rec.Event.Release); err != nil {
		return err
	}
	if err := putObject(f.tx, &next); err != nil {
		return err
	}
	return f.recharge(o.Namespace, old, &next)
}

// reserve applies the reservations of a Reserve event in order: creates'
// reservations and updates' holds. One that cannot be applied skips the
// whole event before anything changes: the reservations were decided
// together, so they are kept or dropped together.
func (f *fold) reserve(rec *ledger.Record) error {
	reserved := rec.Event.Reserved()
	for i, r := range reserved {
		if e := f.evaluated(i); e.err != nil {
			if len(reserved) == 1 {
				return e.err
			}
			return skipf("reservation %d (%s): %v", i, r.ID, e.err)
		}
	}
	for i, r := range reserved {
		var err error
		if r.Operation == ledger.HoldOperation {
			err = f.hold(rec, f.evaluated(i), r.ID, rec.Event.ReservationTTL)
		} else {
			err = f.upsert(rec, r.Object, f.evaluated(i), r.ID, rec.Event.ReservationTTL)
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// delete removes an object, or, with reservation set, the object only if
// it is that create's reservation.
func (f *fold) delete(namespace, resource, name, reservation string) error {
	key := objectKey(namespace, resource, name)
	old := getObject(f.tx, key)
	if old == nil {
		return nil
	}
	if reservation != "" && old.Reservation != reservation {
		return nil
	}
	if old.Reservation != "" {
		if err := f.unindex(old.Reservation, old.ExpiresAt, resource); err != nil {
			return err
		}
	}
	for _, h := range old.Holds {
		if err := f.unindex(h.ID, h.ExpiresAt, resource); err != nil {
			return err
		}
	}
	if err := f.tx.Bucket(bucketObjects).Delete(key); err != nil {
		return err
	}
	if resource == "pods" {
		if err := f.tx.Bucket(bucketDeadlines).Delete(key); err != nil {
			return err
		}
	}
	if err := f.recharge(namespace, old, nil); err != nil {
		return err
	}
	if resource == "resourcequotas" && old.Reservation == "" {
		return f.deleteQuota(namespace, name)
	}
	return nil
}

// unindex removes a reservation or hold of an object of resource from
// the reservation bucket and from whichever expiry bucket index entered
// it in.
func (f *fold) unindex(id string, expiresAt time.Time, resource string) error {
	if err := f.tx.Bucket(bucketReserved).Delete([]byte(id)); err != nil {
		return err
	}
	// The bucket of a release rule not in use is empty: its key is not
	// made nor searched for.
	if b := f.tx.Bucket(bucketFeedExpiry); b.Len() > 0 {
		if err := b.Delete(feedExpiryKey(resource, expiresAt, id)); err != nil {
			return err
		}
	}
	if b := f.tx.Bucket(bucketExpiry); b.Len() > 0 {
		return b.Delete(expiryKey(expiresAt, id))
	}
	return nil
}

// expire releases a create's reservation or an update's hold not
// confirmed in time.
func (f *fold) expire(id string) error {
	key := f.tx.Bucket(bucketReserved).Get([]byte(id))
	if key == nil {
		return nil // confirmed or released already
	}
	old := getObject(f.tx, key)
	if old == nil {
		return fmt.Errorf("%w: reservation %s points at missing object %q", ErrInvariant, id, key)
	}
	if old.Reservation == id {
		return f.delete(old.Namespace, old.Resource, old.Name, id)
	}
	i := slices.IndexFunc(old.Holds, func(h hold) bool { return h.ID == id })
	if i < 0 {
		return fmt.Errorf("%w: reservation %s points at object %q, which holds no such reservation", ErrInvariant, id, key)
	}
	// An update's hold not covered in time: the object is charged as
	// without it.
	if err := f.unindex(old.Holds[i].ID, old.Holds[i].ExpiresAt, old.Resource); err != nil {
		return err
	}
	next := *old
	next.Holds = slices.Delete(slices.Clone(old.Holds), i, i+1)
	if err := putObject(f.tx, &next); err != nil {
		return err
	}
	return f.recharge(old.Namespace, old, &next)
}

// resync applies the complete list of one resource's objects in a
// namespace: what the projection holds and the list lacks is deleted,
// then every listed object is upserted.
func (f *fold) resync(rec *ledger.Record) error {
	ev := &rec.Event
	listed := make(map[string]bool, len(ev.Items)+len(ev.Listed))
	// The objects of a list split over several events came as Upserts
	// before this one.
	for _, name := range ev.Listed {
		listed[name] = true
	}
	for i := range ev.Items {
		e := f.evaluated(i)
		if e.err != nil {
			return skipf("resync item %d: %v", i, e.err)
		}
		if o := e.object; o.Resource != ev.Resource {
			return skipf("resync of %s lists a %s", ev.Resource, o.Resource)
		}
		listed[e.object.Name] = true
	}
	// What the list lacks is gone, unless it is newer than the list: an
	// object created after it.
	var gone []*objectRecord
	err := forEachObjectOf(f.tx, ev.Namespace, ev.Resource, func(r *objectRecord) error {
		if r.Reservation == "" && !listed[r.Name] && !older(ev.ResourceVersion, r.ResourceVersion) {
			gone = append(gone, r)
		}
		return nil
	})
	if err != nil {
		return err
	}
	for _, r := range gone {
		if err := f.delete(ev.Namespace, ev.Resource, r.Name, ""); err != nil {
			return err
		}
		if err := f.bury(r.UID, newest(ev.ResourceVersion, r.ResourceVersion), rec.Time); err != nil {
			return err
		}
	}
	// A listed object older than the projection's state of it (or a
	// deleted uid) is left as the projection has it.
	for i, raw := range ev.Items {
		err := f.upsert(rec, raw, f.evaluated(i), "", 0)
		if isStale(err) {
			f.cache.staleItems++
			continue
		}
		if err != nil {
			return err
		}
	}
	return f.sumNamespace(ev.Namespace)
}

// sumNamespace sums every valid quota of a namespace afresh from its
// objects. A resync does, after it has set the objects of a kind as the
// cluster lists them: a projection changed behind the fold's back (a page
// rewritten, an object lost) is mended there, as replay gives it.
func (f *fold) sumNamespace(namespace string) error {
	entries, err := f.cache.namespaceQuotas(f.tx, namespace)
	if err != nil {
		return err
	}
	for _, e := range entries {
		if e.quota == nil {
			continue
		}
		if err := f.sum(e.rec, e.quota); err != nil {
			return err
		}
		e.dirty = true
	}
	return nil
}
