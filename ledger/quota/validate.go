package quota

import (
	"fmt"
	"math"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/quotaledger/quota/ledger/object"
)

// Validate applies to a manifest, after Default, what Kubernetes checks
// between its mutating admission and quota's: the API server's validation
// of what quota reads of a new pod (validatePodResources, an
// InvalidError), then the validating plugins LimitRanger (minimum,
// maximum and limit-to-request ratio for containers, pods and claims,
// every LimitRange of the namespace in env's order) and RuntimeClass (a
// pod's overhead). old is the stored object of an update, nil for a
// create: LimitRanger checks a claim's updates too, unless the claim is
// being deleted, and leaves a pod's alone. A plugin's refusal is a
// RefusedError in its words.
func Validate(o, old *object.Object, env Environment) error {
	if old != nil && old.DeletionTimestamp != nil {
		return nil
	}
	switch v := o.Value.(type) {
	case *corev1.Pod:
		if old != nil {
			return nil
		}
		if err := validatePodResources(o.Name, v); err != nil {
			return err
		}
		if err := eachLimitRange(env.LimitRanges, v, limitPod); err != nil {
			return err
		}
		return validateOverhead(v, env)
	case *corev1.PersistentVolumeClaim:
		return eachLimitRange(env.LimitRanges, v, limitClaim)
	}
	return nil
}

// ValidateResize is LimitRanger on an update of a pod's resize
// subresource (old is the stored pod): the resized pod gets the
// LimitRanges' defaults for what it does not state, and is checked as a
// new pod is. A pod being deleted is left alone.
func ValidateResize(o, old *object.Object, env Environment) error {
	pod, ok := o.Value.(*corev1.Pod)
	if !ok || old != nil && old.DeletionTimestamp != nil {
		return nil
	}
	limitRangeDefaults(pod, env.LimitRanges)
	return eachLimitRange(env.LimitRanges, pod, limitPod)
}

// eachLimitRange checks v against each LimitRange in turn, stopping at the
// first that refuses it.
func eachLimitRange[T any](lrs []*corev1.LimitRange, v T, check func(*corev1.LimitRange, T) error) error {
	for _, lr := range lrs {
		if lr == nil {
			continue
		}
		if err := check(lr, v); err != nil {
			return err
		}
	}
	return nil
}

// validatePodResources is the part of the API server's validation of a
// new pod that bears on quota, in its order: each container's and init
// container's requirements (no negative quantity; a request no more than
// its limit, and exactly the limit for a resource that cannot be
// overcommitted, an extended resource or huge pages, which needs a limit),
// the pod-level requirements by the same rules and against the
// containers' (podLevelConsistency), then activeDeadlineSeconds, which the
// Terminating scopes read (1 to 2^31-1). Its refusal is the API server's
// 422, naming the pod by its kind.
func validatePodResources(name string, pod *corev1.Pod) error {
	var errs field.ErrorList
	for _, cs := range []struct {
		field      string
		containers []corev1.Container
	}{{"containers", pod.Spec.Containers}, {"initContainers", pod.Spec.InitContainers}} {
		for i := range cs.containers {
			errs = append(errs, requirementErrors(&cs.containers[i].Resources, func() *field.Path {
				return field.NewPath("spec", cs.field).Index(i).Child("resources")
			})...)
		}
	}
	if r := pod.Spec.Resources; r != nil {
		path := func() *field.Path { return field.NewPath("spec", "resources") }
		errs = append(errs, requirementErrors(r, path)...)
		errs = append(errs, podLevelConsistency(pod, path())...)
	}
	if d := pod.Spec.ActiveDeadlineSeconds; d != nil && (*d < 1 || *d > math.MaxInt32) {
		errs = append(errs, field.Invalid(field.NewPath("spec", "activeDeadlineSeconds"), *d, validation.InclusiveRangeError(1, math.MaxInt32)))
	}
	if len(errs) == 0 {
		return nil
	}
	return &InvalidError{apierrors.NewInvalid(schema.GroupKind{Kind: "Pod"}, name, errs).Error()}
}

