package quota

import (
	"time"

	"github.com/quotaledger/quota/ledger/object"
	"github.com/quotaledger/quota/ledger/quantity"
)

// ResourceList maps resource names (requests.cpu, pods, count/jobs.batch) to
// quantities.
type ResourceList map[string]quantity.Quantity

// Charge is what one object contributes to the quotas of its namespace,
// independent of any quota: its full usage and the facts scopes match on.
// It is stored with the object in the projection, so it must round-trip
// through JSON exactly (formats included).
type Charge struct {
	Usage ResourceList `json:"usage"`
	Scope ScopeFacts   `json:"scope"`
}

// ScopeFacts are the attributes of an object that quota scopes read.
type ScopeFacts struct {
	// TODO: defined by the evaluator.
}

// Evaluate computes an object's charge as stored (after API defaulting),
// at the time now (for pods stuck terminating past their grace period).
func Evaluate(o *object.Object, now time.Time) (Charge, error) { panic("TODO") }

// Quota is a validated ResourceQuota.
type Quota struct {
	Namespace string
	Name      string
	Hard      ResourceList
	// Invalid holds Kubernetes' validation message when the spec is not
	// valid; an invalid quota charges nothing and admits nothing.
	Invalid string
	// TODO: scopes, selector.
}

// FromObject reads a ResourceQuota object.
func FromObject(o *object.Object) (*Quota, error) { panic("TODO") }

// Matches reports whether an object with charge c is charged to q.
func (q *Quota) Matches(c Charge) bool { panic("TODO") }

// Mask returns the part of usage q tracks (the resources in q.Hard).
func (q *Quota) Mask(usage ResourceList) ResourceList { panic("TODO") }
