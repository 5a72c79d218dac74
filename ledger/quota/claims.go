package quota

// The usage of claims (of storage and of devices) and services.

import (
	"maps"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	resourcev1 "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/quotaledger/quota/ledger/object"
	"github.com/quotaledger/quota/ledger/quantity"
)

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
	if req, ok := pvc.Spec.Resources.Requests[corev1.ResourceStorage]; ok {
		storage := roundUpBytes(req)
		if alloc, ok := pvc.Status.AllocatedResources[corev1.ResourceStorage]; ok && alloc.Cmp(storage) > 0 {
			storage = roundUpBytes(alloc)
		}
		q := cv.one(storage)
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
	return slices.Sorted(maps.Keys(set))
}

// serviceUsage counts a service, its load balancer and the node ports it
// will allocate, by the package doc's rule.
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

// claimUsage is what a ResourceClaim charges, by the package doc's rule;
// mode All counts as 32 devices, the most one allocation holds. An
// allocation mode left empty is the API server's default, ExactCount, with
// a count of 1.
func claimUsage(claim *resourcev1.ResourceClaim) ResourceList {
	devices := func(mode resourcev1.DeviceAllocationMode, count int64) int64 {
		switch mode {
		case resourcev1.DeviceAllocationModeAll:
			return resourcev1.AllocationResultsMaxSize
		case resourcev1.DeviceAllocationModeExactCount, "":
			return max(count, 1)
		}
		return 0
	}
	out := ResourceList{countPrefix + resourceClaims: quantity.NewInt(1)}
	add := func(class string, n int64) {
		name := class + deviceClassSuffix
		out[name] = out[name].Add(quantity.NewInt(n))
	}
	for _, r := range claim.Spec.Devices.Requests {
		switch {
		case len(r.FirstAvailable) > 0:
			// Whole numbers add up alike in any order.
			most := map[string]int64{}
			for _, s := range r.FirstAvailable {
				if n := devices(s.AllocationMode, s.Count); n > most[s.DeviceClassName] {
					most[s.DeviceClassName] = n
				}
			}
			for class, n := range most {
				add(class, n)
			}
		case r.Exactly != nil:
			add(r.Exactly.DeviceClassName, devices(r.Exactly.AllocationMode, r.Exactly.Count))
		}
	}
	if !madeForPod(claim) {
		// The devices of each class are charged again as the class's
		// extended resource (DRAExtendedResource, on by default since
		// v1.36), which a quota may limit beside pods asking for it.
		extended := make(ResourceList, len(out))
		for name, q := range out {
			if class, ok := strings.CutSuffix(name, deviceClassSuffix); ok && class != "" && q.Sign() > 0 {
				extended[requestsPrefix+deviceClassResourcePrefix+class] = q
			}
		}
		addInto(out, extended)
	}
	return out
}

// madeForPod reports whether the scheduler made claim for the extended
// resources of the pod that controls it. Kubernetes charges such a claim
// only what the pod's own charge does not cover; a pod asking for a class
// by its name (deviceclass.resource.kubernetes.io/<class>) is charged the
// class's extended resource itself, so the claim is charged none of it.
func madeForPod(claim *resourcev1.ResourceClaim) bool {
	if claim.Annotations[resourcev1.ExtendedResourceClaimAnnotation] != "true" {
		return false
	}
	ref := metav1.GetControllerOfNoCopy(claim)
	return ref != nil && ref.Kind == "Pod" && ref.APIVersion == "v1"
}
