package quota

import (
	"fmt"
	"maps"
	"net/http"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"

	"github.com/quotaledger/quota/ledger/object"
)

// The words of a refusal, as kube-apiserver's quota admission puts them.

// joinSorted joins the distinct names, sorted, with commas.
func joinSorted(names []string) string {
	s := slices.Clone(names)
	slices.Sort(s)
	return strings.Join(slices.Compact(s), ",")
}

// forbidden turns d into a 403 with kube-apiserver's message layout:
// `<resource> "<name>" is forbidden: <reason>`.
func forbidden(d Decision, o *object.Object, reason string) Decision {
	d.Allowed = false
	d.Code = http.StatusForbidden
	d.Reason = ReasonForbidden
	d.Message = ForbiddenPrefix(o) + reason
	return d
}

// ForbiddenPrefix is how kube-apiserver starts a 403 about o from an
// admission plugin: `pods "web-1" is forbidden: `. A create offered with
// only a generateName (a manifest, or what a mutating webhook sees)
// names its prefix, as the API server does before it generates the name;
// by validating admission, where quota runs, it has generated one, which
// the ledger cannot know.
func ForbiddenPrefix(o *object.Object) string {
	name := o.Name
	if name == "" {
		name = o.GenerateName
	}
	if name == "" {
		return o.Resource + " is forbidden: "
	}
	return fmt.Sprintf("%s %q is forbidden: ", o.Resource, name)
}

func internalError(d Decision, err error) Decision {
	d.Allowed = false
	d.Code = http.StatusInternalServerError
	d.Reason = "InternalError"
	d.Message = "Internal error occurred: " + err.Error()
	return d
}

// constraints is the pod evaluator's "must specify" rule: when a quota
// tracks cpu or memory requests or limits, every container and init
// container must state them. It returns the reason, or "" when satisfied.
func constraints(o *object.Object, required []string) string {
	pod, ok := o.Value.(*corev1.Pod)
	if o.Resource != "pods" || !ok || podLevelSet(pod) {
		return ""
	}
	// missing holds the containers missing each resource.
	var missing map[string][]string
	for _, cs := range [2][]corev1.Container{pod.Spec.Containers, pod.Spec.InitContainers} {
		for i := range cs {
			for _, r := range required {
				if mustSpecify[r] && !specifies(&cs[i], r) {
					if missing == nil {
						missing = map[string][]string{}
					}
					missing[r] = append(missing[r], cs[i].Name)
				}
			}
		}
	}
	return mustSpecifyMessage(missing)
}

// mustSpecifyMessage words the resources missing from containers, by
// resource name then container name: "" when none is.
func mustSpecifyMessage(missing map[string][]string) string {
	if len(missing) == 0 {
		return ""
	}
	names := slices.Sorted(maps.Keys(missing))
	parts := make([]string, len(names))
	for i, r := range names {
		parts[i] = r + " for: " + joinSorted(missing[r])
	}
	return "must specify " + strings.Join(parts, "; ")
}

// specifies reports whether the container's usage (computeUsageInto of its
// requests and limits) names r, one of mustSpecify: whether it requests
// (cpu, requests.cpu) or limits (limits.cpu) the resource r names. Only
// the names matter, so no quantity is converted.
func specifies(c *corev1.Container, r string) bool {
	for _, p := range computePairs {
		switch r {
		case p.name, p.request:
			_, ok := c.Resources.Requests[corev1.ResourceName(p.name)]
			return ok
		case p.limit:
			_, ok := c.Resources.Limits[corev1.ResourceName(p.name)]
			return ok
		}
	}
	return false
}
