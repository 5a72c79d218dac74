package quota

import (
	"fmt"
	"maps"
	"slices"

	corev1 "k8s.io/api/core/v1"
	nodev1 "k8s.io/api/node/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	storagev1 "k8s.io/api/storage/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"

	"github.com/quotaledger/quota/ledger/object"
)

// Environment is what the API server consults while admitting a raw
// manifest: the namespace's LimitRanges and ServiceAccounts, and the
// cluster's RuntimeClasses, PriorityClasses and StorageClasses.
type Environment struct {
	// LimitRanges are the LimitRanges of the object's namespace; nil for
	// none.
	LimitRanges []*corev1.LimitRange
	// ServiceAccounts are the names of the ServiceAccounts of the object's
	// namespace. Nil when none is known: a pod's service account is then
	// not looked up, as the ledger cannot tell a namespace without them
	// from one whose ServiceAccounts were never ingested.
	ServiceAccounts []string
	// RuntimeClasses holds RuntimeClasses by name; nil for none.
	RuntimeClasses map[string]*nodev1.RuntimeClass
	// PriorityClasses are the cluster's PriorityClasses; nil for none.
	PriorityClasses []*schedulingv1.PriorityClass
	// StorageClasses are the cluster's StorageClasses; nil for none.
	StorageClasses []*storagev1.StorageClass
}

// Default applies to a raw manifest what the API server applies before
// quota admission sees it: pod defaulting (requests default to limits),
// the LimitRanger plugin's container defaults, the ServiceAccount plugin's
// look-up of the pod's service account, the Priority plugin's default
// priority class, the RuntimeClass plugin's pod overhead and node
// selector, and the DefaultStorageClass plugin's class for a claim that
// names none, in the API server's order of those plugins (a pod refused
// by several is refused by the first). Other objects are left unchanged.
// It must not be applied to objects that came from the API server.
func Default(o *object.Object, env Environment) error {
	if pvc, ok := o.Value.(*corev1.PersistentVolumeClaim); ok {
		roundLists(pvc.Spec.Resources.Limits, pvc.Spec.Resources.Requests, pvc.Status.Capacity, pvc.Status.AllocatedResources)
		defaultStorageClass(pvc, env.StorageClasses)
		return nil
	}
	pod, ok := o.Value.(*corev1.Pod)
	if !ok {
		return nil
	}
	defaultPodRequests(pod)
	roundPodResources(pod)
	limitRangeDefaults(pod, env.LimitRanges)
	if err := serviceAccount(pod, o.Namespace, env.ServiceAccounts); err != nil {
		return err
	}
	if err := priorityClass(pod, env.PriorityClasses); err != nil {
		return err
	}
	return runtimeClass(pod, env)
}

// milliScale is the scale to which the API server's defaulting rounds
// every quantity of a resource list (SetDefaults_ResourceList in
// Kubernetes' core/v1 defaults): up, away from zero, to a multiple of 1m.
// A container requesting 100u of cpu is charged, and stored with, 1m.
const milliScale = -3

// roundLists rounds each quantity of the lists up to milliScale.
func roundLists(lists ...corev1.ResourceList) {
	for _, l := range lists {
		for k, v := range l {
			v.RoundUp(milliScale)
			l[k] = v
		}
	}
}

// roundPodResources applies the defaulting's rounding to every resource
// list of a pod: its containers' of each kind, its overhead, its
// pod-level resources, its generic ephemeral volumes' claim templates and
// the resources its status reports.
func roundPodResources(pod *corev1.Pod) {
	for _, cs := range [][]corev1.Container{pod.Spec.InitContainers, pod.Spec.Containers} {
		for i := range cs {
			roundLists(cs[i].Resources.Limits, cs[i].Resources.Requests)
		}
	}
	for i := range pod.Spec.EphemeralContainers {
		r := &pod.Spec.EphemeralContainers[i].Resources
		roundLists(r.Limits, r.Requests)
	}
	roundLists(pod.Spec.Overhead, pod.Status.AllocatedResources)
	for _, r := range []*corev1.ResourceRequirements{pod.Spec.Resources, pod.Status.Resources} {
		if r != nil {
			roundLists(r.Limits, r.Requests)
		}
	}
	for i := range pod.Spec.Volumes {
		if e := pod.Spec.Volumes[i].Ephemeral; e != nil && e.VolumeClaimTemplate != nil {
			r := &e.VolumeClaimTemplate.Spec.Resources
			roundLists(r.Limits, r.Requests)
		}
	}
	for _, ss := range [][]corev1.ContainerStatus{pod.Status.InitContainerStatuses, pod.Status.ContainerStatuses, pod.Status.EphemeralContainerStatuses} {
		for i := range ss {
			roundLists(ss[i].AllocatedResources)
			if r := ss[i].Resources; r != nil {
				roundLists(r.Limits, r.Requests)
			}
		}
	}
}

