package quota

import (
	"math/rand/v2"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/quotaledger/quota/ledger/object"
)

// refConstraints is the "must specify" rule as first written, after
// Kubernetes' enforcePodContainerConstraints: each container's usage
// computed in full, then its names compared with the required set. (The
// wording of what is missing is shared.) A pod with pod-level resources
// is not checked.
func refConstraints(o *object.Object, required []string) string {
	pod, ok := o.Value.(*corev1.Pod)
	if o.Resource != "pods" || !ok {
		return ""
	}
	if r := pod.Spec.Resources; r != nil {
		for _, l := range []corev1.ResourceList{r.Requests, r.Limits} {
			for name := range l {
				if name == corev1.ResourceCPU || name == corev1.ResourceMemory || strings.HasPrefix(string(name), corev1.ResourceHugePagesPrefix) {
					return ""
				}
			}
		}
	}
	requiredSet := map[string]bool{}
	for _, r := range required {
		if mustSpecify[r] {
			requiredSet[r] = true
		}
	}
	if len(requiredSet) == 0 {
		return ""
	}
	missing := map[string][]string{}
	check := func(c *corev1.Container) {
		var cv converter
		usage := computeUsage(cv.list(c.Resources.Requests), cv.list(c.Resources.Limits))
		for r := range requiredSet {
			if _, ok := usage[r]; !ok {
				missing[r] = append(missing[r], c.Name)
			}
		}
	}
	for i := range pod.Spec.Containers {
		check(&pod.Spec.Containers[i])
	}
	for i := range pod.Spec.InitContainers {
		check(&pod.Spec.InitContainers[i])
	}
	return mustSpecifyMessage(missing)
}

// TestConstraintsMatchesTheReference compares constraints with
// refConstraints on random pods (containers and init containers stating
// random subsets of resources) against random required sets.
func TestConstraintsMatchesTheReference(t *testing.T) {
	rng := rand.New(rand.NewPCG(4, 2))
	names := []corev1.ResourceName{"cpu", "memory", "ephemeral-storage", "hugepages-2Mi", "example.com/gpu", "pods"}
	hard := []string{ResourceCPU, ResourceMemory, ResourceRequestsCPU, ResourceRequestsMemory, ResourceLimitsCPU,
		ResourceLimitsMemory, ResourceEphemeralStorage, ResourceRequestsEphemeral, ResourcePods, "requests.example.com/gpu"}
	list := func() corev1.ResourceList {
		if rng.IntN(4) == 0 {
			return nil
		}
		l := corev1.ResourceList{}
		for _, n := range names {
			if rng.IntN(2) == 0 {
				l[n] = resource.MustParse("1")
			}
		}
		return l
	}
	containers := func(prefix string) []corev1.Container {
		out := make([]corev1.Container, rng.IntN(3))
		for i := range out {
			out[i] = corev1.Container{Name: prefix + string(rune('a'+i)),
				Resources: corev1.ResourceRequirements{Requests: list(), Limits: list()}}
		}
		return out
	}
	denied := 0
	for range 5000 {
		pod := &corev1.Pod{Spec: corev1.PodSpec{Containers: containers("c"), InitContainers: containers("i")}}
		if rng.IntN(5) == 0 {
			pod.Spec.Resources = &corev1.ResourceRequirements{Requests: list(), Limits: list()}
		}
		o := &object.Object{Resource: "pods", Value: pod}
		var required []string
		for _, h := range hard {
			if rng.IntN(3) == 0 {
				required = append(required, h)
			}
		}
		got, want := constraints(o, required), refConstraints(o, required)
		if got != want {
			t.Fatalf("constraints(%+v, %v):\n got %q\nwant %q", pod.Spec, required, got, want)
		}
		if got != "" {
			denied++
		}
	}
	if denied < 500 || denied > 4500 {
		t.Fatalf("%d of 5000 pods denied; the comparison covers too little of one side", denied)
	}
}

// computeUsage is computeUsageInto of a new list.
func computeUsage(requests, limits ResourceList) ResourceList {
	result := ResourceList{}
	computeUsageInto(result, requests, limits)
	return result
}
