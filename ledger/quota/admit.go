package quota

import (
	"fmt"
	"net/http"
	"slices"
	"sort"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/quotaledger/quota/ledger/object"
)

// Operation is the admission operation, as admission.k8s.io names it.
type Operation string

// Operations quota admission distinguishes.
const (
	Create Operation = "CREATE"
	Update Operation = "UPDATE"
	Delete Operation = "DELETE"
)

// ReasonForbidden is the status reason of a quota denial.
const ReasonForbidden = "Forbidden"

// QuotaState is one quota of the namespace with its current used.
type QuotaState struct {
	Quota *Quota
	Used  ResourceList
}

// LimitedResource is one entry of the ResourceQuota admission plugin's
// limitedResources configuration: consuming a resource of this group and
// resource whose name contains one of MatchContains, or matching one of
// MatchScopes, needs a covering quota.
type LimitedResource struct {
	APIGroup      string             `json:"apiGroup,omitempty"`
	Resource      string             `json:"resource"`
	MatchContains []string           `json:"matchContains,omitempty"`
	MatchScopes   []ScopeRequirement `json:"matchScopes,omitempty"`
}

// AdmitRequest is one admission question.
type AdmitRequest struct {
	Operation Operation
	// Object is the object to create or the new state of an update, with
	// its namespace set and (for raw manifests) Default applied.
	Object *object.Object
	// OldObject is the stored state for an update.
	OldObject *object.Object
	// Subresource is the request's subresource (an AdmissionRequest's
	// subResource), empty for the object itself. The plugin evaluates no
	// request on a subresource but a pod's resize.
	Subresource string
	// Quotas are the namespace's quotas; Admit reads them sorted by name.
	Quotas []QuotaState
	// Limited is the limitedResources configuration; nil for none.
	Limited []LimitedResource
	// Now is the time pods' grace periods are measured against.
	Now time.Time
	// Charge is Evaluate(Object, Now) when the caller has it already (a
	// decision made again against new usage); nil: Admit evaluates it.
	Charge *Charge
	// VerdictOnly says the caller reads only the verdict: the Decision's
	// Used is left nil, and no quota's new usage is built.
	VerdictOnly bool
}

// Decision is the answer to an AdmitRequest.
type Decision struct {
	Allowed bool
	// Message is the full status message kube-apiserver returns, empty when
	// allowed.
	Message string
	// Code is the HTTP status: 200 allowed, 403 denied, 500 when the
	// request could not be evaluated.
	Code int32
	// Reason is the status reason: Forbidden for denials.
	Reason string
	// Used is every quota's used after the request, by quota name; only
	// matching quotas change. It is nil when the request was VerdictOnly.
	Used map[string]ResourceList
	// Charge is the object's charge, what a reservation holds.
	Charge Charge
}

// handles reports whether the quota plugin evaluates req, by the package
// doc's rule. A plain update of a pod cannot change what it is charged,
// only which quotas charge it: it is evaluated (since Kubernetes v1.33)
// when it moves the pod between the Terminating and NotTerminating scopes.
func handles(req *AdmitRequest) bool {
	op, resource := req.Operation, req.Object.Resource
	switch {
	case resource == "pods" && req.Subresource == "resize":
		return op == Update
	case resource == "persistentvolumeclaims" && req.Subresource == "status":
		// Kubernetes evaluates every status update of a claim (its test
		// of a change in the allocated size compares two pointers), but
		// refuses none for exceeding a quota.
		return req.OldObject != nil
	case req.Subresource != "":
		return false
	case resource == "pods":
		return op == Create || op == Update && req.OldObject != nil && isTerminating(req.OldObject) != isTerminating(req.Object)
	case resource == "persistentvolumeclaims", resource == "services", resource == resourceClaims:
		return op == Create || op == Update
	}
	return op == Create
}

// isTerminating reports whether o is a pod in the Terminating scope.
func isTerminating(o *object.Object) bool {
	pod, ok := o.Value.(*corev1.Pod)
	return ok && terminating(pod)
}

