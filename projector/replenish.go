package projector

import (
	"encoding/json"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"

	"github.com/quotaledger/quota/ledger/quota"
)

// replenishes reports whether Kubernetes' quota controller recounts the
// namespace's quotas when the cluster reports an object going from old to
// next. Its monitors look for these updates (the update filter of
// pkg/quota/v1/install) and ignore every other:
//
//   - a pod that moves between the Terminating and NotTerminating scopes,
//     that stops counting (Failed, Succeeded, past its grace period), or
//     whose containers' status resources change;
//   - a service whose type changes among NodePort, LoadBalancer and the
//     others;
//   - any claim update: the filter compares two pointers to fresh copies
//     of the allocated size, which always differ.
//
// old is the stored record, read before next replaces it.
func (f *fold) replenishes(old, next *objectRecord) (bool, error) {
	switch next.Resource {
	case "persistentvolumeclaims":
		return true, nil
	case "services":
		return serviceType(old.Charge) != serviceType(next.Charge), nil
	case "pods":
		if old.Charge.Scope.Terminating != next.Charge.Scope.Terminating || counts(old.Charge) && !counts(next.Charge) {
			return true, nil
		}
		if sameUsage(old.Charge.Usage, next.Charge.Usage) {
			// Only a resize moves a live pod's charge, and only one the
			// kubelet reports in the status makes Kubernetes recount.
			return false, nil
		}
		return f.statusResourcesChanged(old, next)
	}
	return false, nil
}

// serviceType is the service type quota tells apart, read from a service's
// charge: a LoadBalancer charges a load balancer, a NodePort a node port
// per port (and has at least one port); every other type neither.
func serviceType(c quota.Charge) string {
	switch {
	case c.Usage[quota.ResourceServicesLoadBalancers].Sign() > 0:
		return "LoadBalancer"
	case c.Usage[quota.ResourceServicesNodePorts].Sign() > 0:
		return "NodePort"
	}
	return ""
}

// counts reports whether a pod's charge counts it as a live pod.
func counts(c quota.Charge) bool {
	_, ok := c.Usage[quota.ResourcePods]
	return ok
}

// statusResourcesChanged reports whether the resources of some container
// status of the old pod differ in the new one, as the update filter's
// hasResourcesChanged compares them (a status the new pod lacks is no
// change).
func (f *fold) statusResourcesChanged(old, next *objectRecord) (bool, error) {
	held, err := getObject(f.tx, objectKey(old.Namespace, old.Resource, old.Name))
	if err != nil {
		return false, err
	}
	if held == nil || len(held.Object) == 0 || len(next.Object) == 0 {
		return false, nil
	}
	var a, b corev1.Pod
	if err := json.Unmarshal(held.Object, &a); err != nil {
		return false, fmt.Errorf("decode pod %s/%s: %w", old.Namespace, old.Name, err)
	}
	if err := json.Unmarshal(next.Object, &b); err != nil {
		return false, fmt.Errorf("decode pod %s/%s: %w", next.Namespace, next.Name, err)
	}
	changed := func(olds, news []corev1.ContainerStatus) bool {
		for _, o := range olds {
			for _, n := range news {
				if n.Name == o.Name && !equality.Semantic.DeepEqual(o.Resources, n.Resources) {
					return true
				}
			}
		}
		return false
	}
	return changed(a.Status.ContainerStatuses, b.Status.ContainerStatuses) ||
		changed(a.Status.InitContainerStatuses, b.Status.InitContainerStatuses), nil
}

// sameUsage reports whether two charges' usages are equal, name by name.
func sameUsage(a, b quota.ResourceList) bool {
	if len(a) != len(b) {
		return false
	}
	for name, v := range a {
		w, ok := b[name]
		if !ok || v.Cmp(w) != 0 {
			return false
		}
	}
	return true
}
