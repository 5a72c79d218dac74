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
