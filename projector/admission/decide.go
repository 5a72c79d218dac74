package admission

import (
	"errors"
	"time"

	admissionv1 "k8s.io/api/admission/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/quotaledger/quota/ledger"
	"github.com/quotaledger/quota/ledger/object"
	"github.com/quotaledger/quota/ledger/quota"
	"github.com/quotaledger/quota/projector"
)

// decision is the verdict on one request against one namespace state.
type decision struct {
	allowed bool
	code    int32
	message string
	// charged says whether some quota's usage grows: only then is a
	// reservation worth appending.
	charged bool
	// charge is an allowed update's object charge: what its reservation
	// holds.
	charge quota.Charge
}

// testHookDecide, set by tests only, is called with every create's object
// as it is decided.
var testHookDecide func(*object.Object)

// decide applies what the API server would before quota admission (for a
// create: defaulting, LimitRange defaults, RuntimeClass overhead) and asks
// ledger/quota for the verdict against v, under the limitedResources
// configuration limited; subresource is an update's. It may change obj
// (defaulting) and never changes v, which other decisions may be reading.
func decide(v *view, op admissionv1.Operation, obj, old *object.Object, subresource string, limited []quota.LimitedResource) *decision {
	if op == admissionv1.Create {
		return prepare(v.env, obj, limited).decide(v.NamespaceState)
	}
	return decideUpdate(v.env, v.NamespaceState, obj, old, subresource, limited)
}

// decideUpdate decides an update of old to obj (of its subresource, if
// set) against st, after LimitRanger checks it against the namespace's
// LimitRanges (env): a claim's update, or a pod's resize.
func decideUpdate(env *quota.Environment, st *projector.NamespaceState, obj, old *object.Object, subresource string, limited []quota.LimitedResource) *decision {
	var err error
	switch subresource {
	case "":
		err = quota.Validate(obj, old, *env)
	case "resize":
		err = quota.ValidateResize(obj, old, *env)
	}
	if err != nil {
		return refusal(obj, err)
	}
	d := quota.Admit(quota.AdmitRequest{
		Operation:   quota.Update,
		Object:      obj,
		OldObject:   old,
		Subresource: subresource,
		Quotas:      st.Quotas,
		Limited:     limited,
		Now:         time.Now(),
		VerdictOnly: true,
	})
	out := decisionOf(st, d)
	out.charge = d.Charge
	return out
}

// decisionOf turns quota's decision into the responder's, noting whether
// an allowed request charges some quota.
func decisionOf(st *projector.NamespaceState, d quota.Decision) *decision {
	out := &decision{allowed: d.Allowed, code: d.Code, message: d.Message}
	if !d.Allowed {
		return out
	}
	for _, s := range st.Quotas {
		if !s.Quota.Matches(d.Charge) {
			continue
		}
		for name, v := range d.Charge.Usage {
			if _, tracked := s.Quota.Hard[name]; tracked && !v.IsZero() {
				out.charged = true
				return out
			}
		}
	}
	return out
}

// refusal is the denial of obj by what runs before quota: the API
// server's validation (a 422 in its own words) or an admission plugin (a
// 403 about the object, or the plugin's plain error, a 500 with its bare
// message).
func refusal(obj *object.Object, err error) *decision {
	var invalid *quota.InvalidError
	if errors.As(err, &invalid) {
		return &decision{allowed: false, code: 422, message: invalid.Error()}
	}
	var plain *quota.PlainError
	if errors.As(err, &plain) {
		return &decision{allowed: false, code: 500, message: plain.Error()}
	}
	return &decision{allowed: false, code: 403, message: quota.ForbiddenPrefix(obj) + err.Error()}
}

// reason is the status reason of a denial with the decision's code: a
// 500 is a plain error, which the API server reports with no reason.
func (d *decision) reason() metav1.StatusReason {
	switch d.code {
	case 422:
		return metav1.StatusReasonInvalid
	case 500:
		return metav1.StatusReasonUnknown
	}
	return metav1.StatusReasonForbidden
}

// Verdict reports whether a denial's status is the API server's verdict
// on the object: a 403 from quota or another admission plugin, a 422 from
// the object's validation, or a plugin's plain error, which the API
// server reports as a 500 without a reason. The responder's own failures
// to decide carry a reason (BadRequest, InternalError).
func Verdict(st *metav1.Status) bool {
	switch st.Code {
	case 403, 422:
		return true
	case 500:
		return st.Reason == metav1.StatusReasonUnknown
	}
	return false
}

// prepared is a create's object made ready for decisions against a
// namespace's changing usage: defaulted against the namespace's defaults
// (env) and evaluated, and, for a reservation, trimmed and encoded
// (reserveAs). All of that depends on the object and env only, so it is
// done once, on the request's goroutine, and the round that decides
// creates one after the other only compares charges with usage.
type prepared struct {
	env *quota.Environment
	// object is the defaulted object, with its own naming: a denial of a
	// generateName create names the prefix, as Kubernetes does.
	object *object.Object
	// denial is set when defaulting refused the object.
	denial *decision
	charge quota.Charge
	// evaluated is false when the charge could not be computed; decide
	// then lets quota.Admit report it.
	evaluated bool
	now       time.Time
	// reservation is the encoded reservation (reserveAs); err says why
	// there is none.
	reservation ledger.EncodedReservation
	err         error
	// trimmed is the object's trimmed form under its own name.
	trimmed []byte
	// limited is the limitedResources configuration decisions apply.
	limited []quota.LimitedResource
}

// prepare defaults obj against env and evaluates it.
func prepare(env *quota.Environment, obj *object.Object, limited []quota.LimitedResource) *prepared {
	p := &prepared{env: env, object: obj, now: time.Now(), limited: limited}
	err := quota.Default(obj, *env)
	if err == nil {
		err = quota.Validate(obj, nil, *env)
	}
	if err != nil {
		p.denial = refusal(obj, err)
		return p
	}
	if c, err := quota.Evaluate(obj, p.now); err == nil {
		p.charge, p.evaluated = c, true
	}
	return p
}

// reserveAs encodes the reservation the create would make under id.
func (p *prepared) reserveAs(id string) {
	if p.denial == nil {
		p.reservation, p.err = p.encode(id)
	}
}

// nameFor is the name the object is reserved under by reservation id: its
// own, or a placeholder when it came with only a generateName.
func (p *prepared) nameFor(id string) string {
	if p.object.Name != "" {
		return p.object.Name
	}
	return projector.PlaceholderName(p.object.GenerateName, id)
}

// encode encodes the reservation of the create under id.
func (p *prepared) encode(id string) (ledger.EncodedReservation, error) {
	name := p.nameFor(id)
	trimmed := p.trimmed
	if trimmed == nil || name != p.object.Name {
		o := *p.object
		o.Name = name
		var err error
		if trimmed, err = o.Trimmed(); err != nil {
			return ledger.EncodedReservation{}, err
		}
		if name == p.object.Name {
			p.trimmed = trimmed
		}
	}
	return ledger.EncodeReservation(ledger.Reservation{ID: id, Resource: p.object.Resource, Name: name, Object: trimmed})
}

// decide decides the prepared create against st's quotas.
func (p *prepared) decide(st *projector.NamespaceState) *decision {
	if testHookDecide != nil {
		testHookDecide(p.object)
	}
	if p.denial != nil {
		return p.denial
	}
	req := quota.AdmitRequest{Operation: quota.Create, Object: p.object, Quotas: st.Quotas, Limited: p.limited, Now: p.now, VerdictOnly: true}
	if p.evaluated {
		req.Charge = &p.charge
	}
	return decisionOf(st, quota.Admit(req))
}
