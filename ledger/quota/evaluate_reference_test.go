package quota

import (
	"fmt"
	"math/rand/v2"
	"reflect"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/quotaledger/quota/ledger/object"
	"github.com/quotaledger/quota/ledger/quantity"
)

// The functions below are the pod evaluation written plainly, as
// Kubernetes' resource helpers (component-helpers' PodRequests and
// PodLimits) compute it: every container list converted where it is read,
// summed through fresh maps. Evaluate must give the same charge, down to each quantity's int64
// form, format and cached text, because the charge is stored and later
// printed and summed.

func refList(cv *converter, l corev1.ResourceList) ResourceList {
	if l == nil {
		return nil
	}
	out := make(ResourceList, len(l))
	for k, v := range l {
		out[string(k)] = cv.one(v)
	}
	return out
}

// refEffective is one container's list as Kubernetes' resource helpers
// compute it: the spec's, or during an in-place resize (an app container
// or a sidecar whose status reports resources) the larger of the spec's
// and the status's, the spec left out when the resize is infeasible.
func refEffective(cv *converter, pod *corev1.Pod, c *corev1.Container, app, limits bool) ResourceList {
	spec := c.Resources.Requests
	if limits {
		spec = c.Resources.Limits
	}
	cs := findContainerStatus(pod, c.Name)
	if (!app && !isRestartable(c)) || cs == nil || cs.Resources == nil {
		return refList(cv, spec)
	}
	infeasible := resizeInfeasible(pod)
	if limits {
		if infeasible {
			return clone(refList(cv, cs.Resources.Limits))
		}
		return refMaxOf(refList(cv, spec), refList(cv, cs.Resources.Limits))
	}
	if infeasible {
		return refMaxOf(refList(cv, cs.Resources.Requests), refList(cv, cs.AllocatedResources))
	}
	return refMaxOf(refList(cv, spec), refList(cv, cs.Resources.Requests), refList(cv, cs.AllocatedResources))
}

func refMaxOf(a ResourceList, others ...ResourceList) ResourceList {
	out := clone(a)
	if out == nil {
		out = ResourceList{}
	}
	for _, o := range others {
		maxInto(out, o)
	}
	return out
}

