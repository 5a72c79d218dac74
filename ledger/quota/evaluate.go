package quota

import (
	"fmt"
	"sort"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/quotaledger/quota/ledger/object"
	"github.com/quotaledger/quota/ledger/quantity"
)

// Charge is what one object contributes to the quotas of its namespace,
// independent of any quota: its full usage and the facts scopes match on.
// It is stored with the object in the projection, so it round-trips
// through JSON exactly (formats included).
type Charge struct {
	// Resource is the object's group-qualified plural ("pods",
	// "jobs.batch"); it decides which quota resources the object can match.
	Resource string       `json:"resource"`
	Usage    ResourceList `json:"usage"`
	Scope    ScopeFacts   `json:"scope"`
}

// ScopeFacts are the attributes of an object that quota scopes read. Only
// pods match the pod scopes; only claims match VolumeAttributesClass.
type ScopeFacts struct {
	// Pod is true for pods; quotas with pod scopes never match anything else.
	Pod bool `json:"pod,omitempty"`
	// Terminating is true when spec.activeDeadlineSeconds is set and >= 0.
	Terminating bool `json:"terminating,omitempty"`
	// BestEffort is true for the BestEffort QoS class.
	BestEffort bool `json:"bestEffort,omitempty"`
	// PriorityClass is spec.priorityClassName, empty when unset.
	PriorityClass string `json:"priorityClass,omitempty"`
	// CrossNamespacePodAffinity is true when an affinity or anti-affinity
	// term names namespaces or a namespace selector.
	CrossNamespacePodAffinity bool `json:"crossNamespacePodAffinity,omitempty"`
	// VolumeAttributesClasses are the classes a claim refers to (spec,
	// current and target), sorted; claims only.
	VolumeAttributesClasses []string `json:"volumeAttributesClasses,omitempty"`
}

// Evaluate computes an object's charge as stored (after API defaulting),
// at the time now (for pods stuck terminating past their grace period).
func Evaluate(o *object.Object, now time.Time) (Charge, error) {
	if o == nil {
		return Charge{}, ErrNoObject
	}
	c := Charge{Resource: o.Resource}
	var cv converter
	switch o.Resource {
	case "pods":
		pod, ok := o.Value.(*corev1.Pod)
		if !ok {
			return Charge{}, fmt.Errorf("evaluate %s: %w", o.Key(), ErrNoValue)
		}
		c.Usage = podUsage(&cv, pod, now)
		c.Scope = podScopeFacts(pod)
	case "persistentvolumeclaims":
		pvc, ok := o.Value.(*corev1.PersistentVolumeClaim)
		if !ok {
			return Charge{}, fmt.Errorf("evaluate %s: %w", o.Key(), ErrNoValue)
		}
		c.Usage = pvcUsage(&cv, pvc)
		c.Scope = ScopeFacts{VolumeAttributesClasses: volumeAttributesClasses(pvc)}
	case "services":
		svc, ok := o.Value.(*corev1.Service)
		if !ok {
			return Charge{}, fmt.Errorf("evaluate %s: %w", o.Key(), ErrNoValue)
		}
		c.Usage = serviceUsage(svc)
	default:
		c.Usage = ResourceList{countPrefix + o.Resource: quantity.NewInt(1)}
		if legacy, ok := legacyCountNames[o.Resource]; ok {
			c.Usage[legacy] = quantity.NewInt(1)
		}
	}
	if cv.err != nil {
		return Charge{}, fmt.Errorf("evaluate %s: %w", o.Key(), cv.err)
	}
	return c, nil
}

// converter turns Kubernetes quantities into ledger quantities, keeping
// the first failure (a value beyond the ledger's range) for the caller.
type converter struct{ err error }

func (cv *converter) one(v resource.Quantity) quantity.Quantity {
	q, err := quantity.FromKube(v)
	if err != nil && cv.err == nil {
		cv.err = err
	}
	return q
}

func (cv *converter) list(l corev1.ResourceList) ResourceList {
	if l == nil {
		return nil
	}
	out := make(ResourceList, len(l))
	for k, v := range l {
		out[string(k)] = cv.one(v)
	}
	return out
}

