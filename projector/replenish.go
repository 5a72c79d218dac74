package projector

import (
	"encoding/json"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"

	"github.com/quotaledger/quota/ledger/quota"
)

// kubeUpdate is how Kubernetes handles an update of an object that the
// cluster then reports: whether its quota admission charged the update's
// growth beforehand, and whether its quota controller recounts the
// namespace's quotas on seeing it.
type kubeUpdate struct {
	charged, recount bool
}

// judgeUpdate tells how Kubernetes handles the update the cluster reports
// as old going to next (old is the stored record, read before next
// replaces it). Admission evaluates every update of a claim or a service,
// and of a pod only through its resize subresource (its spec's resources
// change) or when it moves between the Terminating scopes. The
// controller's monitors recount on the updates their filter looks for
// (pkg/quota/v1/install) and ignore every other:
//
//   - a pod that moves between the Terminating and NotTerminating scopes,
//     that stops counting (Failed, Succeeded, past its grace period), or
//     whose containers' status resources change;
//   - a service whose type changes among NodePort, LoadBalancer and the
//     others;
//   - any claim update: the filter compares two pointers to fresh copies
//     of the allocated size, which always differ.
//
// Updates of other kinds change no charge.
func (f *fold) judgeUpdate(old, next *objectRecord) (kubeUpdate, error) {
	switch next.Resource {
	case "persistentvolumeclaims":
		return kubeUpdate{charged: true, recount: true}, nil
	case "services":
		return kubeUpdate{charged: true, recount: serviceType(old.Charge) != serviceType(next.Charge)}, nil
	case "pods":
		if old.Charge.Scope.Terminating != next.Charge.Scope.Terminating || counts(old.Charge) && !counts(next.Charge) {
			return kubeUpdate{charged: true, recount: true}, nil
		}
		if quota.Equal(old.Charge.Usage, next.Charge.Usage) {
			return kubeUpdate{charged: true}, nil
		}
		return f.judgePodResize(old, next)
	}
	return kubeUpdate{charged: true}, nil
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

// judgePodResize compares a live pod's old and new objects whose charges
// differ: admission charged the change if the spec's resources changed
// (a resize), and the controller recounts if some container status's
// resources changed, as its filter's hasResourcesChanged compares them (a
// status the new pod lacks is no change).
func (f *fold) judgePodResize(old, next *objectRecord) (kubeUpdate, error) {
	held, err := getObject(f.tx, objectKey(old.Namespace, old.Resource, old.Name))
	if err != nil {
		return kubeUpdate{}, err
	}
	if held == nil || len(held.Object) == 0 || len(next.Object) == 0 {
		return kubeUpdate{charged: true}, nil
	}
	var a, b corev1.Pod
	if err := json.Unmarshal(held.Object, &a); err != nil {
		return kubeUpdate{}, fmt.Errorf("decode pod %s/%s: %w", old.Namespace, old.Name, err)
	}
	if err := json.Unmarshal(next.Object, &b); err != nil {
		return kubeUpdate{}, fmt.Errorf("decode pod %s/%s: %w", next.Namespace, next.Name, err)
	}
	statusChanged := func(olds, news []corev1.ContainerStatus) bool {
		for _, o := range olds {
			for _, n := range news {
				if n.Name == o.Name && !equality.Semantic.DeepEqual(o.Resources, n.Resources) {
					return true
				}
			}
		}
		return false
	}
	specChanged := func(olds, news []corev1.Container) bool {
		if len(olds) != len(news) {
			return true
		}
		for i := range olds {
			if !equality.Semantic.DeepEqual(olds[i].Resources, news[i].Resources) {
				return true
			}
		}
		return false
	}
	return kubeUpdate{
		charged: specChanged(a.Spec.Containers, b.Spec.Containers) || specChanged(a.Spec.InitContainers, b.Spec.InitContainers) ||
			!equality.Semantic.DeepEqual(a.Spec.Resources, b.Spec.Resources),
		recount: statusChanged(a.Status.ContainerStatuses, b.Status.ContainerStatuses) ||
			statusChanged(a.Status.InitContainerStatuses, b.Status.InitContainerStatuses),
	}, nil
}
