package quota

import (
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/quotaledger/quota/ledger/quantity"
)

// podUsageNamesMax is the room podUsage reserves for the usual names: the
// pod counts and the request and limit names of CPU and memory. Eight is
// also the most a map holds before it grows past one group of slots.
const podUsageNamesMax = 8

func podUsage(cv *converter, pod *corev1.Pod, now time.Time) ResourceList {
	if !podCountsForQuota(pod, now) {
		return ResourceList{countPrefix + "pods": quantity.NewInt(1)}
	}
	pc := newPodContainers(cv, pod)
	requests, limits := pc.requests(), pc.limits()
	result := make(ResourceList, podUsageNamesMax)
	result[countPrefix+"pods"] = quantity.NewInt(1)
	// computeUsageInto never names count/pods, so writing into result is the
	// union Add would build.
	computeUsageInto(result, requests, limits)
	return result
}

// computeUsageInto names a pod's (or a container's) requests and limits
// in result as the package doc says.
func computeUsageInto(result, requests, limits ResourceList) {
	result[ResourcePods] = quantity.NewInt(1)
	for _, p := range computePairs {
		if v, ok := requests[p.name]; ok {
			result[p.name] = v
			result[p.request] = v
		}
		if v, ok := limits[p.name]; ok {
			result[p.limit] = v
		}
	}
	for name, v := range requests {
		if isHugePages(name) {
			result[name] = v
			result[requestsPrefix+name] = v
		}
		if isChargedAsExtended(name) {
			result[requestsPrefix+name] = v
		}
	}
}

// computePairs are the resources quota names both bare and as requests.
var computePairs = [...]struct{ name, request, limit string }{
	{ResourceCPU, ResourceRequestsCPU, ResourceLimitsCPU},
	{ResourceMemory, ResourceRequestsMemory, ResourceLimitsMemory},
	{ResourceEphemeralStorage, ResourceRequestsEphemeral, ResourceLimitsEphemeral},
}

// addInto adds src to dst in place, copying resources dst lacks.
func addInto(dst, src ResourceList) {
	for k, v := range src {
		if w, ok := dst[k]; ok {
			dst[k] = w.Add(v)
		} else {
			dst[k] = v
		}
	}
}

// maxInto raises dst to src wherever src is larger or dst lacks it.
func maxInto(dst, src ResourceList) {
	for k, v := range src {
		if w, ok := dst[k]; !ok || v.Cmp(w) > 0 {
			dst[k] = v
		}
	}
}

// namedQuantity is one entry of a converted container resource list.
type namedQuantity struct {
	name  string
	value quantity.Quantity
}

// addPairs is addInto for a converted container list.
func addPairs(dst ResourceList, src []namedQuantity) {
	for i := range src {
		if w, ok := dst[src[i].name]; ok {
			dst[src[i].name] = w.Add(src[i].value)
		} else {
			dst[src[i].name] = src[i].value
		}
	}
}

// podContainer is one container (init or app) with its status.
type podContainer struct {
	c  *corev1.Container
	cs *corev1.ContainerStatus // nil when there is none
	// resizable is true for an app container or a sidecar whose status
	// reports resources: during an in-place resize its effective lists
	// come from spec and status together (effectiveRequests).
	resizable bool
}

// pairs converts a container's resource list: nil when it is empty.
func (cv *converter) pairs(l corev1.ResourceList) []namedQuantity {
	if len(l) == 0 {
		return nil
	}
	out := make([]namedQuantity, 0, len(l))
	for k, v := range l {
		out = append(out, namedQuantity{name: string(k), value: cv.one(v)})
	}
	return out
}

// maxOf is the larger of the lists for each resource, a resource missing
// from one counting as absent there; of equal values the first list's is
// kept, with its format.
func maxOf(lists ...[]namedQuantity) []namedQuantity {
	result := ResourceList{}
	for _, l := range lists {
		for i := range l {
			if w, ok := result[l[i].name]; !ok || l[i].value.Cmp(w) > 0 {
				result[l[i].name] = l[i].value
			}
		}
	}
	out := make([]namedQuantity, 0, len(result))
	for k, v := range result {
		out = append(out, namedQuantity{name: k, value: v})
	}
	return out
}

// effectiveRequests is what a container is charged of requests. During
// an in-place resize (its status reports resources) that is the larger of
// what its spec asks, what the kubelet actuated and what it allocated; of
// the latter two only, when the pod's resize is infeasible.
//
// The spec is converted even when it does not count: a quantity in it that
// the ledger cannot hold still fails the evaluation.
func (pc *podContainers) effectiveRequests(c *podContainer) []namedQuantity {
	spec := pc.cv.pairs(c.c.Resources.Requests)
	if !c.resizable {
		return spec
	}
	actuated, allocated := pc.cv.pairs(c.cs.Resources.Requests), pc.cv.pairs(c.cs.AllocatedResources)
	if pc.infeasible {
		return maxOf(actuated, allocated)
	}
	return maxOf(spec, actuated, allocated)
}

