package quota

import (
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	resourcev1 "k8s.io/api/resource/v1"
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
	ok := true
	switch o.Resource {
	case "pods":
		var pod *corev1.Pod
		if pod, ok = o.Value.(*corev1.Pod); ok {
			c.Usage, c.Scope = podUsage(&cv, pod, now), podScopeFacts(pod)
		}
	case "persistentvolumeclaims":
		var pvc *corev1.PersistentVolumeClaim
		if pvc, ok = o.Value.(*corev1.PersistentVolumeClaim); ok {
			c.Usage, c.Scope = pvcUsage(&cv, pvc), ScopeFacts{VolumeAttributesClasses: volumeAttributesClasses(pvc)}
		}
	case "services":
		var svc *corev1.Service
		if svc, ok = o.Value.(*corev1.Service); ok {
			c.Usage = serviceUsage(svc)
		}
	case resourceClaims:
		var claim *resourcev1.ResourceClaim
		if claim, ok = o.Value.(*resourcev1.ResourceClaim); ok {
			c.Usage = claimUsage(claim)
		}
	default:
		c.Usage = ResourceList{countPrefix + o.Resource: quantity.NewInt(1)}
		if legacyCounts[o.Resource] {
			c.Usage[o.Resource] = quantity.NewInt(1)
		}
	}
	switch {
	case !ok:
		return Charge{}, fmt.Errorf("evaluate %s: %w", o.Key(), ErrNoValue)
	case cv.err != nil:
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
