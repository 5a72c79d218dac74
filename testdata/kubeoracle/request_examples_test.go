package kubeoracle

import (
	"encoding/json"
	"testing"
)

// TestHandWrittenRequests compares a few hand-written admission requests,
// each the smallest of its kind of difference in deciding them.
func TestHandWrittenRequests(t *testing.T) {
	requests := map[string]string{
		// Kubernetes' claim evaluator evaluates every status update of a
		// claim (RequiresQuotaReplenish compares two pointers), so a quota
		// whose used lacks a figure refuses it.
		"status update of a claim against a quota with no used": `{"subresource":"status","changes":[],` +
			`"object":{"apiVersion":"v1","kind":"PersistentVolumeClaim","metadata":{"name":"c","resourceVersion":"1"},"spec":{"accessModes":["ReadWriteOnce"],"resources":{"requests":{"storage":"1Gi"}}}},` +
			`"quotas":[{"apiVersion":"v1","kind":"ResourceQuota","metadata":{"name":"q","namespace":"ns"},"spec":{"hard":{"requests.storage":"10Gi"}}}]}`,
		// With DRAExtendedResource (beta, on in v1.36) a ResourceClaim
		// also charges its devices of each class as
		// requests.deviceclass.resource.kubernetes.io/<class>.
		"claim of two devices against a quota on the class's extended resource": `{` +
			`"object":{"apiVersion":"resource.k8s.io/v1","kind":"ResourceClaim","metadata":{"name":"rc"},"spec":{"devices":{"requests":[{"name":"r","exactly":{"deviceClassName":"gpu","count":2}}]}}},` +
			`"quotas":[{"apiVersion":"v1","kind":"ResourceQuota","metadata":{"name":"q","namespace":"ns"},"spec":{"hard":{"count/resourceclaims.resource.k8s.io":"10","requests.deviceclass.resource.kubernetes.io/gpu":"1"}},` +
			`"status":{"used":{"count/resourceclaims.resource.k8s.io":"0","requests.deviceclass.resource.kubernetes.io/gpu":"0"}}}]}`,
	}
	for name, raw := range requests {
		t.Run(name, func(t *testing.T) {
			var tree any
			if err := json.Unmarshal([]byte(raw), &tree); err != nil {
				t.Fatal(err)
			}
			out := checkRequest(tree)
			if out.skip {
				t.Fatalf("the API server refuses the request before admission\ninput: %s", raw)
			}
			if out.kind != "" {
				t.Errorf("%s\n%s\ninput: %s", out.kind, out.detail, raw)
			}
		})
	}
}