// defaultPodRequests is the API defaulting of container requests: a
// container with a limit and no request for a resource requests the limit.
// Pod-level huge pages limits default to the containers' aggregate, and
// pod-level requests from the containers' requests and pod-level limits.
func defaultPodRequests(pod *corev1.Pod) {
	for _, cs := range [][]corev1.Container{pod.Spec.InitContainers, pod.Spec.Containers} {
		for i := range cs {
			r := &cs[i].Resources
			if r.Limits == nil {
				continue
			}
			if r.Requests == nil {
				r.Requests = corev1.ResourceList{}
			}
			fillMissing(r.Requests, r.Limits)
		}
	}
	r := pod.Spec.Resources
	if r == nil || len(r.Limits) == 0 && len(r.Requests) == 0 {
		return
	}
	// A pod that states pod-level resources is limited, for each size of
	// huge pages its containers limit and it neither requests nor limits,
	// to their aggregate.
	limits := r.Limits
	if limits == nil {
		limits = corev1.ResourceList{}
	}
	for k, v := range aggregateContainers(pod, func(c *corev1.Container) corev1.ResourceList { return c.Resources.Limits }) {
		_, requested := r.Requests[k]
		if _, limited := limits[k]; !requested && !limited && isHugePages(string(k)) {
			limits[k] = v
		}
	}
	if len(limits) > 0 {
		r.Limits = limits
	}
	if len(r.Limits) == 0 {
		return
	}
	requests := r.Requests
	if requests == nil {
		requests = corev1.ResourceList{}
	}
	// Containers that state requests give the pod their aggregate; for
	// resources no container requests, the pod requests its limit.
	for k, v := range aggregateContainers(pod, func(c *corev1.Container) corev1.ResourceList { return c.Resources.Requests }) {
		if _, ok := requests[k]; !ok && isSupportedPodLevel(string(k)) && !isHugePages(string(k)) {
			requests[k] = v
		}
	}
	for k, v := range r.Limits {
		if _, ok := requests[k]; !ok && isSupportedPodLevel(string(k)) {
			requests[k] = v.DeepCopy()
		}
	}
	if len(requests) > 0 {
		r.Requests = requests
	}
}

// aggregateContainers is what a pod's containers need together of the
// list of each that list returns (their requests or their limits), in
// Kubernetes' own quantities: the sum over containers and sidecars, raised
// to the peak of each init container beside the sidecars started before
// it.
func aggregateContainers(pod *corev1.Pod, list func(*corev1.Container) corev1.ResourceList) corev1.ResourceList {
	add := func(dst, src corev1.ResourceList) {
		for k, v := range src {
			if w, ok := dst[k]; ok {
				w.Add(v)
				dst[k] = w
			} else {
				dst[k] = v.DeepCopy()
			}
		}
	}
	raise := func(dst, src corev1.ResourceList) {
		for k, v := range src {
			if w, ok := dst[k]; !ok || v.Cmp(w) > 0 {
				dst[k] = v.DeepCopy()
			}
		}
	}
	result := corev1.ResourceList{}
	for i := range pod.Spec.Containers {
		add(result, list(&pod.Spec.Containers[i]))
	}
	sidecars, peak := corev1.ResourceList{}, corev1.ResourceList{}
	for i := range pod.Spec.InitContainers {
		c := &pod.Spec.InitContainers[i]
		if isRestartable(c) {
			add(result, list(c))
			add(sidecars, list(c))
			raise(peak, sidecars)
			continue
		}
		running := corev1.ResourceList{}
		add(running, list(c))
		add(running, sidecars)
		raise(peak, running)
	}
	raise(result, peak)
	return result
}

// containerDefaults returns the default requests and limits a LimitRange
// gives containers, with the LimitRange's own defaulting applied (a default
// limit falls back to max, a default request to the default limit, then to
// min), as stored LimitRanges already carry it.
func containerDefaults(lr *corev1.LimitRange) (requests, limits corev1.ResourceList) {
	requests, limits = corev1.ResourceList{}, corev1.ResourceList{}
	for _, item := range lr.Spec.Limits {
		if item.Type != corev1.LimitTypeContainer {
			continue
		}
		def, defReq := corev1.ResourceList{}, corev1.ResourceList{}
		fillMissing(def, item.Default)
		fillMissing(def, item.Max)
		fillMissing(defReq, item.DefaultRequest)
		fillMissing(defReq, def)
		fillMissing(defReq, item.Min)
		maps.Copy(requests, defReq)
		maps.Copy(limits, def)
	}
	return requests, limits
}