// effectiveLimits is what a container is charged of limits: during an
// in-place resize the larger of its spec's and the actuated, or the
// actuated alone when the pod's resize is infeasible.
func (pc *podContainers) effectiveLimits(c *podContainer) []namedQuantity {
	spec := pc.cv.pairs(c.c.Resources.Limits)
	if !c.resizable {
		return spec
	}
	actuated := pc.cv.pairs(c.cs.Resources.Limits)
	if pc.infeasible {
		return actuated
	}
	return maxOf(spec, actuated)
}

// podContainers holds a pod's containers for the totals of their requests
// and limits.
type podContainers struct {
	cv         *converter
	pod        *corev1.Pod
	infeasible bool
	apps       []podContainer
	inits      []podContainer
	overhead   []namedQuantity
}

func newPodContainers(cv *converter, pod *corev1.Pod) *podContainers {
	pc := &podContainers{
		cv:         cv,
		pod:        pod,
		infeasible: resizeInfeasible(pod),
		apps:       make([]podContainer, len(pod.Spec.Containers)),
		inits:      make([]podContainer, len(pod.Spec.InitContainers)),
		overhead:   cv.pairs(pod.Spec.Overhead),
	}
	for i := range pod.Spec.Containers {
		c := &pod.Spec.Containers[i]
		cs := findContainerStatus(pod, c.Name)
		pc.apps[i] = podContainer{c: c, cs: cs, resizable: cs != nil && cs.Resources != nil}
	}
	for i := range pod.Spec.InitContainers {
		c := &pod.Spec.InitContainers[i]
		cs := findContainerStatus(pod, c.Name)
		pc.inits[i] = podContainer{c: c, cs: cs, resizable: isRestartable(c) && cs != nil && cs.Resources != nil}
	}
	return pc
}

// aggregate totals the containers of a pod as the scheduler and quota do
// (see the package doc); get gives one container's list.
func (pc *podContainers) aggregate(get func(*podContainer) []namedQuantity) ResourceList {
	result := ResourceList{}
	for i := range pc.apps {
		addPairs(result, get(&pc.apps[i]))
	}
	if len(pc.inits) == 0 {
		return result
	}
	sidecars := ResourceList{}
	initPeak := ResourceList{}
	for i := range pc.inits {
		c := &pc.inits[i]
		own := get(c)
		var running ResourceList
		if isRestartable(c.c) {
			addPairs(result, own)
			addPairs(sidecars, own)
			running = sidecars
		} else {
			running = make(ResourceList, len(own)+len(sidecars))
			addPairs(running, own)
			addInto(running, sidecars)
		}
		maxInto(initPeak, running)
	}
	maxInto(result, initPeak)
	return result
}

// findContainerStatus returns the status of the container called name, or
// nil. An init container's status is looked up first: in Kubernetes' own
// lookup it wins over an app container's of the same name.
func findContainerStatus(pod *corev1.Pod, name string) *corev1.ContainerStatus {
	for i := range pod.Status.InitContainerStatuses {
		if pod.Status.InitContainerStatuses[i].Name == name {
			return &pod.Status.InitContainerStatuses[i]
		}
	}
	for i := range pod.Status.ContainerStatuses {
		if pod.Status.ContainerStatuses[i].Name == name {
			return &pod.Status.ContainerStatuses[i]
		}
	}
	return nil
}

func resizeInfeasible(pod *corev1.Pod) bool {
	for _, c := range pod.Status.Conditions {
		if c.Type == corev1.PodResizePending {
			return c.Reason == corev1.PodReasonInfeasible
		}
	}
	return false
}

func isRestartable(c *corev1.Container) bool {
	return c.RestartPolicy != nil && *c.RestartPolicy == corev1.ContainerRestartPolicyAlways
}

var podLevelResources = setOf(ResourceCPU, ResourceMemory)

func isSupportedPodLevel(name string) bool { return podLevelResources[name] || isHugePages(name) }

func anySupportedPodLevel(l corev1.ResourceList) bool {
	for k := range l {
		if isSupportedPodLevel(string(k)) {
			return true
		}
	}
	return false
}