// Admit decides a request as the ResourceQuota admission plugin's
// CheckRequest does.
func Admit(req AdmitRequest) Decision {
	states, d := admitStates(&req)
	o := req.Object
	if req.Operation == Delete || o == nil || !handles(&req) {
		return d
	}
	var input Charge
	if req.Charge != nil {
		input = *req.Charge
	} else {
		var err error
		if input, err = Evaluate(o, req.Now); err != nil {
			return internalError(d, err)
		}
	}
	d.Charge = input

	limitedScopes := matchedLimitedScopes(input, req.Limited)
	limitedNames := limitedNamesOf(o, input, req.Limited)

	interesting, restrictedScopes, refused := matchQuotas(states, o, input)
	if refused != "" {
		return forbidden(d, o, refused)
	}

	if neg := negativeNames(input.Usage); len(neg) > 0 {
		return forbidden(d, o, "quota usage is negative for resource(s): "+strings.Join(neg, ","))
	}

	delta, nothing, refused, err := requestDeltas(&req, states, interesting, input)
	switch {
	case err != nil:
		return internalError(d, err)
	case refused != "":
		return forbidden(d, o, refused)
	case nothing:
		return d
	}

	if uncovered := uncoveredNames(limitedNames, states, interesting, o.Resource); len(uncovered) > 0 {
		return forbidden(d, o, "insufficient quota to consume: "+joinSorted(uncovered))
	}
	if missing := uncoveredScopes(limitedScopes, restrictedScopes); len(missing) > 0 {
		// Kubernetes returns this one as a plain error, which the API
		// server reports as an internal error with the bare message. It
		// prints the values, not by their String method.
		d.Allowed = false
		d.Code = http.StatusInternalServerError
		d.Reason = ""
		d.Message = fmt.Sprintf("insufficient quota to match these scopes: %v", missing)
		return d
	}

	if refused := exceeded(&req, states, interesting, delta); refused != "" {
		return forbidden(d, o, refused)
	}
	if d.Used != nil {
		for j, i := range interesting {
			if delta[j] != nil {
				d.Used[states[i].Quota.Name] = addTracked(states[i].Used, delta[j], states[i].Quota.Hard)
			}
		}
	}
	return d
}

// admitStates returns the valid quotas of req in name order, and the
// decision of a request they allow (with their usage unless VerdictOnly).
func admitStates(req *AdmitRequest) ([]QuotaState, Decision) {
	states := make([]QuotaState, 0, len(req.Quotas))
	for _, s := range req.Quotas {
		if s.Quota != nil && s.Quota.Invalid == "" {
			states = append(states, s)
		}
	}
	slices.SortFunc(states, func(a, b QuotaState) int { return strings.Compare(a.Quota.Name, b.Quota.Name) })
	d := Decision{Allowed: true, Code: http.StatusOK}
	if !req.VerdictOnly {
		d.Used = make(map[string]ResourceList, len(states))
		for _, s := range states {
			d.Used[s.Quota.Name] = s.Used
		}
	}
	return states, d
}

// limitedNamesOf returns the names o consumes that an entry of limited for
// its group and resource lists.
func limitedNamesOf(o *object.Object, input Charge, limited []LimitedResource) []string {
	var names []string
	for _, l := range limited {
		if l.APIGroup == o.Group && l.Resource == o.GroupResource().Resource {
			names = append(names, limitedByDefault(input.Usage, l)...)
		}
	}
	return names
}

// matchQuotas returns the indexes in states of the quotas that charge the
// object o of charge input (interesting) and the scopes of every quota that
// match it (restricted, for limitedResources), or the refusal of the first
// quota by name that matches it but cannot take it: a constraint it
// breaks, or a usage the quota does not know yet. Kubernetes names the
// first refusing quota its informer meets, a draw among several (a Go
// map's order); states are in name order, so the ledger names the first
// by name.
func matchQuotas(states []QuotaState, o *object.Object, input Charge) (interesting []int, restricted []ScopeRequirement, refused string) {
	// required holds the names the quota tracks that the object's
	// evaluator produces, in no order: every message built from it sorts.
	var requiredBuf [16]string
	for i, s := range states {
		for _, sc := range s.Quota.Scopes {
			if scopeMatches(sc, input) {
				restricted = append(restricted, sc)
			}
		}
		if !s.Quota.Matches(input) {
			continue
		}
		required := producedNames(requiredBuf[:0], o.Resource, s.Quota.Hard)
		if msg := constraints(o, required); msg != "" {
			return nil, nil, fmt.Sprintf("failed quota: %s: %s", s.Quota.Name, msg)
		}
		if !hasUsage(s.Used, required) {
			return nil, nil, fmt.Sprintf("status unknown for quota: %s, resources: %s", s.Quota.Name, joinSorted(required))
		}
		interesting = append(interesting, i)
	}
	return interesting, restricted, ""
}

// requestDeltas returns what each of the interesting quotas is charged
// (delta[j] for interesting[j], nil when nothing): the object's charge on
// a create, its growth over the old object's on an update of an object
// the quota charged before. nothing says the request charges nothing new
// (then no quota can refuse it); refused, when set, is why the request is
// forbidden; err, why it cannot be decided.
func requestDeltas(req *AdmitRequest, states []QuotaState, interesting []int, input Charge) (delta []ResourceList, nothing bool, refused string, err error) {
	delta = make([]ResourceList, len(interesting))
	for j := range interesting {
		delta[j] = input.Usage
	}
	// growth is what the request charges beyond the old object's charge.
	growth := input.Usage
	switch {
	case req.Operation == Update && req.OldObject == nil:
		return nil, false, "unable to get previous usage since prior version of object was not found", nil
	case req.Operation == Update && req.OldObject.ResourceVersion != "":
		prev, err := Evaluate(req.OldObject, req.Now)
		if err != nil {
			return nil, false, "", err
		}
		growth = SubtractNonNegative(input.Usage, prev.Usage)
		for j, i := range interesting {
			if states[i].Quota.Matches(prev) {
				delta[j] = growth
			}
		}
	case req.Operation != Create && req.Operation != Update:
		growth = nil
	}
	charged := 0
	for j, l := range delta {
		if l = removeZeros(l); len(l) == 0 {
			delta[j] = nil
		} else {
			delta[j] = l
			charged++
		}
	}
	if len(interesting) != 0 {
		return delta, charged == 0, "", nil
	}
	return delta, len(removeZeros(growth)) == 0, "", nil
}

