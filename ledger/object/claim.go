package object

import (
	resourcev1 "k8s.io/api/resource/v1"
	resourcev1beta1 "k8s.io/api/resource/v1beta1"
	"k8s.io/apimachinery/pkg/runtime"
)

// claimAPIVersion is the version a ResourceClaim is read as, whatever
// version it came in, and the version of its trimmed form.
const claimAPIVersion = "resource.k8s.io/v1"

// decodeClaim reads a ResourceClaim. resource.k8s.io/v1 and v1beta2 share
// the shape of a claim's device requests (exactly, or firstAvailable);
// v1beta1 keeps an exact request's fields on the request itself, and is
// read into the v1 shape.
func decodeClaim(raw []byte, apiVersion string) (runtime.Object, error) {
	if apiVersion != "resource.k8s.io/v1beta1" {
		c, err := unmarshal[resourcev1.ResourceClaim](raw)
		if err != nil {
			return nil, err
		}
		return c, nil
	}
	old, err := unmarshal[resourcev1beta1.ResourceClaim](raw)
	if err != nil {
		return nil, err
	}
	c := &resourcev1.ResourceClaim{TypeMeta: old.TypeMeta, ObjectMeta: old.ObjectMeta}
	for _, r := range old.Spec.Devices.Requests {
		req := resourcev1.DeviceRequest{Name: r.Name}
		if len(r.FirstAvailable) > 0 {
			for _, s := range r.FirstAvailable {
				req.FirstAvailable = append(req.FirstAvailable, resourcev1.DeviceSubRequest{
					Name: s.Name, DeviceClassName: s.DeviceClassName,
					AllocationMode: resourcev1.DeviceAllocationMode(s.AllocationMode), Count: s.Count,
				})
			}
		} else {
			req.Exactly = &resourcev1.ExactDeviceRequest{
				DeviceClassName: r.DeviceClassName,
				AllocationMode:  resourcev1.DeviceAllocationMode(r.AllocationMode), Count: r.Count,
			}
		}
		c.Spec.Devices.Requests = append(c.Spec.Devices.Requests, req)
	}
	return c, nil
}

// The trimmed form of a ResourceClaim: what its device requests ask of
// each device class.
type trimmedClaimSpec struct {
	Devices trimmedDeviceClaim `json:"devices"`
}

type trimmedDeviceClaim struct {
	Requests []trimmedDeviceRequest `json:"requests,omitempty"`
}

type trimmedDeviceRequest struct {
	Name           string                `json:"name"`
	Exactly        *trimmedDeviceAmount  `json:"exactly,omitempty"`
	FirstAvailable []trimmedDeviceAmount `json:"firstAvailable,omitempty"`
}

// trimmedDeviceAmount is an exact request or one of its alternatives
// (which alone have a name).
type trimmedDeviceAmount struct {
	Name            string `json:"name,omitempty"`
	DeviceClassName string `json:"deviceClassName"`
	AllocationMode  string `json:"allocationMode,omitempty"`
	Count           int64  `json:"count,omitempty"`
}

func trimClaim(c *resourcev1.ResourceClaim) *trimmedClaimSpec {
	t := &trimmedClaimSpec{}
	for _, r := range c.Spec.Devices.Requests {
		tr := trimmedDeviceRequest{Name: r.Name}
		if e := r.Exactly; e != nil {
			tr.Exactly = &trimmedDeviceAmount{DeviceClassName: e.DeviceClassName, AllocationMode: string(e.AllocationMode), Count: e.Count}
		}
		for _, s := range r.FirstAvailable {
			tr.FirstAvailable = append(tr.FirstAvailable, trimmedDeviceAmount{
				Name: s.Name, DeviceClassName: s.DeviceClassName, AllocationMode: string(s.AllocationMode), Count: s.Count,
			})
		}
		t.Devices.Requests = append(t.Devices.Requests, tr)
	}
	return t
}
