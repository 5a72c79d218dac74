package projector

import (
	"slices"
	"time"

	"github.com/quotaledger/quota/ledger/quota"
)

// hold is an update admission's reservation on an object the projection
// holds: the charge the object will have once the update is made. Until
// the object reports a charge that covers it (covers), or it expires, the
// object charges each quota, per resource, the largest of its own
// charge's and its holds' figures (part).
//
// For a quota that matched the object before the update, that is what
// the ResourceQuota admission plugin adds to the quota's status, the
// growth; for one the update brings the object into, the object's whole
// new usage, as the plugin charges it. Two updates of one object admitted
// before either is made charge the larger of the two, not their sum: only
// one state of the object can follow them.
type hold struct {
	ID        string       `json:"id"`
	ExpiresAt time.Time    `json:"expiresAt"`
	Charge    quota.Charge `json:"charge"`
}

// part is what the object r, with its holds, charges quota q: per
// resource, the largest figure among its own charge and its holds' charges
// that q matches (a resource none of them has is left out). by, unless
// nil, is given for each resource the hold whose figure it is; a resource
// charged at the object's own figure is not set.
func part(q *quota.Quota, r *objectRecord, by map[string]*hold) quota.ResourceList {
	var out quota.ResourceList
	if q.Matches(r.Charge) {
		out = q.Mask(r.Charge.Usage)
	}
	for i := range r.Holds {
		h := &r.Holds[i]
		if !q.Matches(h.Charge) {
			continue
		}
		for name, v := range q.Mask(h.Charge.Usage) {
			if cur, ok := out[name]; ok && v.Cmp(cur) <= 0 {
				continue
			}
			if out == nil {
				out = quota.ResourceList{}
			}
			out[name] = v
			if by != nil {
				by[name] = h
			}
		}
	}
	return out
}

// covers reports whether an object charged c needs no hold of h: it is
// charged under the same scopes, at least h's figure for every resource.
// An update's hold is released once the object reports such a charge;
// while it does, the hold adds nothing to any quota.
func covers(c, h quota.Charge) bool {
	if c.Resource != h.Resource || !sameScope(c.Scope, h.Scope) {
		return false
	}
	for name, v := range h.Usage {
		if c.Usage[name].Cmp(v) < 0 {
			return false
		}
	}
	return true
}

func sameScope(a, b quota.ScopeFacts) bool {
	return a.Pod == b.Pod && a.Terminating == b.Terminating && a.BestEffort == b.BestEffort &&
		a.PriorityClass == b.PriorityClass && a.CrossNamespacePodAffinity == b.CrossNamespacePodAffinity &&
		slices.Equal(a.VolumeAttributesClasses, b.VolumeAttributesClasses)
}
