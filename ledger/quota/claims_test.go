package quota

import (
	"testing"

	"github.com/quotaledger/quota/ledger/object"
)

func resourceClaim(version, requests string) string {
	return `{"apiVersion":"resource.k8s.io/` + version + `","kind":"ResourceClaim","metadata":{"name":"c","namespace":"team"},` +
		`"spec":{"devices":{"requests":` + requests + `}}}`
}

// TestEvaluateResourceClaims: a ResourceClaim charges itself and, per
// DeviceClass, the devices its requests ask for, as Kubernetes' claim
// evaluator counts them (testdata/recorded/rec-dra).
func TestEvaluateResourceClaims(t *testing.T) {
	const gpu, fpga = "gpu.deviceclass.resource.k8s.io/devices", "fpga.deviceclass.resource.k8s.io/devices"
	const count = "count/resourceclaims.resource.k8s.io"
	// Each class's devices are charged again as its extended resource.
	const xgpu, xfpga = "requests.deviceclass.resource.kubernetes.io/gpu", "requests.deviceclass.resource.kubernetes.io/fpga"
	tests := []struct {
		name, claim string
		want        map[string]string
	}{
		{"an exact count",
			resourceClaim("v1", `[{"name":"r","exactly":{"deviceClassName":"gpu","allocationMode":"ExactCount","count":2}}]`),
			map[string]string{count: "1", gpu: "2", xgpu: "2"}},
		{"no count: the default, one device",
			resourceClaim("v1", `[{"name":"r","exactly":{"deviceClassName":"gpu"}}]`),
			map[string]string{count: "1", gpu: "1", xgpu: "1"}},
		{"mode All: the most one allocation holds",
			resourceClaim("v1", `[{"name":"r","exactly":{"deviceClassName":"gpu","allocationMode":"All"}}]`),
			map[string]string{count: "1", gpu: "32", xgpu: "32"}},
		{"requests of one class add up",
			resourceClaim("v1", `[{"name":"r","exactly":{"deviceClassName":"gpu","count":2}},{"name":"s","exactly":{"deviceClassName":"gpu","count":3}}]`),
			map[string]string{count: "1", gpu: "5", xgpu: "5"}},
		{"alternatives: the most any of a class asks, per class",
			resourceClaim("v1", `[{"name":"r","firstAvailable":[{"name":"a","deviceClassName":"gpu","count":1},`+
				`{"name":"b","deviceClassName":"fpga","count":2},{"name":"c","deviceClassName":"fpga","count":1}]},`+
				`{"name":"x","exactly":{"deviceClassName":"fpga","count":3}}]`),
			map[string]string{count: "1", gpu: "1", xgpu: "1", fpga: "5", xfpga: "5"}},
		{"v1beta2 has v1's shape",
			resourceClaim("v1beta2", `[{"name":"r","exactly":{"deviceClassName":"gpu","count":2}}]`),
			map[string]string{count: "1", gpu: "2", xgpu: "2"}},
		{"v1beta1 keeps an exact request's fields on the request",
			resourceClaim("v1beta1", `[{"name":"r","deviceClassName":"gpu","allocationMode":"ExactCount","count":4},`+
				`{"name":"s","firstAvailable":[{"name":"a","deviceClassName":"fpga","allocationMode":"All"}]}]`),
			map[string]string{count: "1", gpu: "4", xgpu: "4", fpga: "32", xfpga: "32"}},
		{"no requests: the claim alone", resourceClaim("v1", `[]`), map[string]string{count: "1"}},
		{"made by the scheduler for its pod: the pod is charged the extended resource",
			`{"apiVersion":"resource.k8s.io/v1","kind":"ResourceClaim","metadata":{"name":"c","namespace":"team",` +
				`"annotations":{"resource.kubernetes.io/extended-resource-claim":"true"},` +
				`"ownerReferences":[{"apiVersion":"v1","kind":"Pod","name":"web","uid":"u1","controller":true}]},` +
				`"spec":{"devices":{"requests":[{"name":"r","exactly":{"deviceClassName":"gpu","count":2}}]}}}`,
			map[string]string{count: "1", gpu: "2"}},
		{"marked, but controlled by no pod",
			`{"apiVersion":"resource.k8s.io/v1","kind":"ResourceClaim","metadata":{"name":"c","namespace":"team",` +
				`"annotations":{"resource.kubernetes.io/extended-resource-claim":"true"}},` +
				`"spec":{"devices":{"requests":[{"name":"r","exactly":{"deviceClassName":"gpu","count":2}}]}}}`,
			map[string]string{count: "1", gpu: "2", xgpu: "2"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o := decode(t, tt.claim)
			c, err := Evaluate(o, testNow)
			if err != nil {
				t.Fatal(err)
			}
			assertUsage(t, c.Usage, tt.want)
			// The trimmed form, which the projection keeps, charges the
			// same.
			b, err := o.Trimmed()
			if err != nil {
				t.Fatal(err)
			}
			back, err := object.Decode(b)
			if err != nil {
				t.Fatalf("trimmed %s: %v", b, err)
			}
			c, err = Evaluate(back, testNow)
			if err != nil {
				t.Fatal(err)
			}
			assertUsage(t, c.Usage, tt.want)
		})
	}
}

// TestClaimQuotaNames: the devices of a class are tracked, and a refusal
// names them.
func TestClaimQuotaNames(t *testing.T) {
	for name, want := range map[string]bool{
		"gpu.deviceclass.resource.k8s.io/devices":                     true,
		"count/resourceclaims.resource.k8s.io":                        true,
		".deviceclass.resource.k8s.io/devices":                        false,
		"requests.deviceclass.resource.kubernetes.io/gpu":             true,
		"gpu.deviceclass.resource.k8s.io/requests.storage":            false,
		"count/resourceclaimtemplates.resource.k8s.io":                true,
		"example.com/gpu.deviceclass.resource.k8s.io/devices.unknown": false,
	} {
		if got, _ := UsageTracked(name); got != want {
			t.Errorf("UsageTracked(%q) = %v, want %v", name, got, want)
		}
	}
	claim := decode(t, resourceClaim("v1", `[{"name":"r","exactly":{"deviceClassName":"gpu","count":3}}]`))
	q := quotaFrom(t, `{"hard":{"gpu.deviceclass.resource.k8s.io/devices":"4","count/resourceclaims.resource.k8s.io":"2"}}`)
	st := state(q, "gpu.deviceclass.resource.k8s.io/devices", "2", "count/resourceclaims.resource.k8s.io", "1")
	d := Admit(AdmitRequest{Operation: Create, Object: claim, Now: testNow, Quotas: []QuotaState{st}})
	want := `resourceclaims.resource.k8s.io "c" is forbidden: exceeded quota: q, requested: gpu.deviceclass.resource.k8s.io/devices=3, ` +
		`used: gpu.deviceclass.resource.k8s.io/devices=2, limited: gpu.deviceclass.resource.k8s.io/devices=4`
	if d.Allowed || d.Message != want {
		t.Errorf("got allowed=%v %q\nwant %q", d.Allowed, d.Message, want)
	}
}