// requirementErrors is the API server's validation of one set of
// requirements: limits, then requests, each by name, and path builds the
// field path only when there is something to say.
func requirementErrors(r *corev1.ResourceRequirements, path func() *field.Path) field.ErrorList {
	if !anyInvalid(r) {
		return nil // the common case, without paths or messages
	}
	var errs field.ErrorList
	p := path()
	for _, k := range sortedNames(r.Limits) {
		lim := r.Limits[k]
		at := p.Child("limits").Key(string(k))
		errs = append(errs, quantityErrors(k, lim, at)...)
		errs = append(errs, hugePagesErrors(k, lim, at)...)
	}
	for _, k := range sortedNames(r.Requests) {
		req := r.Requests[k]
		at := p.Child("requests").Key(string(k))
		errs = append(errs, quantityErrors(k, req, at)...)
		switch detail, required := offLimit(r, k); {
		case required:
			errs = append(errs, field.Required(p.Child("limits"), detail))
		case detail != "":
			errs = append(errs, field.Invalid(p.Child("requests"), req.String(), detail))
		}
		errs = append(errs, hugePagesErrors(k, req, at)...)
	}
	if hugePagesAlone(r) {
		errs = append(errs, field.Forbidden(p, "HugePages require cpu or memory"))
	}
	return errs
}

// quantityErrors is the API server's check of one quantity: not
// negative, and whole for a resource counted in units (an extended one).
func quantityErrors(k corev1.ResourceName, q resource.Quantity, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	if q.Sign() < 0 {
		errs = append(errs, field.Invalid(path, q.String(), apivalidation.IsNegativeErrorMsg))
	}
	if fractional(k, q) {
		errs = append(errs, field.Invalid(path, q, "must be an integer"))
	}
	return errs
}

// fractional reports whether q is a fraction of a resource counted in
// whole units.
func fractional(k corev1.ResourceName, q resource.Quantity) bool {
	return isIntegerResourceName(string(k)) && q.MilliValue()%1000 != 0
}

// hugePagesErrors is the API server's check of a huge pages quantity: a
// whole number of its pages.
func hugePagesErrors(k corev1.ResourceName, q resource.Quantity, path *field.Path) field.ErrorList {
	if !isHugePages(string(k)) || wholePages(k, q) {
		return nil
	}
	return field.ErrorList{field.Invalid(path, q.String(), fmt.Sprintf("%s is not positive integer multiple of %s", q.String(), k))}
}

// wholePages reports whether q is a whole number of the pages of the huge
// pages resource k (hugepages-2Mi: 2Mi pages).
func wholePages(k corev1.ResourceName, q resource.Quantity) bool {
	size, err := resource.ParseQuantity(strings.TrimPrefix(string(k), hugePagesPrefix))
	if err != nil || size.Sign() <= 0 || size.MilliValue()%1000 != 0 {
		return false
	}
	return q.Value()%size.Value() == 0
}

// hugePagesAlone reports whether r states huge pages without cpu or
// memory, which the API server refuses.
func hugePagesAlone(r *corev1.ResourceRequirements) bool {
	huge, compute := false, false
	for _, l := range []corev1.ResourceList{r.Limits, r.Requests} {
		for k := range l {
			huge = huge || isHugePages(string(k))
			compute = compute || k == corev1.ResourceCPU || k == corev1.ResourceMemory
		}
	}
	return huge && !compute
}

// anyInvalid reports whether requirementErrors has something to say of r.
func anyInvalid(r *corev1.ResourceRequirements) bool {
	bad := func(k corev1.ResourceName, q resource.Quantity) bool {
		return q.Sign() < 0 || fractional(k, q) || isHugePages(string(k)) && !wholePages(k, q)
	}
	for k, q := range r.Limits {
		if bad(k, q) {
			return true
		}
	}
	for k, q := range r.Requests {
		if detail, _ := offLimit(r, k); bad(k, q) || detail != "" {
			return true
		}
	}
	return hugePagesAlone(r)
}

// podLevelConsistency is the API server's check of pod-level resources
// against the containers': a pod-level request no less than what the
// containers request together (init containers and sidecars counted as
// the scheduler counts them), a pod-level huge pages limit no less than
// their limits together, and no container's limit over the pod's.
func podLevelConsistency(pod *corev1.Pod, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	r := pod.Spec.Resources
	requests := aggregateContainers(pod, func(c *corev1.Container) corev1.ResourceList { return c.Resources.Requests })
	for _, k := range sortedNames(requests) {
		if podReq, ok := r.Requests[k]; ok {
			if sum := requests[k]; sum.Cmp(podReq) > 0 {
				errs = append(errs, field.Invalid(path.Child("requests").Key(string(k)), podReq.String(),
					"must be greater than or equal to aggregate container requests of "+sum.String()))
			}
		}
	}
	limits := aggregateContainers(pod, func(c *corev1.Container) corev1.ResourceList { return c.Resources.Limits })
	for _, k := range sortedNames(limits) {
		if podLim, ok := r.Limits[k]; ok && isHugePages(string(k)) {
			if sum := limits[k]; sum.Cmp(podLim) > 0 {
				errs = append(errs, field.Invalid(path.Child("limits").Key(string(k)), podLim.String(),
					"must be greater than or equal to aggregate container limits of "+sum.String()))
			}
		}
	}
	for i := range pod.Spec.Containers {
		lims := pod.Spec.Containers[i].Resources.Limits
		for _, k := range sortedNames(lims) {
			if podLim, ok := r.Limits[k]; ok {
				if lim := lims[k]; lim.Cmp(podLim) > 0 {
					errs = append(errs, field.Invalid(path.Child("containers").Index(i).Key(string(k)).Child("limits"), lim.String(),
						"must be less than or equal to pod limits of "+podLim.String()))
				}
			}
		}
	}
	return errs
}

