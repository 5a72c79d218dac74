package quota

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync/atomic"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/quotaledger/quota/ledger/object"
)

// ScopeRequirement is one scope a quota is restricted to: an entry of
// spec.scopeSelector.matchExpressions, or a spec.scopes entry read as
// Exists.
type ScopeRequirement = corev1.ScopedResourceSelectorRequirement

// Quota is a validated ResourceQuota.
type Quota struct {
	Namespace string       `json:"namespace"`
	Name      string       `json:"name"`
	Hard      ResourceList `json:"hard"`
	// Scopes are spec.scopes followed by spec.scopeSelector.matchExpressions,
	// in that order; an object must match all of them.
	Scopes []ScopeRequirement `json:"scopes,omitempty"`
	// Invalid holds Kubernetes' validation message when the spec is not
	// valid; an invalid quota charges nothing and admits nothing.
	Invalid string `json:"invalid,omitempty"`
	// tracks caches tracksAny for pods, claims and services, which every
	// decision asks of every quota of its namespace: for evaluator i of
	// trackedEvaluators, bit 2i says the answer is known and bit 2i+1 is
	// the answer. Hard must not change once the quota is in use.
	tracks atomic.Uint32
}

// trackedEvaluators are the evaluators whose tracksAny answer a Quota
// caches.
var trackedEvaluators = [...]string{"pods", "persistentvolumeclaims", "services"}

// FromObject reads a ResourceQuota object. A spec that Kubernetes would
// refuse gives a Quota with Invalid set, Hard empty and no scopes, rather
// than an error: the record of the object is kept.
func FromObject(o *object.Object) (*Quota, error) {
	if o == nil {
		return nil, ErrNoObject
	}
	rq, ok := o.Value.(*corev1.ResourceQuota)
	if !ok {
		return nil, fmt.Errorf("quota from %s %q: %w", o.Kind, o.Name, ErrNotResourceQuota)
	}
	q := &Quota{Namespace: o.Namespace, Name: o.Name}
	if errs := validateSpec(&rq.Spec); len(errs) > 0 {
		q.Invalid = fmt.Sprintf("ResourceQuota %q is invalid: %v", o.Name, errs.ToAggregate())
		q.Hard = ResourceList{}
		return q, nil
	}
	var cv converter
	q.Hard = cv.list(rq.Spec.Hard)
	if cv.err != nil {
		return nil, fmt.Errorf("quota %s/%s: %w", o.Namespace, o.Name, cv.err)
	}
	if q.Hard == nil {
		q.Hard = ResourceList{}
	}
	for _, s := range rq.Spec.Scopes {
		q.Scopes = append(q.Scopes, ScopeRequirement{ScopeName: s, Operator: OperatorExists})
	}
	if sel := rq.Spec.ScopeSelector; sel != nil {
		q.Scopes = append(q.Scopes, sel.MatchExpressions...)
	}
	return q, nil
}

// sortedNames returns a resource list's names in order, so that messages
// listing them are stable where Kubernetes walks a Go map (a quota's
// validation, LimitRanger's refusals).
func sortedNames(l corev1.ResourceList) []corev1.ResourceName {
	return slices.Sorted(maps.Keys(l))
}

// validateSpec is Kubernetes' ValidateResourceQuotaSpec.
func validateSpec(spec *corev1.ResourceQuotaSpec) field.ErrorList {
	var errs field.ErrorList
	hardPath := field.NewPath("spec").Child("hard")
	hard := sortedNames(spec.Hard)
	for _, k := range hard {
		path := hardPath.Key(string(k))
		errs = append(errs, validateResourceName(string(k), path)...)
		errs = append(errs, validateQuantity(string(k), spec.Hard[k], path)...)
	}
	errs = append(errs, validateScopes(spec, hard)...)
	return append(errs, validateScopeSelector(spec, hard)...)
}

func validateResourceName(name string, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	for _, msg := range validation.IsQualifiedName(name) {
		errs = append(errs, field.Invalid(path, name, msg))
	}
	if len(errs) != 0 || strings.Contains(name, "/") {
		return errs
	}
	if !isStandardResourceName(name) {
		errs = append(errs, field.Invalid(path, name, "must be a standard resource type or fully qualified"))
	}
	if !isStandardQuotaResourceName(name) {
		errs = append(errs, field.Invalid(path, name, "must be a standard resource for quota"))
	}
	return errs
}