// fillMissing gives dst a copy of each quantity of src it lacks.
func fillMissing(dst, src corev1.ResourceList) {
	for k, v := range src {
		if _, ok := dst[k]; !ok {
			dst[k] = v.DeepCopy()
		}
	}
}

// limitRangeDefaults is LimitRanger's mutation: every container and init
// container gets each LimitRange's defaults for what it does not state.
func limitRangeDefaults(pod *corev1.Pod, ranges []*corev1.LimitRange) {
	for _, lr := range ranges {
		if lr == nil {
			continue
		}
		requests, limits := containerDefaults(lr)
		for _, cs := range [][]corev1.Container{pod.Spec.Containers, pod.Spec.InitContainers} {
			for i := range cs {
				r := &cs[i].Resources
				if len(limits) > 0 && r.Limits == nil {
					r.Limits = corev1.ResourceList{}
				}
				if len(requests) > 0 && r.Requests == nil {
					r.Requests = corev1.ResourceList{}
				}
				fillMissing(r.Limits, limits)
				fillMissing(r.Requests, requests)
			}
		}
	}
}

// runtimeClass is the RuntimeClass plugin's mutation: it copies the
// overhead of the RuntimeClass a pod names into the pod, and merges the
// class's node selector into the pod's. It refuses a pod naming a class
// that does not exist, stating an overhead other than its class's, or
// whose node selector gives a label of the class's selector another
// value; an empty class name fails as the plugin's look-up fails.
func runtimeClass(pod *corev1.Pod, env Environment) error {
	name := pod.Spec.RuntimeClassName
	if name == nil {
		return nil
	}
	if *name == "" {
		// The plugin's informer does not hold the class, so it asks the
		// API server with its client, which refuses an empty name before
		// sending anything.
		return &PlainError{ErrRuntimeClassNameEmpty, "resource name may not be empty"}
	}
	rc := env.RuntimeClasses[*name]
	if rc == nil {
		return &RefusedError{ErrRuntimeClassNotFound, fmt.Sprintf("pod rejected: RuntimeClass %q not found", *name)}
	}
	if rc.Overhead != nil {
		if len(pod.Spec.Overhead) > 0 && !apiequality.Semantic.DeepEqual(rc.Overhead.PodFixed, pod.Spec.Overhead) {
			return &RefusedError{ErrOverheadMismatch, "pod rejected: Pod's Overhead doesn't match RuntimeClass's defined Overhead"}
		}
		pod.Spec.Overhead = rc.Overhead.PodFixed.DeepCopy()
	} // else an overhead of the pod's own is refused by Validate
	return mergeNodeSelector(pod, rc)
}

// mergeNodeSelector is the RuntimeClass plugin's scheduling step: the
// class's node selector is merged into the pod's, and a label the pod
// selects with another value is a conflict. Kubernetes walks the class's
// selector in Go's map order, so with several conflicting labels the one
// it names varies from request to request; the ledger names the first in
// sorted order. The class's tolerations, which the plugin also merges,
// are not read: they refuse nothing and charge nothing.
func mergeNodeSelector(pod *corev1.Pod, rc *nodev1.RuntimeClass) error {
	if rc.Scheduling == nil || len(rc.Scheduling.NodeSelector) == 0 {
		return nil
	}
	class := rc.Scheduling.NodeSelector
	if pod.Spec.NodeSelector == nil {
		pod.Spec.NodeSelector = maps.Clone(class)
		return nil
	}
	for _, key := range slices.Sorted(maps.Keys(class)) {
		if value, ok := pod.Spec.NodeSelector[key]; ok && value != class[key] {
			return &RefusedError{ErrNodeSelectorConflict, fmt.Sprintf("conflict: runtimeClass.scheduling.nodeSelector[%s] = %s; pod.spec.nodeSelector[%s] = %s", key, class[key], key, value)}
		}
	}
	maps.Copy(pod.Spec.NodeSelector, class)
	return nil
}

// defaultServiceAccount is the service account of a pod that names none;
// Kubernetes' controller creates it in every namespace.
const defaultServiceAccount = "default"

