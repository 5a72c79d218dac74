package projector

import (
	"github.com/quotaledger/quota/ledger"
	"github.com/quotaledger/quota/ledger/quota"
)

// An Upsert that reports an object at the charge the namespace holds it
// at already changes nothing an admission decision reads. The fold turns a
// create's reservation into the object, or keeps the object, and moves
// each quota's used by the difference between the two charges, which is
// none (see move). The exporter appends such events all the time: the
// ADDED event that confirms a create the webhook reserved, or a pod's
// status changing. An admission responder whose compare-and-swap they
// defeat may therefore decide on as before, without waiting for the
// projection to apply them.

// UnchangingUpsert returns the object an Upsert record reports and the
// charge the fold gives it, when applying the record where the namespace
// holds that object at that charge, with no hold on it, changes nothing
// an admission decision reads. ok is false for every other record: other
// types, a record that does not decode or evaluate, an object being
// deleted (its charge may change at its deadline), and the kinds whose
// objects decisions read themselves (quotas, LimitRanges,
// ServiceAccounts).
func UnchangingUpsert(rec *ledger.Record) (resource, name string, charge quota.Charge, ok bool) {
	if rec.Err != nil || rec.Event.Type != ledger.Upsert {
		return "", "", quota.Charge{}, false
	}
	switch rec.Event.Resource {
	case "resourcequotas", resourceLimitRanges, resourceServiceAccounts:
		return "", "", quota.Charge{}, false
	}
	e := evaluate(&rec.Event, rec.Event.Object, rec.Time)
	if e.err != nil || e.object.DeletionTimestamp != nil {
		return "", "", quota.Charge{}, false
	}
	return e.object.Resource, e.object.Name, e.charge, true
}

// SameCharge reports whether two charges are the same to every quota: the
// same resource and scope facts, and equal figures for the same resources.
func SameCharge(a, b quota.Charge) bool {
	return a.Resource == b.Resource && sameScope(a.Scope, b.Scope) && quota.Equal(a.Usage, b.Usage)
}

// Charge returns the charge the projection holds for an object of
// namespace, or for a create's reservation of it, when it holds one with
// no hold on it, last written by an event at or before upTo: the charge a
// decision made on a view accounting for the namespace's events up to
// upTo holds for it.
func (h *Lookup) Charge(namespace, resource, name string, upTo uint64) (quota.Charge, bool, error) {
	r, err := getObjectCharge(h.tx, objectKey(namespace, resource, name))
	if err != nil || r == nil || len(r.Holds) > 0 || r.Seq > upTo {
		return quota.Charge{}, false, err
	}
	return r.Charge, true, nil
}