func refAggregate(cv *converter, pod *corev1.Pod, limits bool) ResourceList {
	result := ResourceList{}
	for i := range pod.Spec.Containers {
		c := &pod.Spec.Containers[i]
		addInto(result, refEffective(cv, pod, c, true, limits))
	}
	sidecars := ResourceList{}
	initPeak := ResourceList{}
	for i := range pod.Spec.InitContainers {
		c := &pod.Spec.InitContainers[i]
		own := refEffective(cv, pod, c, false, limits)
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

func refApplyPodLevel(cv *converter, result ResourceList, podLevel corev1.ResourceList) {
	for k, v := range podLevel {
		if isSupportedPodLevel(string(k)) {
			result[string(k)] = cv.one(v)
		}
	}
}

func refPodRequests(cv *converter, pod *corev1.Pod) ResourceList {
	for i := range pod.Spec.InitContainers {
		refList(cv, pod.Spec.InitContainers[i].Resources.Requests)
		refList(cv, pod.Spec.InitContainers[i].Resources.Limits)
	}
	for i := range pod.Spec.Containers {
		refList(cv, pod.Spec.Containers[i].Resources.Requests)
		refList(cv, pod.Spec.Containers[i].Resources.Limits)
	}
	reqs := refAggregate(cv, pod, false)
	if pod.Spec.Resources != nil && anySupportedPodLevel(pod.Spec.Resources.Requests) {
		refApplyPodLevel(cv, reqs, pod.Spec.Resources.Requests)
	}
	addInto(reqs, refList(cv, pod.Spec.Overhead))
	return reqs
}

func refPodLimits(cv *converter, pod *corev1.Pod) ResourceList {
	limits := refAggregate(cv, pod, true)
	if r := pod.Spec.Resources; r != nil && (anySupportedPodLevel(r.Requests) || anySupportedPodLevel(r.Limits)) {
		refApplyPodLevel(cv, limits, r.Limits)
	}
	for k, v := range pod.Spec.Overhead {
		if w, ok := limits[string(k)]; ok && !w.IsZero() {
			limits[string(k)] = w.Add(cv.one(v))
		}
	}
	return limits
}

func refComputeUsage(requests, limits ResourceList) ResourceList {
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
		if isChargedAsExtended(name) {
			result[requestsPrefix+name] = v
		}
	}
	return result
}

func refPodUsage(pod *corev1.Pod, now time.Time) (ResourceList, error) {
	var cv converter
	result := ResourceList{countPrefix + "pods": quantity.NewInt(1)}
	if !podCountsForQuota(pod, now) {
		return result, nil
	}
	result = refAdd(result, refComputeUsage(refPodRequests(&cv, pod), refPodLimits(&cv, pod)))
	return result, cv.err
}

// podGenerator builds pods that exercise every branch of the pod
// evaluation: sidecars, statuses with allocated and actuated resources, a
// pending resize, pod-level resources, overhead and terminal phases.
type podGenerator struct{ r *rand.Rand }

var generatedQuantities = []string{
	"0", "1", "2", "100m", "250m", "500m", "1500m", "1.5", "1k", "1e3", "2E3", "+1Ki",
	"01Ki", "64Mi", "128Mi", "512Mi", "1Gi", "1.5Gi", "2Gi", "1000Mi", "1000000Ki",
	"1073741824", "0.1n", "9223372036854775807", "8Ei", "3000", "1000m",
}

var generatedNames = []corev1.ResourceName{
	corev1.ResourceCPU, corev1.ResourceMemory, corev1.ResourceEphemeralStorage,
	"hugepages-2Mi", "example.com/gpu", "nvidia.com/gpu",
}

func (g podGenerator) list() corev1.ResourceList {
	switch g.r.IntN(6) {
	case 0:
		return nil
	case 1:
		return corev1.ResourceList{}
	}
	l := corev1.ResourceList{}
	for _, name := range generatedNames {
		if g.r.IntN(3) == 0 {
			l[name] = resource.MustParse(generatedQuantities[g.r.IntN(len(generatedQuantities))])
		}
	}
	if g.r.IntN(60) == 0 {
		// Beyond the ledger's range: the evaluation fails.
		l["example.com/huge"] = resource.MustParse("1e2000")
	}
	return l
}

func (g podGenerator) container(name string, init bool) corev1.Container {
	c := corev1.Container{Name: name, Resources: corev1.ResourceRequirements{Requests: g.list(), Limits: g.list()}}
	if init && g.r.IntN(2) == 0 {
		always := corev1.ContainerRestartPolicyAlways
		c.RestartPolicy = &always
	}
	return c
}

func (g podGenerator) status(name string) corev1.ContainerStatus {
	s := corev1.ContainerStatus{Name: name, AllocatedResources: g.list()}
	if g.r.IntN(2) == 0 {
		s.Resources = &corev1.ResourceRequirements{Requests: g.list(), Limits: g.list()}
	}
	return s
}

func (g podGenerator) pod(i int) *corev1.Pod {
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("p%d", i), Namespace: "team"}}
	var names []string
	for j := range g.r.IntN(4) {
		name := fmt.Sprintf("init-%d", j)
		p.Spec.InitContainers = append(p.Spec.InitContainers, g.container(name, true))
		names = append(names, name)
	}
	for j := range g.r.IntN(4) {
		name := fmt.Sprintf("app-%d", j)
		p.Spec.Containers = append(p.Spec.Containers, g.container(name, false))
		names = append(names, name)
	}
	for _, name := range names {
		switch g.r.IntN(4) {
		case 0:
			p.Status.ContainerStatuses = append(p.Status.ContainerStatuses, g.status(name))
		case 1:
			p.Status.InitContainerStatuses = append(p.Status.InitContainerStatuses, g.status(name))
		}
	}
	if g.r.IntN(4) == 0 {
		reason := corev1.PodReasonInfeasible
		if g.r.IntN(2) == 0 {
			reason = corev1.PodReasonDeferred
		}
		p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodResizePending, Status: corev1.ConditionTrue, Reason: reason}}
	}
	if g.r.IntN(4) == 0 {
		p.Spec.Overhead = g.list()
	}
	if g.r.IntN(4) == 0 {
		p.Spec.Resources = &corev1.ResourceRequirements{Requests: g.list(), Limits: g.list()}
	}
	switch g.r.IntN(8) {
	case 0:
		p.Status.Phase = corev1.PodSucceeded
	case 1:
		p.Status.Phase = corev1.PodRunning
	}
	return p
}

// TestEvaluatePodMatchesReference checks, on seeded random pods, that
// Evaluate's usage is field for field the usage of the straightforward
// evaluation above.
func TestEvaluatePodMatchesReference(t *testing.T) {
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	g := podGenerator{rand.New(rand.NewPCG(seed, 4))}
	for i := range 3000 {
		p := g.pod(i)
		want, wantErr := refPodUsage(p, testNow)
		o := &object.Object{APIVersion: "v1", Kind: "Pod", Resource: "pods", Namespace: "team", Name: p.Name, Value: p}
		c, err := Evaluate(o, testNow)
		if (err != nil) != (wantErr != nil) {
			t.Fatalf("pod %d (seed %d): error %v, want %v", i, seed, err, wantErr)
		}
		if err != nil {
			continue
		}
		if !reflect.DeepEqual(c.Usage, want) {
			t.Fatalf("pod %d (seed %d): usage\n got %v\nwant %v\npod %+v", i, seed, c.Usage, want, p)
		}
	}
}

// clone returns a copy of l that can be changed independently.
func clone(l ResourceList) ResourceList {
	out := make(ResourceList, len(l))
	for k, v := range l {
		out[k] = v
	}
	return out
}
