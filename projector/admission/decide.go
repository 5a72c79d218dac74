package admission

import (
	"time"

	admissionv1 "k8s.io/api/admission/v1"

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
	// object is the candidate after defaulting: what a reservation holds.
	object *object.Object
	// charge is the object's charge, set when allowed.
	charge quota.Charge
}

// decide applies what the API server would before quota admission (for a
// create: defaulting, LimitRange defaults, RuntimeClass overhead) and asks
// ledger/quota for the verdict.
// It may change obj (defaulting) and never changes st, which other
// decisions may be reading.
func decide(st *projector.NamespaceState, op admissionv1.Operation, obj, old *object.Object) *decision {
	if op == admissionv1.Create {
		env := quota.Environment{
			LimitRanges:     st.LimitRanges,
			RuntimeClasses:  st.RuntimeClasses,
			PriorityClasses: st.PriorityClasses,
			StorageClasses:  st.StorageClasses,
		}
		if err := quota.Default(obj, env); err != nil {
			return &decision{allowed: false, code: 403, message: forbiddenPrefix(obj) + err.Error(), object: obj}
		}
	}
	d := quota.Admit(quota.AdmitRequest{
		Operation: quota.Operation(op),
		Object:    obj,
		OldObject: old,
		Quotas:    st.Quotas,
		Now:       time.Now(),
	})
	return verdict(st, d, obj)
}

// verdict turns quota's decision into the responder's, noting whether an
// allowed request charges some quota.
func verdict(st *projector.NamespaceState, d quota.Decision, obj *object.Object) *decision {
	out := &decision{allowed: d.Allowed, code: d.Code, message: d.Message, object: obj, charge: d.Charge}
	if !d.Allowed {
		return out
	}
	for _, s := range st.Quotas {
		if !s.Quota.Matches(d.Charge) {
			continue
		}
		for _, v := range s.Quota.Mask(d.Charge.Usage) {
			if !v.IsZero() {
				out.charged = true
			}
		}
	}
	return out
}

// forbiddenPrefix is how kube-apiserver starts a 403 about an object.
func forbiddenPrefix(o *object.Object) string {
	gr := o.GroupResource().String()
	if o.Name == "" {
		return gr + " is forbidden: "
	}
	return gr + " \"" + o.Name + "\" is forbidden: "
}

// prepared is a create's object made ready for decisions against a
// namespace's changing usage: defaulted against the namespace's defaults
// (env), evaluated, and, for a reservation, trimmed and encoded. All of
// that depends on the object and env only, so it is done once, on the
// request's goroutine, and the round that decides creates one after the
// other only compares charges with usage.
type prepared struct {
	env *quota.Environment
	// object is the defaulted object; its name is the reservation's
	// placeholder name when it came with only a generateName.
	object *object.Object
	// denial is set when defaulting refused the object.
	denial *decision
	charge quota.Charge
	// evaluated is false when the charge could not be computed; decide
	// then lets quota.Admit report it.
	evaluated bool
	trimmed   []byte
	// reservation is the encoded reservation; err says why there is none.
	reservation ledger.EncodedReservation
	err         error
	now         time.Time
}

// prepare makes obj ready for decisions against env, with reservation as
// the ID of the reservation it would make.
func prepare(env *quota.Environment, obj *object.Object, reservation string) *prepared {
	p := &prepared{env: env, object: obj, now: time.Now()}
	if err := quota.Default(obj, *env); err != nil {
		p.denial = &decision{allowed: false, code: 403, message: forbiddenPrefix(obj) + err.Error(), object: obj}
		return p
	}
	if c, err := quota.Evaluate(obj, p.now); err == nil {
		p.charge, p.evaluated = c, true
	}
	// The object keeps its own naming (a denial of a generateName create
	// names the prefix, as Kubernetes does); the reservation gets the
	// placeholder name.
	name := p.nameFor(reservation)
	o := *obj
	o.Name = name
	if p.trimmed, p.err = o.Trimmed(); p.err != nil {
		return p
	}
	p.reservation, p.err = ledger.EncodeReservation(ledger.Reservation{ID: reservation, Resource: obj.Resource, Name: name, Object: p.trimmed})
	return p
}

// nameFor is the name the object is reserved under by reservation id: its
// own, or a placeholder when it came with only a generateName.
func (p *prepared) nameFor(id string) string {
	if p.object.Name != "" {
		return p.object.Name
	}
	return p.object.GenerateName + "reserved-" + id
}

// reencode encodes the reservation again under another ID.
func (p *prepared) reencode(id string) (ledger.EncodedReservation, error) {
	trimmed := p.trimmed
	name := p.nameFor(id)
	if name != p.object.Name {
		o := *p.object
		o.Name = name
		var err error
		if trimmed, err = o.Trimmed(); err != nil {
			return ledger.EncodedReservation{}, err
		}
	}
	return ledger.EncodeReservation(ledger.Reservation{ID: id, Resource: p.object.Resource, Name: name, Object: trimmed})
}

// decide decides the prepared create against st's quotas.
func (p *prepared) decide(st *projector.NamespaceState) *decision {
	if p.denial != nil {
		return p.denial
	}
	req := quota.AdmitRequest{Operation: quota.Create, Object: p.object, Quotas: st.Quotas, Now: p.now}
	if p.evaluated {
		req.Charge = &p.charge
	}
	return verdict(st, quota.Admit(req), p.object)
}