func validateQuantity(name string, v resource.Quantity, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	if v.Sign() < 0 {
		errs = append(errs, field.Invalid(path, v.String(), "must be greater than or equal to 0"))
	}
	if isIntegerResourceName(name) && v.MilliValue()%1000 != 0 {
		errs = append(errs, field.Invalid(path, v, "must be an integer"))
	}
	return errs
}

var conflictingScopes = [][2]corev1.ResourceQuotaScope{
	{ScopeBestEffort, ScopeNotBestEffort},
	{ScopeTerminating, ScopeNotTerminating},
}

func validateScopes(spec *corev1.ResourceQuotaSpec, hard []corev1.ResourceName) field.ErrorList {
	var errs field.ErrorList
	path := field.NewPath("spec").Child("scopes")
	for _, scope := range spec.Scopes {
		if !standardScopes[string(scope)] {
			errs = append(errs, field.Invalid(path, spec.Scopes, "unsupported scope"))
		}
		errs = append(errs, scopeResourceErrors(string(scope), hard, path, spec.Scopes)...)
	}
	return append(errs, scopeConflicts(spec.Scopes, path, spec.Scopes)...)
}

// scopeResourceErrors is an error at path, showing value, for each
// standard resource of hard that a quota with scope cannot track.
func scopeResourceErrors(scope string, hard []corev1.ResourceName, path *field.Path, value any) field.ErrorList {
	var errs field.ErrorList
	for _, k := range hard {
		if isStandardQuotaResourceName(string(k)) && !scopeValidForResource(scope, string(k)) {
			errs = append(errs, field.Invalid(path, value, "unsupported scope applied to resource"))
		}
	}
	return errs
}

// scopeConflicts is an error at path, showing value, for each pair of
// conflicting scopes that scopes holds both of.
func scopeConflicts(scopes []corev1.ResourceQuotaScope, path *field.Path, value any) field.ErrorList {
	var errs field.ErrorList
	for _, pair := range conflictingScopes {
		if slices.Contains(scopes, pair[0]) && slices.Contains(scopes, pair[1]) {
			errs = append(errs, field.Invalid(path, value, "conflicting scopes"))
		}
	}
	return errs
}

func validateScopeSelector(spec *corev1.ResourceQuotaSpec, hard []corev1.ResourceName) field.ErrorList {
	if spec.ScopeSelector == nil {
		return nil
	}
	var errs field.ErrorList
	path := field.NewPath("spec").Child("scopeSelector").Child("matchExpressions")
	var scopes []corev1.ResourceQuotaScope
	for _, req := range spec.ScopeSelector.MatchExpressions {
		scope := string(req.ScopeName)
		if !standardScopes[scope] {
			errs = append(errs, field.Invalid(path.Child("scopeName"), req.ScopeName, "unsupported scope"))
		}
		errs = append(errs, scopeResourceErrors(scope, hard, path, spec.ScopeSelector)...)
		switch scope {
		case ScopeBestEffort, ScopeNotBestEffort, ScopeTerminating, ScopeNotTerminating, ScopeCrossNamespacePodAffinity:
			if req.Operator != corev1.ScopeSelectorOpExists {
				errs = append(errs, field.Invalid(path.Child("operator"), req.Operator,
					"must be 'Exists' when scope is any of ResourceQuotaScopeTerminating, ResourceQuotaScopeNotTerminating, ResourceQuotaScopeBestEffort, ResourceQuotaScopeNotBestEffort or ResourceQuotaScopeCrossNamespacePodAffinity"))
			}
		}
		switch string(req.Operator) {
		case OperatorIn, OperatorNotIn:
			if len(req.Values) == 0 {
				errs = append(errs, field.Required(path.Child("values"),
					"must be at least one value when `operator` is 'In' or 'NotIn' for scope selector"))
			}
		case OperatorExists, OperatorDoesNotExist:
			if len(req.Values) != 0 {
				errs = append(errs, field.Invalid(path.Child("values"), req.Values,
					"must be no value when `operator` is 'Exist' or 'DoesNotExist' for scope selector"))
			}
		default:
			errs = append(errs, field.Invalid(path.Child("operator"), req.Operator, "not a valid selector operator"))
		}
		scopes = append(scopes, req.ScopeName)
	}
	return append(errs, scopeConflicts(scopes, path, spec.Scopes)...)
}