// serviceAccount is the ServiceAccount plugin's look-up: a pod naming a
// service account its namespace does not have is refused. accounts are the
// namespace's; with none known nothing is refused, and the default account
// is taken to exist. The plugin's rules for a kubelet's mirror pods are
// not modelled.
func serviceAccount(pod *corev1.Pod, namespace string, accounts []string) error {
	name := pod.Spec.ServiceAccountName
	if name == "" {
		// The API server reads the deprecated field when the other is
		// empty.
		name = pod.Spec.DeprecatedServiceAccount
	}
	if len(accounts) == 0 || name == "" || name == defaultServiceAccount || slices.Contains(accounts, name) {
		return nil
	}
	return &RefusedError{ErrServiceAccountNotFound, fmt.Sprintf("error looking up service account %s/%s: serviceaccount %q not found", namespace, name, name)}
}

// systemPriorityClasses exist in every cluster, with these values: the
// API server makes them.
var systemPriorityClasses = map[string]int32{"system-node-critical": 2000001000, "system-cluster-critical": 2000000000}

// priorityClass is the Priority admission plugin: a pod that names no
// priority class gets the global default one, a pod naming a class that
// does not exist is refused, and so is a pod stating a priority or a
// preemption policy other than its class's (0 and PreemptLowerPriority
// without a class). With no classes in the environment (none ingested), a
// class name is taken as it is.
func priorityClass(pod *corev1.Pod, classes []*schedulingv1.PriorityClass) error {
	name := pod.Spec.PriorityClassName
	var value int32
	policy := corev1.PreemptLowerPriority
	class := func(pc *schedulingv1.PriorityClass) {
		value = pc.Value
		if pc.PreemptionPolicy != nil {
			policy = *pc.PreemptionPolicy
		}
	}
	switch v, system := systemPriorityClasses[name]; {
	case name == "":
		if def := defaultPriorityClass(classes); def != nil {
			pod.Spec.PriorityClassName = def.Name
			class(def)
		}
	case system:
		value = v
	case len(classes) == 0:
		return nil
	default:
		pc := findPriorityClass(classes, name)
		if pc == nil {
			return &RefusedError{ErrPriorityClassNotFound, fmt.Sprintf("no PriorityClass with name %s was found", name)}
		}
		class(pc)
	}
	if p := pod.Spec.Priority; p != nil && *p != value {
		return &RefusedError{ErrPriorityMismatch, fmt.Sprintf("the integer value of priority (%d) must not be provided in pod spec; priority admission controller computed %d from the given PriorityClass name", *p, value)}
	}
	if p := pod.Spec.PreemptionPolicy; p != nil && *p != policy {
		return &RefusedError{ErrPriorityMismatch, fmt.Sprintf("the string value of PreemptionPolicy (%s) must not be provided in pod spec; priority admission controller computed %s from the given PriorityClass name", *p, policy)}
	}
	return nil
}

func findPriorityClass(classes []*schedulingv1.PriorityClass, name string) *schedulingv1.PriorityClass {
	for _, pc := range classes {
		if pc != nil && pc.Name == name {
			return pc
		}
	}
	return nil
}

// defaultPriorityClass is the global default priority class, nil for
// none; when several are marked global default (a race the Priority
// plugin tolerates), the one with the lowest value.
func defaultPriorityClass(classes []*schedulingv1.PriorityClass) *schedulingv1.PriorityClass {
	var def *schedulingv1.PriorityClass
	for _, pc := range classes {
		if pc == nil || !pc.GlobalDefault {
			continue
		}
		if def == nil || pc.Value < def.Value {
			def = pc
		}
	}
	return def
}

// defaultStorageClass is the DefaultStorageClass admission plugin: a claim
// with neither spec.storageClassName nor the beta annotation gets the
// default class: among classes annotated as default, the newest, ties by
// name. An explicit "" names no class and is left alone.
func defaultStorageClass(pvc *corev1.PersistentVolumeClaim, classes []*storagev1.StorageClass) {
	if _, ok := pvc.Annotations[object.BetaStorageClassAnnotation]; ok || pvc.Spec.StorageClassName != nil {
		return
	}
	var def *storagev1.StorageClass
	for _, sc := range classes {
		if sc == nil || !isDefaultClass(sc) {
			continue
		}
		if def == nil {
			def = sc
			continue
		}
		a, b := sc.CreationTimestamp.UnixNano(), def.CreationTimestamp.UnixNano()
		if a > b || (a == b && sc.Name < def.Name) {
			def = sc
		}
	}
	if def != nil {
		name := def.Name
		pvc.Spec.StorageClassName = &name
	}
}

func isDefaultClass(sc *storagev1.StorageClass) bool {
	return slices.ContainsFunc(object.DefaultStorageClassAnnotations, func(key string) bool { return sc.Annotations[key] == "true" })
}