// offLimit is what the API server finds wrong with r's request of k: ""
// when nothing; required says that the limit is missing.
func offLimit(r *corev1.ResourceRequirements, k corev1.ResourceName) (detail string, required bool) {
	req := r.Requests[k]
	lim, ok := r.Limits[k]
	overcommit := isNativeResource(string(k)) && !isHugePages(string(k))
	switch {
	case ok && req.Cmp(lim) != 0 && !overcommit:
		return fmt.Sprintf("must be equal to %s limit of %s", k, lim.String()), false
	case ok && req.Cmp(lim) > 0:
		return fmt.Sprintf("must be less than or equal to %s limit of %s", k, lim.String()), false
	case !ok && !overcommit:
		return "Limit must be set for non overcommitable resources", true
	}
	return "", false
}

// validateOverhead is the RuntimeClass plugin's validation: a pod may
// state an overhead only as its RuntimeClass defines it (Default copied
// it in).
func validateOverhead(pod *corev1.Pod, env Environment) error {
	if name := pod.Spec.RuntimeClassName; name != nil {
		if rc := env.RuntimeClasses[*name]; rc != nil && rc.Overhead != nil {
			return nil // Default refused any other overhead
		}
	}
	if pod.Spec.Overhead != nil {
		return &RefusedError{ErrOverheadWithoutRuntimeClass, "pod rejected: Pod Overhead set without corresponding RuntimeClass defined Overhead"}
	}
	return nil
}

// limitViolations gathers what one LimitRange finds wrong with an object;
// its error is LimitRanger's: the one message, or several in brackets.
type limitViolations []string

func (v *limitViolations) add(msg string) {
	if msg != "" {
		*v = append(*v, msg)
	}
}

func (v limitViolations) err() error {
	var unique []string
	seen := map[string]bool{}
	for _, m := range v {
		if !seen[m] {
			seen[m] = true
			unique = append(unique, m)
		}
	}
	switch len(unique) {
	case 0:
		return nil
	case 1:
		return &RefusedError{ErrLimitRange, unique[0]}
	}
	return &RefusedError{ErrLimitRange, "[" + strings.Join(unique, ", ") + "]"}
}

// limitPod checks a pod against the Container and Pod items of lr: each
// container and init container on its own, and the pod's aggregate
// requests and limits (init containers and sidecars counted as the
// scheduler counts them, pod-level cpu and memory in place of the sum,
// overhead left out).
func limitPod(lr *corev1.LimitRange, pod *corev1.Pod) error {
	var v limitViolations
	for _, item := range lr.Spec.Limits {
		switch item.Type {
		case corev1.LimitTypeContainer:
			for _, cs := range [][]corev1.Container{pod.Spec.Containers, pod.Spec.InitContainers} {
				for i := range cs {
					limitItem(&v, item, cs[i].Resources.Requests, cs[i].Resources.Limits)
				}
			}
		case corev1.LimitTypePod:
			requests := aggregateContainers(pod, func(c *corev1.Container) corev1.ResourceList { return c.Resources.Requests })
			limits := aggregateContainers(pod, func(c *corev1.Container) corev1.ResourceList { return c.Resources.Limits })
			if r := pod.Spec.Resources; r != nil {
				for k, q := range r.Requests {
					if podLevelResources[string(k)] {
						requests[k] = q
					}
				}
				for k, q := range r.Limits {
					if podLevelResources[string(k)] {
						limits[k] = q
					}
				}
			}
			limitItem(&v, item, requests, limits)
		}
	}
	return v.err()
}

// limitItem checks requests and limits against one Container or Pod item:
// min, max, then the ratio, each by resource name.
func limitItem(v *limitViolations, item corev1.LimitRangeItem, requests, limits corev1.ResourceList) {
	kind := string(item.Type)
	for _, k := range sortedNames(item.Min) {
		v.add(minViolation(kind, k, item.Min[k], requests, limits))
	}
	for _, k := range sortedNames(item.Max) {
		v.add(maxViolation(kind, k, item.Max[k], requests, limits))
	}
	for _, k := range sortedNames(item.MaxLimitRequestRatio) {
		v.add(ratioViolation(kind, k, item.MaxLimitRequestRatio[k], requests, limits))
	}
}