// tracksAny reports whether q tracks at least one resource that the
// evaluator of resource produces.
func (q *Quota) tracksAny(resource string) bool {
	for i, r := range trackedEvaluators {
		if r != resource {
			continue
		}
		known, yes := uint32(1)<<(2*i), uint32(1)<<(2*i+1)
		if bits := q.tracks.Load(); bits&known != 0 {
			return bits&yes != 0
		}
		v := known
		if q.Tracks(resource) {
			v |= yes
		}
		q.tracks.Or(v)
		return v&yes != 0
	}
	return q.Tracks(resource)
}

// Tracks reports whether q tracks at least one resource that the
// evaluator of resource (a group-qualified plural) produces, reading Hard:
// whether Kubernetes' quota controller recounts q when such an object
// goes.
func (q *Quota) Tracks(resource string) bool {
	for name := range q.Hard {
		if evaluatorProduces(resource, name) {
			return true
		}
	}
	return false
}

// Matches reports whether an object with charge c is charged to q: q is
// valid, tracks a resource the object's evaluator produces, and every
// scope of q matches the object.
func (q *Quota) Matches(c Charge) bool {
	if q == nil || q.Invalid != "" || !q.tracksAny(c.Resource) {
		return false
	}
	for _, s := range q.Scopes {
		if !scopeMatches(s, c) {
			return false
		}
	}
	return true
}

// scopeMatches decides one scope for one object. Pods answer the pod
// scopes, claims the VolumeAttributesClass scope; every other pairing fails.
func scopeMatches(s ScopeRequirement, c Charge) bool {
	if c.Scope.Pod {
		switch s.ScopeName {
		case ScopeTerminating:
			return c.Scope.Terminating
		case ScopeNotTerminating:
			return !c.Scope.Terminating
		case ScopeBestEffort:
			return c.Scope.BestEffort
		case ScopeNotBestEffort:
			return !c.Scope.BestEffort
		case ScopeCrossNamespacePodAffinity:
			return c.Scope.CrossNamespacePodAffinity
		case ScopePriorityClass:
			return labelMatches(s, c.Scope.PriorityClass)
		}
		return false
	}
	if c.Resource == "persistentvolumeclaims" && s.ScopeName == ScopeVolumeAttributesClass {
		if s.Operator == OperatorExists {
			return len(c.Scope.VolumeAttributesClasses) != 0
		}
		if len(c.Scope.VolumeAttributesClasses) == 0 {
			return labelMatches(s, "")
		}
		for _, name := range c.Scope.VolumeAttributesClasses {
			if labelMatches(s, name) {
				return true
			}
		}
	}
	return false
}

// labelMatches evaluates s as a label selector requirement on a label set
// holding the scope name with value, or no such label when value is "".
func labelMatches(s ScopeRequirement, value string) bool {
	present := value != ""
	in := present && slices.Contains(s.Values, value)
	switch s.Operator {
	case OperatorIn:
		return in
	case OperatorNotIn:
		return !in
	case OperatorExists:
		return present
	case OperatorDoesNotExist:
		return !present
	}
	return false
}

// Mask returns the part of usage q tracks (the resources in q.Hard).
func (q *Quota) Mask(usage ResourceList) ResourceList {
	// The result is a map, so the names need no order: walk the smaller
	// list and look each name up in the other.
	if len(usage) < len(q.Hard) {
		out := make(ResourceList, len(usage))
		for name, v := range usage {
			if _, ok := q.Hard[name]; ok {
				out[name] = v
			}
		}
		return out
	}
	out := make(ResourceList, len(q.Hard))
	for name := range q.Hard {
		if v, ok := usage[name]; ok {
			out[name] = v
		}
	}
	return out
}