// exceeded returns the refusal of the first of the interesting quotas, by
// name, that the charges delta would take over its hard limits: "" when
// none. Every charged quota is checked before any new usage is built, so
// a denial reports the usage as it was. A claim's status update is never
// refused for exceeding a quota.
func exceeded(req *AdmitRequest, states []QuotaState, interesting []int, delta []ResourceList) string {
	if req.Subresource == "status" {
		return ""
	}
	for j, i := range interesting {
		l, q := delta[j], states[i].Quota
		if l == nil {
			continue
		}
		if names := exceededNames(states[i].Used, l, q.Hard); len(names) > 0 {
			return fmt.Sprintf("exceeded quota: %s, requested: %s, used: %s, limited: %s",
				q.Name, maskNames(l, names), maskNames(states[i].Used, names), maskNames(q.Hard, names))
		}
	}
	return ""
}

// hasUsage reports whether used has a figure for every required name.
func hasUsage(used ResourceList, required []string) bool {
	for _, r := range required {
		if _, ok := used[r]; !ok {
			return false
		}
	}
	return true
}

// producedNames appends to out the names of hard that the evaluator of
// resource produces, in no particular order.
func producedNames(out []string, resource string, hard ResourceList) []string {
	for name := range hard {
		if evaluatorProduces(resource, name) {
			out = append(out, name)
		}
	}
	return out
}

// uncoveredNames returns the limited names that none of the interesting
// quotas tracks among the names the object's evaluator produces.
func uncoveredNames(limited []string, states []QuotaState, interesting []int, resource string) []string {
	var out []string
	for _, n := range limited {
		tracks := func(i int) bool { _, ok := states[i].Quota.Hard[n]; return ok }
		if !evaluatorProduces(resource, n) || !slices.ContainsFunc(interesting, tracks) {
			out = append(out, n)
		}
	}
	return out
}

// addTracked returns used plus the part of delta that hard tracks, without
// building that part.
func addTracked(used, delta, hard ResourceList) ResourceList {
	out := make(ResourceList, len(used)+len(delta))
	for k, v := range used {
		if w, ok := delta[k]; ok {
			if _, tracked := hard[k]; tracked {
				v = v.Add(w)
			}
		}
		out[k] = v
	}
	for k, w := range delta {
		if _, tracked := hard[k]; !tracked {
			continue
		}
		if _, ok := out[k]; !ok {
			out[k] = w
		}
	}
	return out
}

// exceededNames returns the sorted names of delta that hard tracks and
// that delta takes past hard when added to used, as addTracked adds.
func exceededNames(used, delta, hard ResourceList) []string {
	var out []string
	for k, w := range delta {
		limit, ok := hard[k]
		if !ok {
			continue
		}
		sum := w
		if v, ok := used[k]; ok {
			sum = v.Add(w)
		}
		if sum.Cmp(limit) > 0 {
			out = append(out, k)
		}
	}
	sort.Strings(out)
	return out
}

// limitedByDefault returns the consumed resources of usage whose names
// contain one of l's MatchContains.
func limitedByDefault(usage ResourceList, l LimitedResource) []string {
	var out []string
	for _, k := range usage.Names() {
		if usage[k].Sign() == 1 && slices.ContainsFunc(l.MatchContains, func(m string) bool { return strings.Contains(k, m) }) {
			out = append(out, k)
		}
	}
	return out
}

func matchedLimitedScopes(c Charge, limited []LimitedResource) []ScopeRequirement {
	var out []ScopeRequirement
	for _, l := range limited {
		for _, s := range l.MatchScopes {
			if scopeMatches(s, c) {
				out = append(out, s)
			}
		}
	}
	return out
}

// uncoveredScopes returns the limited scopes that no quota's scope matching
// the object names.
func uncoveredScopes(limited, matched []ScopeRequirement) []ScopeRequirement {
	var out []ScopeRequirement
	for _, l := range limited {
		if !slices.ContainsFunc(matched, func(m ScopeRequirement) bool { return m.ScopeName == l.ScopeName }) {
			out = append(out, l)
		}
	}
	return out
}
