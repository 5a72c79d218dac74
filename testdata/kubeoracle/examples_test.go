package kubeoracle

import "testing"

// TestHandWrittenPods compares the usage of a few hand-written pods, each
// the smallest of its kind of in-place resize status or resource name.
func TestHandWrittenPods(t *testing.T) {
	pods := map[string]string{
		"two containers resized in opposite directions":             `{"apiVersion":"v1","kind":"Pod","metadata":{"name":"p","namespace":"ns"},"spec":{"containers":[{"name":"a","image":"x","resources":{"requests":{"cpu":"2"},"limits":{"cpu":"2"}}},{"name":"b","image":"x","resources":{"requests":{"cpu":"1"},"limits":{"cpu":"1"}}}]},"status":{"phase":"Running","qosClass":"Guaranteed","containerStatuses":[{"name":"a","allocatedResources":{"cpu":"1"},"resources":{"requests":{"cpu":"1"},"limits":{"cpu":"1"}}},{"name":"b","allocatedResources":{"cpu":"2"},"resources":{"requests":{"cpu":"2"},"limits":{"cpu":"2"}}}]}}`,
		"infeasible resize of a container with no actual resources": `{"apiVersion":"v1","kind":"Pod","metadata":{"name":"p","namespace":"ns"},"spec":{"containers":[{"name":"a","image":"x","resources":{"requests":{"cpu":"1"},"limits":{"cpu":"1"}}}]},"status":{"phase":"Running","qosClass":"Guaranteed","conditions":[{"type":"PodResizePending","status":"True","reason":"Infeasible"}],"containerStatuses":[{"name":"a","allocatedResources":{"cpu":"500m"}}]}}`,
		"infeasible resize before any container status":             `{"apiVersion":"v1","kind":"Pod","metadata":{"name":"p","namespace":"ns"},"spec":{"containers":[{"name":"a","image":"x","resources":{"requests":{"cpu":"1"},"limits":{"cpu":"1"}}}]},"status":{"phase":"Pending","qosClass":"Guaranteed","conditions":[{"type":"PodResizePending","status":"True","reason":"Infeasible"}]}}`,
		"allocated resources of a container that is not running":    `{"apiVersion":"v1","kind":"Pod","metadata":{"name":"p","namespace":"ns"},"spec":{"containers":[{"name":"a","image":"x","resources":{"requests":{"cpu":"1"}}}]},"status":{"phase":"Pending","qosClass":"Burstable","containerStatuses":[{"name":"a","allocatedResources":{"cpu":"2"}}]}}`,
		"status of a plain init container":                          `{"apiVersion":"v1","kind":"Pod","metadata":{"name":"p","namespace":"ns"},"spec":{"initContainers":[{"name":"i","image":"x","resources":{"requests":{"cpu":"1"}}}],"containers":[{"name":"a","image":"x","resources":{"requests":{"cpu":"1"}}}]},"status":{"phase":"Running","qosClass":"Burstable","initContainerStatuses":[{"name":"i","allocatedResources":{"cpu":"3"},"resources":{"requests":{"cpu":"3"}}}]}}`,
		"extended resource of a DRA device class":                   `{"apiVersion":"v1","kind":"Pod","metadata":{"name":"p","namespace":"ns"},"spec":{"containers":[{"name":"a","image":"x","resources":{"requests":{"deviceclass.resource.kubernetes.io/gpu":"1"},"limits":{"deviceclass.resource.kubernetes.io/gpu":"1"}}}]}}`,
	}
	for name, raw := range pods {
		t.Run(name, func(t *testing.T) {
			if out := checkPodUsage([]byte(raw)); out.kind != "" {
				t.Errorf("%s\n%s\ninput: %s", out.kind, out.detail, raw)
			}
		})
	}
}
