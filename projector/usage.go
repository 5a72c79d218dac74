package projector

import (
	"encoding/json"
	"fmt"
	"reflect"

	"github.com/quotaledger/quota/ledger/object"
	"github.com/quotaledger/quota/ledger/quantity"
	"github.com/quotaledger/quota/ledger/quota"
)

// How Used is kept, and where Kubernetes' answer is a draw: see doc.go.

// upsertQuota stores a ResourceQuota and, when its hard limits or scopes
// changed, sums its usage afresh from the namespace's objects.
func (f *fold) upsertQuota(o *object.Object, raw json.RawMessage, seq uint64) error {
	q, err := quota.FromObject(o)
	if err != nil {
		return skipf("read quota %s/%s: %v", o.Namespace, o.Name, err)
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
	switch {
	case q == nil:
	case entry != nil && entry.quota != nil && quota.Equal(entry.quota.Hard, q.Hard) && reflect.DeepEqual(entry.quota.Scopes, q.Scopes):
		// The same limits and scopes: the same figures.
		r.Used = entry.rec.Used
	default:
		if err := f.sum(r, q); err != nil {
			return err
		}
	}
	if entry == nil {
		entry = &quotaEntry{}
		entries = append(entries, nil)
		copy(entries[at+1:], entries[at:])
		entries[at] = entry
		f.cache.quotas[o.Namespace] = entries
	}
	entry.rec, entry.quota, entry.dirty = r, q, true
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

// sum sets a quota's usage afresh: the sum, in key order (resource, then
// name), of what the namespace's objects charge it.
func (f *fold) sum(r *quotaRecord, q *quota.Quota) error {
	used := make(quota.ResourceList, len(q.Hard))
	for name := range q.Hard {
		used[name] = quantity.Quantity{}
	}
	err := forEachObject(f.tx, r.Namespace, func(o *objectRecord) error {
		for name, v := range part(q, o, nil) {
			used[name] = used[name].Add(v)
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
		used[name] = settle(v)
	}
	r.Used = used
	return nil
}

// recharge moves the quotas of a namespace from what an object charged in
// its old record to what it charges in its new one (either may be nil;
// see part): each figure the change touches takes the difference.
func (f *fold) recharge(namespace string, old, next *objectRecord) error {
	entries, err := f.cache.namespaceQuotas(f.tx, namespace)
	if err != nil {
		return err
	}
	for _, e := range entries {
		q := e.quota
		if q == nil {
			continue
		}
		var changed bool
		if len(old.holds()) == 0 && len(next.holds()) == 0 {
			changed, err = moveTracked(e.rec, q, matched(q, old), matched(q, next))
		} else {
			var oldPart, newPart quota.ResourceList
			if old != nil {
				oldPart = part(q, old, nil)
			}
			if next != nil {
				newPart = part(q, next, nil)
			}
			changed, err = move(e.rec, oldPart, newPart)
		}
		if err != nil {
			return err
		}
		e.dirty = e.dirty || changed
	}
	return nil
}

// matched is the usage of an object's charge if q matches it, else nil.
func matched(q *quota.Quota, r *objectRecord) quota.ResourceList {
	if r == nil || !q.Matches(r.Charge) {
		return nil
	}
	return r.Charge.Usage
}

// moveTracked is move for two charges without holds: the parts are the
// resources of q.Hard in each usage, read in place rather than masked
// into new lists, since the fold does this for every quota of the
// namespace at every change.
func moveTracked(r *quotaRecord, q *quota.Quota, oldUsage, newUsage quota.ResourceList) (bool, error) {
	changed := false
	if oldUsage == nil && newUsage == nil {
		return false, nil
	}
	for name := range q.Hard {
		o, inOld := oldUsage[name]
		n, inNew := newUsage[name]
		if !inOld && !inNew {
			continue
		}
		c, err := moveOne(r, name, o, n)
		if err != nil {
			return false, err
		}
		changed = changed || c
	}
	return changed, nil
}

// moveOne applies the difference between an old and a new charge of one
// resource to a quota's usage, and reports whether Used changed.
func moveOne(r *quotaRecord, name string, o, n quantity.Quantity) (bool, error) {
	if n.Cmp(o) == 0 {
		return false, nil
	}
	used := settle(r.Used[name].Add(n.Sub(o)))
	if used.Sign() < 0 {
		return false, fmt.Errorf("%w: quota %s/%s used %s=%s", ErrInvariant, r.Namespace, r.Name, name, used)
	}
	if r.Used == nil {
		r.Used = quota.ResourceList{}
	}
	r.Used[name] = used
	return true, nil
}

// move applies the difference between two charges to a quota's usage,
// and reports whether Used changed.
func move(r *quotaRecord, oldPart, newPart quota.ResourceList) (bool, error) {
	changed := false
	apply := func(name string, o, n quantity.Quantity) error {
		c, err := moveOne(r, name, o, n)
		changed = changed || c
		return err
	}
	for name, o := range oldPart {
		if err := apply(name, o, newPart[name]); err != nil {
			return false, err
		}
	}
	for name, n := range newPart {
		if _, done := oldPart[name]; !done {
			if err := apply(name, quantity.Quantity{}, n); err != nil {
				return false, err
			}
		}
	}
	return changed, nil
}

// settle gives a usage figure the format it has after Kubernetes stores it
// in the quota's status and reads it back: the format its printed form
// parses to. The next change adds to that.
func settle(q quantity.Quantity) quantity.Quantity {
	p, err := quantity.Parse(q.String())
	if err != nil {
		panic(fmt.Sprintf("quantity %q does not parse back: %v", q.String(), err))
	}
	return p
}