// podLevelSet reports whether pod states a pod-level request or limit of
// a resource pod-level resources support. Such a pod is charged those, and
// its containers need not state cpu and memory under a quota that tracks
// them (Kubernetes' PodLevelResources, on by default since v1.34).
func podLevelSet(pod *corev1.Pod) bool {
	r := pod.Spec.Resources
	return r != nil && (anySupportedPodLevel(r.Requests) || anySupportedPodLevel(r.Limits))
}

// applyPodLevel replaces the container totals by the pod-level values for
// the resources pod-level resources support.
func applyPodLevel(cv *converter, result ResourceList, podLevel corev1.ResourceList) {
	for k, v := range podLevel {
		if isSupportedPodLevel(string(k)) {
			result[string(k)] = cv.one(v)
		}
	}
}

// requests is the pod's effective request: the total of its containers'
// (effectiveRequests during an in-place resize), pod-level requests where
// set, plus the pod overhead.
func (pc *podContainers) requests() ResourceList {
	reqs := pc.aggregate(pc.effectiveRequests)
	pod := pc.pod
	if pod.Spec.Resources != nil && anySupportedPodLevel(pod.Spec.Resources.Requests) {
		applyPodLevel(pc.cv, reqs, pod.Spec.Resources.Requests)
	}
	addPairs(reqs, pc.overhead)
	return reqs
}

// limits is the pod's effective limit: the total of its containers'
// (effectiveLimits during an in-place resize), pod-level limits where
// set, and the overhead added to the limits that are set and non-zero.
func (pc *podContainers) limits() ResourceList {
	limits := pc.aggregate(pc.effectiveLimits)
	if podLevelSet(pc.pod) {
		applyPodLevel(pc.cv, limits, pc.pod.Spec.Resources.Limits)
	}
	for _, o := range pc.overhead {
		if w, ok := limits[o.name]; ok && !w.IsZero() {
			limits[o.name] = w.Add(o.value)
		}
	}
	return limits
}

// terminating reports whether a pod is in the Terminating scope: its
// activeDeadlineSeconds is set, and not negative.
func terminating(pod *corev1.Pod) bool {
	return pod.Spec.ActiveDeadlineSeconds != nil && *pod.Spec.ActiveDeadlineSeconds >= 0
}

func podScopeFacts(pod *corev1.Pod) ScopeFacts {
	return ScopeFacts{
		Pod:                       true,
		Terminating:               terminating(pod),
		BestEffort:                podQOS(pod) == corev1.PodQOSBestEffort,
		PriorityClass:             pod.Spec.PriorityClassName,
		CrossNamespacePodAffinity: usesCrossNamespaceAffinity(pod),
	}
}

// podQOS returns the QoS class the API server recorded, or computes it as
// the API server would for a pod not yet stored.
func podQOS(pod *corev1.Pod) corev1.PodQOSClass {
	if pod.Status.QOSClass != "" {
		return pod.Status.QOSClass
	}
	positive := func(l corev1.ResourceList) bool {
		for k, v := range l {
			if (k == corev1.ResourceCPU || k == corev1.ResourceMemory) && v.Sign() > 0 {
				return true
			}
		}
		return false
	}
	// A pod that states spec.resources, even empty or naming no resource
	// pod-level resources support, takes its class from them alone.
	if r := pod.Spec.Resources; r != nil {
		if positive(r.Requests) || positive(r.Limits) {
			return corev1.PodQOSBurstable
		}
		return corev1.PodQOSBestEffort
	}
	for _, cs := range [][]corev1.Container{pod.Spec.InitContainers, pod.Spec.Containers} {
		for i := range cs {
			if positive(cs[i].Resources.Requests) || positive(cs[i].Resources.Limits) {
				// Guaranteed and Burstable are alike for quota scopes.
				return corev1.PodQOSBurstable
			}
		}
	}
	return corev1.PodQOSBestEffort
}

// crossNamespace reports whether an affinity term names namespaces or a
// namespace selector.
func crossNamespace(t corev1.PodAffinityTerm) bool {
	return len(t.Namespaces) != 0 || t.NamespaceSelector != nil
}

func usesCrossNamespaceAffinity(pod *corev1.Pod) bool {
	a := pod.Spec.Affinity
	if a == nil {
		return false
	}
	weighted := func(w corev1.WeightedPodAffinityTerm) bool { return crossNamespace(w.PodAffinityTerm) }
	// Affinity and anti-affinity have the same fields.
	for _, p := range [...]*corev1.PodAffinity{a.PodAffinity, (*corev1.PodAffinity)(a.PodAntiAffinity)} {
		if p != nil && (slices.ContainsFunc(p.RequiredDuringSchedulingIgnoredDuringExecution, crossNamespace) ||
			slices.ContainsFunc(p.PreferredDuringSchedulingIgnoredDuringExecution, weighted)) {
			return true
		}
	}
	return false
}