// podCountsForQuota reports whether a pod is charged for compute and
// "pods": not in a terminal phase, and not stuck terminating past its grace
// period (a lost node must not block a team from scaling up).
func podCountsForQuota(pod *corev1.Pod, now time.Time) bool {
	if pod.Status.Phase == corev1.PodFailed || pod.Status.Phase == corev1.PodSucceeded {
		return false
	}
	if pod.DeletionTimestamp != nil && pod.DeletionGracePeriodSeconds != nil {
		grace := time.Duration(*pod.DeletionGracePeriodSeconds) * time.Second
		if now.After(pod.DeletionTimestamp.Add(grace)) {
			return false
		}
	}
	return true
}

func podUsage(cv *converter, pod *corev1.Pod, now time.Time) ResourceList {
	result := ResourceList{countPrefix + "pods": quantity.NewInt(1)}
	if !podCountsForQuota(pod, now) {
		return result
	}
	return Add(result, computeUsage(podRequests(cv, pod), podLimits(cv, pod)))
}

// computeUsage names a pod's (or a container's) requests and limits as
// quota does: requests under both the bare and requests. names, limits
// under limits., extended resources as requests.<name> only.
func computeUsage(requests, limits ResourceList) ResourceList {
	result := ResourceList{ResourcePods: quantity.NewInt(1)}
	pairs := []struct{ name, request, limit string }{
		{ResourceCPU, ResourceRequestsCPU, ResourceLimitsCPU},
		{ResourceMemory, ResourceRequestsMemory, ResourceLimitsMemory},
		{ResourceEphemeralStorage, ResourceRequestsEphemeral, ResourceLimitsEphemeral},
	}
	for _, p := range pairs {
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
		if isExtendedResourceName(name) {
			result[requestsPrefix+name] = v
		}
	}
	return result
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

func maxOf(a ResourceList, others ...ResourceList) ResourceList {
	out := clone(a)
	for _, o := range others {
		maxInto(out, o)
	}
	return out
}

// containerResourceFunc picks the resource list of one container, given its
// status (nil when there is none) and whether a resize is infeasible.
type containerResourceFunc func(c *corev1.Container, cs *corev1.ContainerStatus, infeasible bool) corev1.ResourceList

func specRequests(c *corev1.Container, _ *corev1.ContainerStatus, _ bool) corev1.ResourceList {
	return c.Resources.Requests
}

func allocatedRequests(c *corev1.Container, cs *corev1.ContainerStatus, infeasible bool) corev1.ResourceList {
	if cs != nil && cs.AllocatedResources != nil {
		return cs.AllocatedResources
	}
	if infeasible {
		return nil
	}
	return c.Resources.Requests
}

func actuatedRequests(c *corev1.Container, cs *corev1.ContainerStatus, infeasible bool) corev1.ResourceList {
	if cs != nil && cs.Resources != nil && cs.Resources.Requests != nil {
		return cs.Resources.Requests
	}
	if cs != nil && cs.AllocatedResources != nil {
		return cs.AllocatedResources
	}
	if infeasible {
		return nil
	}
	return c.Resources.Requests
}

func specLimits(c *corev1.Container, _ *corev1.ContainerStatus, _ bool) corev1.ResourceList {
	return c.Resources.Limits
}

func actuatedLimits(c *corev1.Container, cs *corev1.ContainerStatus, infeasible bool) corev1.ResourceList {
	if cs != nil && cs.Resources != nil && cs.Resources.Limits != nil {
		return cs.Resources.Limits
	}
	if infeasible {
		return nil
	}
	return c.Resources.Limits
}

func findContainerStatus(pod *corev1.Pod, name string) *corev1.ContainerStatus {
	for i := range pod.Status.ContainerStatuses {
		if pod.Status.ContainerStatuses[i].Name == name {
			return &pod.Status.ContainerStatuses[i]
		}
	}
	for i := range pod.Status.InitContainerStatuses {
		if pod.Status.InitContainerStatuses[i].Name == name {
			return &pod.Status.InitContainerStatuses[i]
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

// aggregateContainers totals the containers of a pod as the scheduler and
// quota do: the sum of the app containers and sidecars, raised to what each
// init container needs while it runs (itself plus the sidecars started
// before it).
func aggregateContainers(cv *converter, pod *corev1.Pod, get containerResourceFunc, infeasible bool) ResourceList {
	result := ResourceList{}
	for i := range pod.Spec.Containers {
		c := &pod.Spec.Containers[i]
		addInto(result, cv.list(get(c, findContainerStatus(pod, c.Name), infeasible)))
	}
	sidecars := ResourceList{}
	initPeak := ResourceList{}
	for i := range pod.Spec.InitContainers {
		c := &pod.Spec.InitContainers[i]
		own := cv.list(get(c, findContainerStatus(pod, c.Name), infeasible))
		var running ResourceList
		if isRestartable(c) {
			addInto(result, own)
			addInto(sidecars, own)
			running = sidecars
		} else {
			running = ResourceList{}
			addInto(running, own)
			addInto(running, sidecars)
		}
		maxInto(initPeak, running)
	}
	maxInto(result, initPeak)
	return result
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

// applyPodLevel replaces the container totals by the pod-level values for
// the resources pod-level resources support.
func applyPodLevel(cv *converter, result ResourceList, podLevel corev1.ResourceList) {
	for k, v := range podLevel {
		if isSupportedPodLevel(string(k)) {
			result[string(k)] = cv.one(v)
		}
	}
}

// podRequests is the pod's effective request: the larger of what the spec
// asks and what the kubelet allocated or actuated during an in-place
// resize, pod-level requests where set, plus the pod overhead.
func podRequests(cv *converter, pod *corev1.Pod) ResourceList {
	infeasible := resizeInfeasible(pod)
	spec := aggregateContainers(cv, pod, specRequests, infeasible)
	allocated := aggregateContainers(cv, pod, allocatedRequests, infeasible)
	actuated := aggregateContainers(cv, pod, actuatedRequests, infeasible)
	var reqs ResourceList
	if infeasible {
		reqs = maxOf(actuated, allocated)
	} else {
		reqs = maxOf(spec, actuated, allocated)
	}
	if pod.Spec.Resources != nil && anySupportedPodLevel(pod.Spec.Resources.Requests) {
		applyPodLevel(cv, reqs, pod.Spec.Resources.Requests)
	}
	addInto(reqs, cv.list(pod.Spec.Overhead))
	return reqs
}

// podLimits is the pod's effective limit; overhead is added only to limits
// that are set and non-zero.
func podLimits(cv *converter, pod *corev1.Pod) ResourceList {
	infeasible := resizeInfeasible(pod)
	spec := aggregateContainers(cv, pod, specLimits, infeasible)
	actuated := aggregateContainers(cv, pod, actuatedLimits, infeasible)
	var limits ResourceList
	if infeasible {
		limits = actuated
	} else {
		limits = maxOf(spec, actuated)
	}
	if r := pod.Spec.Resources; r != nil && (anySupportedPodLevel(r.Requests) || anySupportedPodLevel(r.Limits)) {
		applyPodLevel(cv, limits, r.Limits)
	}
	for k, v := range pod.Spec.Overhead {
		if w, ok := limits[string(k)]; ok && !w.IsZero() {
			limits[string(k)] = w.Add(cv.one(v))
		}
	}
	return limits
}

func podScopeFacts(pod *corev1.Pod) ScopeFacts {
	return ScopeFacts{
		Pod:                       true,
		Terminating:               pod.Spec.ActiveDeadlineSeconds != nil && *pod.Spec.ActiveDeadlineSeconds >= 0,
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
	if r := pod.Spec.Resources; r != nil && (anySupportedPodLevel(r.Requests) || anySupportedPodLevel(r.Limits)) {
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

func crossNamespaceTerms(terms []corev1.PodAffinityTerm) bool {
	for i := range terms {
		if len(terms[i].Namespaces) != 0 || terms[i].NamespaceSelector != nil {
			return true
		}
	}
	return false
}

func crossNamespaceWeighted(terms []corev1.WeightedPodAffinityTerm) bool {
	for i := range terms {
		t := &terms[i].PodAffinityTerm
		if len(t.Namespaces) != 0 || t.NamespaceSelector != nil {
			return true
		}
	}
	return false
}

func usesCrossNamespaceAffinity(pod *corev1.Pod) bool {
	a := pod.Spec.Affinity
	if a == nil {
		return false
	}
	if p := a.PodAffinity; p != nil && (crossNamespaceTerms(p.RequiredDuringSchedulingIgnoredDuringExecution) ||
		crossNamespaceWeighted(p.PreferredDuringSchedulingIgnoredDuringExecution)) {
		return true
	}
	if p := a.PodAntiAffinity; p != nil && (crossNamespaceTerms(p.RequiredDuringSchedulingIgnoredDuringExecution) ||
		crossNamespaceWeighted(p.PreferredDuringSchedulingIgnoredDuringExecution)) {
		return true
	}
	return false
}

// storageClassOf returns a claim's class: the beta annotation wins over
// spec.storageClassName, as in Kubernetes' storage helpers.
func storageClassOf(pvc *corev1.PersistentVolumeClaim) string {
	if class, ok := pvc.Annotations[object.BetaStorageClassAnnotation]; ok {
		return class
	}
	if pvc.Spec.StorageClassName != nil {
		return *pvc.Spec.StorageClassName
	}
	return ""
}

// roundUpBytes rounds a storage quantity up to whole bytes, as quota
// validation requires integer usage (kubernetes issue 94313).
func roundUpBytes(q resource.Quantity) resource.Quantity {
	r := q.DeepCopy()
	if !r.RoundUp(0) {
		return r
	}
	return q
}

func pvcUsage(cv *converter, pvc *corev1.PersistentVolumeClaim) ResourceList {
	result := ResourceList{
		ResourcePersistentVolumeClaims:         quantity.NewInt(1),
		countPrefix + "persistentvolumeclaims": quantity.NewInt(1),
	}
	class := storageClassOf(pvc)
	if class != "" {
		result[class+storageClassSuffix+ResourcePersistentVolumeClaims] = quantity.NewInt(1)
	}
	var storage *resource.Quantity
	if req, ok := pvc.Spec.Resources.Requests[corev1.ResourceStorage]; ok {
		r := roundUpBytes(req)
		storage = &r
	}
	if alloc, ok := pvc.Status.AllocatedResources[corev1.ResourceStorage]; ok && storage != nil && alloc.Cmp(*storage) > 0 {
		r := roundUpBytes(alloc)
		storage = &r
	}
	if storage != nil {
		q := cv.one(*storage)
		result[ResourceRequestsStorage] = q
		if class != "" {
			result[class+storageClassSuffix+ResourceRequestsStorage] = q
		}
	}
	return result
}

func volumeAttributesClasses(pvc *corev1.PersistentVolumeClaim) []string {
	set := map[string]bool{}
	if n := pvc.Spec.VolumeAttributesClassName; n != nil && *n != "" {
		set[*n] = true
	}
	if n := pvc.Status.CurrentVolumeAttributesClassName; n != nil && *n != "" {
		set[*n] = true
	}
	if m := pvc.Status.ModifyVolumeStatus; m != nil && m.TargetVolumeAttributesClassName != "" {
		set[m.TargetVolumeAttributesClassName] = true
	}
	if len(set) == 0 {
		return nil
	}
	out := make([]string, 0, len(set))
	for n := range set {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

// serviceUsage counts a service, its load balancer and the node ports it
// will allocate: one per port for NodePort, and for LoadBalancer too unless
// node port allocation is switched off, when only explicit node ports count.
func serviceUsage(svc *corev1.Service) ResourceList {
	result := ResourceList{
		countPrefix + "services":      quantity.NewInt(1),
		ResourceServices:              quantity.NewInt(1),
		ResourceServicesLoadBalancers: quantity.NewInt(0),
		ResourceServicesNodePorts:     quantity.NewInt(0),
	}
	ports := int64(len(svc.Spec.Ports))
	switch svc.Spec.Type {
	case corev1.ServiceTypeNodePort:
		result[ResourceServicesNodePorts] = quantity.NewInt(ports)
	case corev1.ServiceTypeLoadBalancer:
		if a := svc.Spec.AllocateLoadBalancerNodePorts; a != nil && !*a {
			explicit := int64(0)
			for _, p := range svc.Spec.Ports {
				if p.NodePort != 0 {
					explicit++
				}
			}
			result[ResourceServicesNodePorts] = quantity.NewInt(explicit)
		} else {
			result[ResourceServicesNodePorts] = quantity.NewInt(ports)
		}
		result[ResourceServicesLoadBalancers] = quantity.NewInt(1)
	}
	return result
}

// containerNames joins sorted, distinct names with commas.
func containerNames(set map[string]bool) string {
	names := make([]string, 0, len(set))
	for n := range set {
		names = append(names, n)
	}
	sort.Strings(names)
	return strings.Join(names, ",")
}
