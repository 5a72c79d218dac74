package projector

import (
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/quotaledger/quota/ledger"
	"github.com/quotaledger/quota/ledger/object"
	"github.com/quotaledger/quota/ledger/quantity"
	"github.com/quotaledger/quota/ledger/quota"
)

// errSkip marks a record that the fold cannot apply (bad bytes, an object
// that does not decode). The record is noted and the fold goes on.
type errSkip struct{ reason string }

func (e *errSkip) Error() string { return e.reason }

func skipf(format string, args ...any) error {
	return &errSkip{reason: fmt.Sprintf(format, args...)}
}

// Skipped describes a stream record that the fold noted and passed over.
type Skipped struct {
	Seq     uint64
	Subject string
	Reason  string
}

// Fold applies stream records to a projection. It is the one fold: the
// projector and replay both use it. It caches the quotas it has read (with
// their usage) across batches, so it must be the only writer of its
// projection; after a failed batch (the transaction rolled back) it forgets
// the cache.
type Fold struct {
	// quotas holds, per namespace, the namespace's quotas in key order.
	quotas map[string][]*quotaEntry
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

// ApplyBatch applies records with a fresh Fold; see (*Fold).ApplyBatch.
func ApplyBatch(tx *bolt.Tx, records []ledger.Record) ([]Skipped, error) {
	return NewFold().ApplyBatch(tx, records)
}

// ApplyBatch applies stream records, in order, to the projection in tx and
// records the last sequence as applied. Records at or below the applied
// sequence break the exactly-once invariant and are refused with
// ErrInvariant. It returns the records it skipped.
func (fd *Fold) ApplyBatch(tx *bolt.Tx, records []ledger.Record) (skipped []Skipped, err error) {
	if len(records) == 0 {
		return nil, nil
	}
	defer func() {
		if err != nil {
			fd.Forget()
		}
	}()
	applied := appliedSeq(tx)
	f := fold{tx: tx, cache: fd, pre: evaluateAll(records)}
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
			s := Skipped{Seq: rec.Seq, Subject: rec.Subject, Reason: skip.reason}
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
		if err := tx.Bucket(bucketSubjects).Put(subjectKey(rec.Namespace), seqBytes(rec.Seq)); err != nil {
			return skipped, fmt.Errorf("apply %s seq %d: %w", rec.Subject, rec.Seq, err)
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
func (fd *Fold) flush(tx *bolt.Tx) error {
	for _, entries := range fd.quotas {
		for _, e := range entries {
			if !e.dirty {
				continue
			}
			if err := putQuota(tx, e.rec); err != nil {
				return err
			}
			e.dirty = false
		}
	}
	return nil
}

// namespaceQuotas returns the cached quotas of a namespace, reading them
// from tx the first time.
func (fd *Fold) namespaceQuotas(tx *bolt.Tx, namespace string) ([]*quotaEntry, error) {
	if entries, ok := fd.quotas[namespace]; ok {
		return entries, nil
	}
	entries := []*quotaEntry{}
	err := forEachQuota(tx, namespace, false, func(r *quotaRecord) error {
		e := &quotaEntry{rec: r}
		if r.Invalid == "" {
			q, err := decodeQuota(r)
			if err != nil {
				return err
			}
			e.quota = q
		}
		entries = append(entries, e)
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
	tx    *bolt.Tx
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
		if err := f.delete(ev.Namespace, ev.Resource, ev.Name, ""); err != nil {
			return err
		}
		if ev.Resource == "pods" {
			// Kubernetes recounts the namespace's pod quotas.
			return f.dropOverdue(ev.Namespace, rec.Seq)
		}
		return nil
	case ledger.Expire:
		for _, id := range ev.ExpiredIDs() {
			if err := f.expire(id); err != nil {
				return err
			}
		}
		return nil
	case ledger.Resync:
		return f.resync(rec)
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

func (f *fold) upsert(rec *ledger.Record, raw json.RawMessage, e *evaluated, reservation string, ttl time.Duration) error {
	if e.err != nil {
		return e.err
	}
	o, charge := e.object, e.charge
	key := objectKey(o.Namespace, o.Resource, o.Name)
	old, err := getObjectCharge(f.tx, key)
	if err != nil {
		return err
	}
	if reservation != "" && old != nil {
		// The object exists already (or holds another reservation): a
		// create of it would fail, so the reservation charges nothing.
		return nil
	}
	if old != nil && old.Reservation != "" {
		if err := f.unreserve(old); err != nil {
			return err
		}
	}
	if old == nil && reservation == "" {
		// A new object with a generated name confirms a create reserved
		// under a placeholder of its generateName.
		ph, err := placeholderFor(f.tx, o.Namespace, o.Resource, o.GenerateName, o.Name)
		if err != nil {
			return err
		}
		if ph != nil {
			if err := f.delete(ph.Namespace, ph.Resource, ph.Name, ph.Reservation); err != nil {
				return err
			}
		}
	}
	next := &objectRecord{
		Resource:    o.Resource,
		Namespace:   o.Namespace,
		Name:        o.Name,
		UID:         o.UID,
		Kind:        o.Kind,
		Object:      raw,
		Charge:      charge,
		Seq:         rec.Seq,
		Reservation: reservation,
	}
	if reservation != "" {
		// Nothing reads a reservation's object (the log keeps it): its
		// record holds the charge only, a fraction of the bytes every
		// commit of a reservation writes.
		next.Object = nil
	}
	if old != nil {
		// The updates' holds that the object's new charge covers are
		// made (or need not be): released. The others keep holding.
		for _, h := range old.Holds {
			if covers(next.Charge, h.Charge) {
				if err := f.unhold(&h); err != nil {
					return err
				}
				continue
			}
			next.Holds = append(next.Holds, h)
		}
	}
	if reservation != "" {
		next.ExpiresAt = rec.Time.Add(ttl)
		if err := f.tx.Bucket(bucketReserved).Put([]byte(reservation), key); err != nil {
			return err
		}
		if err := f.tx.Bucket(bucketExpiry).Put(expiryKey(next.ExpiresAt, reservation), key); err != nil {
			return err
		}
	}
	// How Kubernetes handles this report is decided before the old
	// record is replaced: it may read the old object. A create, the
	// ledger's reservation of one or the object that confirms it is
	// charged by admission and recounts nothing.
	judged := kubeUpdate{charged: true}
	if reservation == "" && old != nil && old.Reservation == "" {
		if judged, err = f.judgeUpdate(old, next); err != nil {
			return err
		}
	}
	if err := putObject(f.tx, next); err != nil {
		return err
	}
	if reservation == "" && (old == nil || old.Reservation != "") {
		if err := f.indexed(o.Namespace, o.Resource, o.Name, true); err != nil {
			return err
		}
	}
	if err := f.recharge(o.Namespace, old, next, judged); err != nil {
		return err
	}
	if o.Resource == "pods" && reservation == "" {
		if err := f.notePod(o, charge); err != nil {
			return err
		}
		if old != nil && old.Reservation == "" && judged.recount {
			if err := f.dropOverdue(o.Namespace, rec.Seq); err != nil {
				return err
			}
		}
	}
	if o.Resource == "resourcequotas" && reservation == "" {
		return f.upsertQuota(o, raw, rec.Seq)
	}
	return nil
}

// hold applies an update's reservation: the object, if the projection
// holds it, is charged at least the updated object's charge (see the type
// hold) until its own charge covers that, the object is deleted or the
// hold expires. An update of an object the projection does not hold charges
// nothing, nor does one whose charge the object's covers already.
func (f *fold) hold(rec *ledger.Record, e *evaluated, id string, ttl time.Duration) error {
	o := e.object
	key := objectKey(o.Namespace, o.Resource, o.Name)
	old, err := getObject(f.tx, key)
	if err != nil || old == nil {
		return err
	}
	if f.tx.Bucket(bucketReserved).Get([]byte(id)) != nil || covers(old.Charge, e.charge) {
		// A reservation of that id is held already (a retried request),
		// or the object charges as much already.
		return nil
	}
	next := *old
	next.Seq = rec.Seq
	h := hold{ID: id, ExpiresAt: rec.Time.Add(ttl), Charge: e.charge}
	next.Holds = append(slices.Clip(old.Holds), h)
	if err := f.tx.Bucket(bucketReserved).Put([]byte(id), key); err != nil {
		return err
	}
	if err := f.tx.Bucket(bucketExpiry).Put(expiryKey(h.ExpiresAt, id), key); err != nil {
		return err
	}
	if err := putObject(f.tx, &next); err != nil {
		return err
	}
	return f.recharge(o.Namespace, old, &next, kubeUpdate{charged: true})
}

// reserve applies the reservations of a Reserve event in order. One that
// cannot be applied skips the whole event before anything changes: the
// reservations were decided together, so they are kept or dropped together.
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
		if r.Operation == ledger.ReserveUpdate {
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

func (f *fold) delete(namespace, resource, name, reservation string) error {
	key := objectKey(namespace, resource, name)
	old, err := getObjectCharge(f.tx, key)
	if err != nil || old == nil {
		return err
	}
	if reservation != "" && old.Reservation != reservation {
		return nil
	}
	if old.Reservation != "" {
		if err := f.unreserve(old); err != nil {
			return err
		}
	}
	for _, h := range old.Holds {
		if err := f.unhold(&h); err != nil {
			return err
		}
	}
	if err := f.tx.Bucket(bucketObjects).Delete(key); err != nil {
		return err
	}
	if old.Reservation == "" {
		if err := f.indexed(namespace, resource, name, false); err != nil {
			return err
		}
		if resource == "pods" {
			if err := f.forgetPod(namespace, name); err != nil {
				return err
			}
		}
	}
	if err := f.recharge(namespace, old, nil, ledgerStep); err != nil {
		return err
	}
	if resource == "resourcequotas" && old.Reservation == "" {
		return f.deleteQuota(namespace, name)
	}
	return nil
}

// deleteQuota removes a quota from the projection and the cache.
func (f *fold) deleteQuota(namespace, name string) error {
	entries, err := f.cache.namespaceQuotas(f.tx, namespace)
	if err != nil {
		return err
	}
	kept := entries[:0]
	for _, e := range entries {
		if e.rec.Name != name {
			kept = append(kept, e)
		}
	}
	f.cache.quotas[namespace] = kept
	return f.tx.Bucket(bucketQuotas).Delete(quotaKey(namespace, name))
}

// unreserve removes the reservation an object record holds from the
// reservation and expiry buckets.
func (f *fold) unreserve(r *objectRecord) error {
	if err := f.tx.Bucket(bucketReserved).Delete([]byte(r.Reservation)); err != nil {
		return err
	}
	return f.tx.Bucket(bucketExpiry).Delete(expiryKey(r.ExpiresAt, r.Reservation))
}

// unhold removes an update's hold from the reservation and expiry
// buckets.
func (f *fold) unhold(h *hold) error {
	if err := f.tx.Bucket(bucketReserved).Delete([]byte(h.ID)); err != nil {
		return err
	}
	return f.tx.Bucket(bucketExpiry).Delete(expiryKey(h.ExpiresAt, h.ID))
}

func (f *fold) expire(reservation string) error {
	key := f.tx.Bucket(bucketReserved).Get([]byte(reservation))
	if key == nil {
		return nil // confirmed or released already
	}
	old, err := getObjectCharge(f.tx, key)
	if err != nil {
		return err
	}
	if old == nil {
		return fmt.Errorf("%w: reservation %s points at missing object %q", ErrInvariant, reservation, key)
	}
	if old.Reservation == reservation {
		return f.delete(old.Namespace, old.Resource, old.Name, reservation)
	}
	i := slices.IndexFunc(old.Holds, func(h hold) bool { return h.ID == reservation })
	if i < 0 {
		return fmt.Errorf("%w: reservation %s points at object %q, which holds no such reservation", ErrInvariant, reservation, key)
	}
	// An update's hold not covered in time: the object is charged as
	// without it.
	if old, err = getObject(f.tx, key); err != nil {
		return err
	}
	if err := f.unhold(&old.Holds[i]); err != nil {
		return err
	}
	next := *old
	next.Holds = slices.Delete(slices.Clone(old.Holds), i, i+1)
	if err := putObject(f.tx, &next); err != nil {
		return err
	}
	return f.recharge(old.Namespace, old, &next, ledgerStep)
}

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
		o := e.object
		if o.Resource != ev.Resource {
			return skipf("resync of %s lists a %s", ev.Resource, o.Resource)
		}
		listed[o.Name] = true
	}
	var gone []string
	err := forEachObjectOf(f.tx, ev.Namespace, ev.Resource, func(r *objectRecord) error {
		if r.Reservation == "" && !listed[r.Name] {
			gone = append(gone, r.Name)
		}
		return nil
	})
	if err != nil {
		return err
	}
	for _, name := range gone {
		if err := f.delete(ev.Namespace, ev.Resource, name, ""); err != nil {
			return err
		}
	}
	if err := f.reconcileIndex(ev.Namespace, ev.Resource); err != nil {
		return err
	}
	for i, raw := range ev.Items {
		if err := f.upsert(rec, raw, f.evaluated(i), "", 0); err != nil {
			return err
		}
	}
	return f.recountNamespace(ev.Namespace)
}

// upsertQuota stores a ResourceQuota and, when its spec changed, recomputes
// its usage from the namespace's objects as the quota controller does.
func (f *fold) upsertQuota(o *object.Object, raw json.RawMessage, seq uint64) error {
	q, err := quota.FromObject(o)
	if err != nil {
		return skipf("read quota %s/%s: %v", o.Namespace, o.Name, err)
	}
	if o.Written != nil {
		// The recount a change of the quota sets off comes after its write.
		if err := advanceClock(f.tx.Bucket(bucketDeadlines), o.Namespace, *o.Written); err != nil {
			return err
		}
	}
	entries, err := f.cache.namespaceQuotas(f.tx, o.Namespace)
	if err != nil {
		return err
	}
	var entry *quotaEntry
	at := len(entries)
	for i, e := range entries {
		if e.rec.Name == o.Name {
			entry = e
			break
		}
		if e.rec.Name > o.Name {
			at = i
			break
		}
	}
	r := &quotaRecord{Namespace: o.Namespace, Name: o.Name, Object: raw, Invalid: q.Invalid, Seq: seq}
	if q.Invalid != "" {
		q = nil
	}
	recounted := false
	if entry != nil && q != nil {
		if recounted, err = newerRecount(entry.rec.Object, o); err != nil {
			return err
		}
	}
	switch {
	case entry != nil && sameSpec(entry.rec.Object, raw):
		r.Used, r.Terms, r.Stale, r.StatusHard = entry.rec.Used, entry.rec.Terms, entry.rec.Stale, entry.rec.StatusHard
	case q == nil:
	case entry != nil && entry.quota != nil && quota.Equal(entry.quota.Hard, q.Hard) && reflect.DeepEqual(entry.quota.Scopes, q.Scopes):
		// The quota controller ignores an update whose spec.hard has the
		// same values (quota.Equals): status keeps its figures and
		// strings, hard's and used's, and a stale quota stays stale. (The
		// API server refuses a change of scopes; a log that holds one
		// anyway is recounted, as the figures must follow what matches.)
		r.Used, r.Terms, r.Stale = entry.rec.Used, entry.rec.Terms, entry.rec.Stale
		r.StatusHard = shownHard(entry, q)
	default:
		if err := f.recompute(r, q); err != nil {
			return err
		}
		recounted = false
	}
	if entry == nil {
		entry = &quotaEntry{}
		entries = append(entries, nil)
		copy(entries[at+1:], entries[at:])
		entries[at] = entry
		f.cache.quotas[o.Namespace] = entries
	}
	entry.rec, entry.quota, entry.dirty = r, q, true
	if recounted {
		// The quota controller wrote this quota's status: it recounted
		// the quota then, whatever set the recount off (a change the
		// fold has seen, or one it cannot see, such as the controller's
		// periodic full recount), and wrote status.hard from spec.hard.
		// Where the recount gives other figures than the fold kept (a
		// stale quota, a pod past its deadline), they are the recount's.
		r.StatusHard = nil
		return f.recountQuota(entry)
	}
	return nil
}

// newerRecount reports whether quota o tells of a recount by the quota
// controller after the last one its stored object told of.
func newerRecount(stored json.RawMessage, o *object.Object) (bool, error) {
	if o.Recounted == nil {
		return false, nil
	}
	old, err := object.Decode(stored)
	if err != nil {
		return false, fmt.Errorf("%w: stored quota %s/%s: %v", ErrInvariant, o.Namespace, o.Name, err)
	}
	return old.Recounted == nil || o.Recounted.After(*old.Recounted), nil
}

// shownHard is the StatusHard of a quota whose spec.hard changed to q's
// without a value changing: the strings status.hard showed before, or nil
// where they are q's.
func shownHard(old *quotaEntry, q *quota.Quota) map[string]string {
	shown := old.rec.StatusHard
	if shown == nil {
		shown = make(map[string]string, len(old.quota.Hard))
		for name, v := range old.quota.Hard {
			shown[name] = v.String()
		}
	}
	for name, v := range q.Hard {
		if shown[name] != v.String() {
			return shown
		}
	}
	return nil
}

// sameSpec reports whether two stored quota objects have the same spec.
func sameSpec(a, b json.RawMessage) bool {
	var x, y struct {
		Spec json.RawMessage `json:"spec"`
	}
	if json.Unmarshal(a, &x) != nil || json.Unmarshal(b, &y) != nil {
		return false
	}
	return string(x.Spec) == string(y.Spec)
}

// recompute sets a quota's usage from scratch, as Kubernetes' recount of
// that quota does: the sum, in key order, of the charges of the
// namespace's objects that it matches, each figure printed in the format
// Kubernetes' recount most likely gives it. A pod past its deadline is
// summed as the recount charges it (see overdue); while its record keeps
// the charge it had, the quota is marked stale, so that the next recount
// of it, by then the pod's drop or deletion, counts it afresh rather than
// lowering it a second time.
func (f *fold) recompute(r *quotaRecord, q *quota.Quota) error {
	used := make(quota.ResourceList, len(q.Hard))
	terms := make(map[string]*[formatCount]int, len(q.Hard))
	for name := range q.Hard {
		used[name] = quantity.Quantity{}
		terms[name] = new([formatCount]int)
	}
	var late map[string]overduePod
	if q.Tracks("pods") {
		var err error
		if late, err = overduePods(f.tx, r.Namespace); err != nil {
			return err
		}
	}
	var mixed map[string][]term
	stale := false
	err := forEachObject(f.tx, r.Namespace, func(o *objectRecord) error {
		if p, ok := late[o.Name]; ok && o.Resource == "pods" {
			if p.lowers(q) {
				stale = true
			}
			o = p.recounted
		}
		for name, v := range part(q, o, nil) {
			used[name] = used[name].Add(v)
			if v.IsZero() {
				continue
			}
			terms[name][v.Format()]++
			if mixed == nil {
				mixed = map[string][]term{}
			}
			mixed[name] = append(mixed[name], term{resource: o.Resource, name: o.Name, reserved: o.Reservation != "", format: v.Format()})
		}
		return nil
	})
	if err != nil {
		return err
	}
	for name, v := range used {
		if v.Sign() < 0 {
			return fmt.Errorf("%w: quota %s/%s used %s=%s", ErrInvariant, r.Namespace, r.Name, name, v)
		}
		if _, sole := soleFormat(terms[name]); !sole {
			// The sum above prints in the format of its first term in key
			// order; Kubernetes' prints in that of its first term in its
			// informer's order, which the index makes likeliest.
			format, known, err := likeliestFormat(f.tx, r.Namespace, mixed[name])
			if err != nil {
				return err
			}
			if known {
				v = v.WithFormat(format)
			}
		}
		used[name] = settle(v)
	}
	r.Used, r.Terms, r.Stale, r.StatusHard = used, terms, stale, nil
	return nil
}

// recharge moves the quotas of a namespace from what an object charged in
// its old record to what it charges in its new one (either may be nil;
// see part). An increase is added to Used as an admission adds it; a
// decrease is what the quota controller's recount would give.
//
// The controller recounts a quota only when an object of a kind it tracks
// goes, or changes in a way its update filter looks for, and admission
// charges only the updates it evaluates (judgeUpdate). An update that
// lowers a charge without a recount, or raises one that admission did not
// charge, leaves the quota's figure where it was, as Kubernetes leaves it,
// and marks the quota stale; the next recount of a stale quota counts it
// afresh. The ledger's reservations are charged as admission charges; its
// releases of them count as recounts.
func (f *fold) recharge(namespace string, old, next *objectRecord, judged kubeUpdate) error {
	entries, err := f.cache.namespaceQuotas(f.tx, namespace)
	if err != nil {
		return err
	}
	resource := ""
	if old != nil {
		resource = old.Resource
	} else if next != nil {
		resource = next.Resource
	}
	// Kubernetes recounts every resource of a quota it recounts, its pods
	// included, whatever kind set the recount off: pods past their
	// deadline drop out of a quota that a service's deletion recounts.
	// (A pod's own recounts drop them from every quota: dropOverdue.)
	var late map[string]overduePod
	if judged.recount && resource != "pods" {
		if late, err = overduePods(f.tx, namespace); err != nil {
			return err
		}
	}
	for _, e := range entries {
		q := e.quota
		if q == nil {
			continue
		}
		if judged.recount && q.Tracks(resource) && (e.rec.Stale || lowersAny(late, q)) {
			if err := f.recompute(e.rec, q); err != nil {
				return err
			}
			e.dirty = true
			continue
		}
		var oldPart, newPart quota.ResourceList
		if old != nil {
			oldPart = part(q, old, nil)
		}
		if next != nil {
			newPart = part(q, next, nil)
		}
		switch {
		case judged.recount:
		case !judged.charged:
			if lowers(oldPart, newPart) || lowers(newPart, oldPart) {
				newPart = oldPart
				e.rec.Stale, e.dirty = true, true
			}
		case lowers(oldPart, newPart):
			newPart = atLeast(newPart, oldPart)
			e.rec.Stale, e.dirty = true, true
		}
		changed, rescan, err := adjust(e.rec, oldPart, newPart)
		if err != nil {
			return err
		}
		if rescan {
			if err := f.recompute(e.rec, q); err != nil {
				return err
			}
		}
		if changed || rescan {
			e.dirty = true
		}
	}
	return nil
}

// lowersAny reports whether a recount of q charges one of the overdue pods
// less than its record does.
func lowersAny(pods map[string]overduePod, q *quota.Quota) bool {
	for _, p := range pods {
		if p.lowers(q) {
			return true
		}
	}
	return false
}

// ledgerStep is how the fold applies deletions and the ledger's releases
// of reservations and holds: as recounts.
var ledgerStep = kubeUpdate{charged: true, recount: true}

// lowers reports whether next charges less than old for some resource.
func lowers(old, next quota.ResourceList) bool {
	for name, v := range old {
		if v.Cmp(next[name]) > 0 {
			return true
		}
	}
	return false
}

// atLeast returns next raised to old wherever old is more.
func atLeast(next, old quota.ResourceList) quota.ResourceList {
	out := make(quota.ResourceList, len(old)+len(next))
	for name, v := range next {
		out[name] = v
	}
	for name, v := range old {
		if v.Cmp(out[name]) > 0 {
			out[name] = v
		}
	}
	return out
}

// adjust applies the difference between two charges to a quota's usage. It
// reports whether Used changed and whether a decrease needs a rescan to
// learn the print format Kubernetes' recount would give.
//
// A decrease is what Kubernetes' recount gives, and a recount that changes
// a quota's usage rewrites every figure of it, each a fresh sum: so the
// figures the change leaves alone are reprinted as a fresh sum prints
// them (a figure that admissions built up from terms of several formats,
// say 1G then 2Gi less 1G, printed 2147483648, is 2Gi once recounted). A
// figure whose terms mix formats takes a rescan, whose print format
// follows the informer's likeliest order (likeliestFormat).
func adjust(r *quotaRecord, oldPart, newPart quota.ResourceList) (changed, rescan bool, err error) {
	if len(oldPart) == 0 && len(newPart) == 0 {
		return false, false, nil
	}
	if r.Used == nil {
		r.Used = quota.ResourceList{}
	}
	if r.Terms == nil {
		r.Terms = map[string]*[formatCount]int{}
	}
	var decreased bool
	names := make(map[string]struct{}, len(oldPart)+len(newPart))
	for n := range oldPart {
		names[n] = struct{}{}
	}
	for n := range newPart {
		names[n] = struct{}{}
	}
	for name := range names {
		o, n := oldPart[name], newPart[name]
		terms := r.Terms[name]
		if terms == nil {
			terms = new([formatCount]int)
			r.Terms[name] = terms
		}
		if !o.IsZero() {
			terms[o.Format()]--
		}
		if !n.IsZero() {
			terms[n.Format()]++
		}
		if terms[0] < 0 || terms[1] < 0 || terms[2] < 0 {
			return false, false, fmt.Errorf("%w: quota %s/%s: negative term count for %s", ErrInvariant, r.Namespace, r.Name, name)
		}
		d := n.Cmp(o)
		if d == 0 {
			continue
		}
		changed = true
		used := r.Used[name]
		if d > 0 {
			used = settle(used.Add(n.Sub(o)))
		} else {
			decreased = true
			var fresh bool
			if used, fresh = recounted(used.Sub(o.Sub(n)), terms); !fresh {
				rescan = true
			}
		}
		if used.Sign() < 0 {
			return false, false, fmt.Errorf("%w: quota %s/%s used %s=%s", ErrInvariant, r.Namespace, r.Name, name, used)
		}
		r.Used[name] = used
	}
	if decreased {
		// The recount writes status, and status.hard from spec.hard.
		r.StatusHard = nil
	}
	if !decreased || rescan {
		return changed, rescan, nil
	}
	for name, used := range r.Used {
		if _, done := names[name]; done {
			continue
		}
		terms := r.Terms[name]
		if terms == nil {
			terms = new([formatCount]int)
		}
		// Terms of several formats print as the recount's order has it,
		// which only a rescan can weigh (see likeliestFormat).
		format, ok := soleFormat(terms)
		if !ok {
			return changed, true, nil
		}
		if used.Format() != format {
			r.Used[name], _ = recounted(used, terms)
		}
	}
	return changed, rescan, nil
}

// recounted is used as Kubernetes' recount prints it when all its
// non-zero terms share one format; ok is false when they do not, and the
// print depends on the order of the sum.
func recounted(used quantity.Quantity, terms *[formatCount]int) (quantity.Quantity, bool) {
	format, ok := soleFormat(terms)
	switch {
	case !ok:
		return used, false
	case used.IsZero():
		return quantity.Quantity{}, true
	}
	return settle(used.WithFormat(format)), true
}

// soleFormat reports the one format all non-zero terms share. With no
// terms it reports DecimalSI, the format of Kubernetes' zero.
func soleFormat(terms *[formatCount]int) (quantity.Format, bool) {
	var format quantity.Format = quantity.DecimalSI
	seen := 0
	for f, n := range terms {
		if n > 0 {
			format = quantity.Format(f)
			seen++
		}
	}
	return format, seen <= 1
}

// settle gives a usage figure the format it has after Kubernetes stores it
// in the quota's status and reads it back: the format its printed form
// parses to. The next admission adds to that.
func settle(q quantity.Quantity) quantity.Quantity {
	p, err := quantity.Parse(q.String())
	if err != nil {
		panic(fmt.Sprintf("quantity %q does not parse back: %v", q.String(), err))
	}
	return p
}
