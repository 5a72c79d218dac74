package admission

import (
	"time"

	admissionv1 "k8s.io/api/admission/v1"

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