// limitClaim checks a claim's requests against the PersistentVolumeClaim
// items of lr; a claim's limits are not its own to state.
func limitClaim(lr *corev1.LimitRange, pvc *corev1.PersistentVolumeClaim) error {
	var v limitViolations
	requests := pvc.Spec.Resources.Requests
	for _, item := range lr.Spec.Limits {
		if item.Type != corev1.LimitTypePersistentVolumeClaim {
			continue
		}
		kind := string(item.Type)
		for _, k := range sortedNames(item.Min) {
			v.add(minViolation(kind, k, item.Min[k], requests, nil))
		}
		for _, k := range sortedNames(item.Max) {
			req, ok := requests[k]
			max := item.Max[k]
			switch r, _, m := comparable(req, resource.Quantity{}, max); {
			case !ok:
				v.add(fmt.Sprintf("maximum %s usage per %s is %s.  No request is specified", k, kind, max.String()))
			case r > m:
				v.add(fmt.Sprintf("maximum %s usage per %s is %s, but request is %s", k, kind, max.String(), req.String()))
			}
		}
	}
	return v.err()
}

// minViolation is LimitRanger's minimum rule: a request is required and
// may not be under min, nor may a limit.
func minViolation(kind string, k corev1.ResourceName, min resource.Quantity, requests, limits corev1.ResourceList) string {
	req, reqOK := requests[k]
	lim, limOK := limits[k]
	r, l, m := comparable(req, lim, min)
	switch {
	case !reqOK:
		return fmt.Sprintf("minimum %s usage per %s is %s.  No request is specified", k, kind, min.String())
	case r < m:
		return fmt.Sprintf("minimum %s usage per %s is %s, but request is %s", k, kind, min.String(), req.String())
	case limOK && l < m:
		return fmt.Sprintf("minimum %s usage per %s is %s, but limit is %s", k, kind, min.String(), lim.String())
	}
	return ""
}

// maxViolation is LimitRanger's maximum rule: a limit is required and may
// not be over max, nor may a request.
func maxViolation(kind string, k corev1.ResourceName, max resource.Quantity, requests, limits corev1.ResourceList) string {
	req, reqOK := requests[k]
	lim, limOK := limits[k]
	r, l, m := comparable(req, lim, max)
	switch {
	case !limOK:
		return fmt.Sprintf("maximum %s usage per %s is %s.  No limit is specified", k, kind, max.String())
	case l > m:
		return fmt.Sprintf("maximum %s usage per %s is %s, but limit is %s", k, kind, max.String(), lim.String())
	case reqOK && r > m:
		return fmt.Sprintf("maximum %s usage per %s is %s, but request is %s", k, kind, max.String(), req.String())
	}
	return ""
}

// ratioViolation is LimitRanger's limit-to-request ratio rule: both are
// required and non-zero, and the limit may be at most ratio times the
// request. The ratio is compared in thousandths where the quantities
// allow it, and printed as Go's %f prints a float64, as LimitRanger does.
func ratioViolation(kind string, k corev1.ResourceName, ratio resource.Quantity, requests, limits corev1.ResourceList) string {
	req, reqOK := requests[k]
	lim, limOK := limits[k]
	r, l, _ := comparable(req, lim, ratio)
	if !reqOK || r == 0 {
		return fmt.Sprintf("%s max limit to request ratio per %s is %s, but no request is specified or request is 0", k, kind, ratio.String())
	}
	if !limOK || l == 0 {
		return fmt.Sprintf("%s max limit to request ratio per %s is %s, but no limit is specified or limit is 0", k, kind, ratio.String())
	}
	observed := float64(l) / float64(r)
	compared, max := observed, float64(ratio.Value())
	if ratio.Value() <= resource.MaxMilliValue {
		compared, max = observed*1000, float64(ratio.MilliValue())
	}
	if compared > max {
		return fmt.Sprintf("%s max limit to request ratio per %s is %s, but provided ratio is %f", k, kind, ratio.String(), observed)
	}
	return ""
}

// comparable returns a request, a limit and an enforced value at one
// precision: thousandths when none of them overflows it, whole units
// (rounded up) otherwise.
func comparable(req, lim, enf resource.Quantity) (r, l, e int64) {
	r, l, e = req.Value(), lim.Value(), enf.Value()
	if r <= resource.MaxMilliValue && l <= resource.MaxMilliValue && e <= resource.MaxMilliValue {
		r, l, e = req.MilliValue(), lim.MilliValue(), enf.MilliValue()
	}
	return r, l, e
}
