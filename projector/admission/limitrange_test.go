package admission

import (
	"strings"
	"testing"

	admissionv1 "k8s.io/api/admission/v1"

	"github.com/quotaledger/quota/ledger/ledgertest"
)

// TestLimitRangesRefuseBeforeQuota asks over NATS for creates and updates
// that a LimitRange of the namespace forbids: LimitRanger's 403 (or the
// API server's 422, for a request above the limit the LimitRange gave)
// comes before quota's, whether the quota would have allowed them or not,
// and a refused request reserves nothing.
func TestLimitRangesRefuseBeforeQuota(t *testing.T) {
	srv, _, js := ledgertest.StartServer(t)
	stream := ledgertest.OpenStream(t, js)
	const ns = "bounded"
	upsert(t, stream, quotaManifest(ns, "q", map[string]string{"requests.storage": "20Gi", "pods": "10"}))
	upsert(t, stream, `{"apiVersion":"v1","kind":"LimitRange","metadata":{"name":"bounds","namespace":"`+ns+`","uid":"lr1"},"spec":{"limits":[`+
		`{"type":"PersistentVolumeClaim","min":{"storage":"100Mi"},"max":{"storage":"1Gi"}},`+
		`{"type":"Container","max":{"cpu":"2"},"default":{"cpu":"2"},"defaultRequest":{"cpu":"2"}}]}}`)
	upsert(t, stream, pvcManifest(ns, "held", "1Gi", "5"))
	r := startReplica(t, srv.ClientURL(), Config{})
	r.catchUp(t)
	nc := clientConn(t, srv.ClientURL())

	for _, tc := range []struct {
		name, obj, old string
		want           string // the 403's message, "" when allowed
	}{
		{"claim over max", pvcManifest(ns, "big", "2.5Gi", ""), "",
			`persistentvolumeclaims "big" is forbidden: maximum storage usage per PersistentVolumeClaim is 1Gi, but request is 2560Mi`},
		{"claim within", pvcManifest(ns, "fits", "500Mi", ""), "", ""},
		{"claim grown past max", pvcManifest(ns, "held", "3Gi", "5"), pvcManifest(ns, "held", "1Gi", "5"),
			`persistentvolumeclaims "held" is forbidden: maximum storage usage per PersistentVolumeClaim is 1Gi, but request is 3Gi`},
		{"container over max", podManifest(ns, "hungry", "3"), "",
			`pods "hungry" is forbidden: maximum cpu usage per Container is 2, but limit is 3`},
		{"container at its defaults", podManifest(ns, "plain", ""), "", ""},
		{"a stated priority", `{"apiVersion":"v1","kind":"Pod","metadata":{"name":"eager","namespace":"` + ns + `"},"spec":{"priority":5,"containers":[{"name":"a","image":"i"}]}}`, "",
			`pods "eager" is forbidden: the integer value of priority (5) must not be provided in pod spec; priority admission controller computed 0 from the given PriorityClass name`},
		{"a stated preemption policy", `{"apiVersion":"v1","kind":"Pod","metadata":{"name":"polite","namespace":"` + ns + `"},"spec":{"preemptionPolicy":"Never","containers":[{"name":"a","image":"i"}]}}`, "",
			`pods "polite" is forbidden: the string value of PreemptionPolicy (Never) must not be provided in pod spec; priority admission controller computed PreemptLowerPriority from the given PriorityClass name`},
		{"a generated name's prefix", `{"apiVersion":"v1","kind":"Pod","metadata":{"generateName":"eager-","namespace":"` + ns + `"},"spec":{"priority":5,"containers":[{"name":"a","image":"i"}]}}`, "",
			`pods "eager-" is forbidden: the integer value of priority (5) must not be provided in pod spec; priority admission controller computed 0 from the given PriorityClass name`},
		{"a negative request", `{"apiVersion":"v1","kind":"Pod","metadata":{"name":"negative","namespace":"` + ns + `"},"spec":{"containers":[{"name":"a","image":"i","resources":{"requests":{"cpu":"-1"}}}]}}`, "",
			`Pod "negative" is invalid: spec.containers[0].resources.requests[cpu]: Invalid value: "-1": must be greater than or equal to 0`},
		{"request over the default limit", `{"apiVersion":"v1","kind":"Pod","metadata":{"name":"greedy","namespace":"` + ns + `"},"spec":{"containers":[{"name":"a","image":"i","resources":{"requests":{"cpu":"3"}}}]}}`, "",
			`Pod "greedy" is invalid: spec.containers[0].resources.requests: Invalid value: "3": must be less than or equal to cpu limit of 2`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			op := admissionv1.Create
			if tc.old != "" {
				op = admissionv1.Update
			}
			for _, dry := range []bool{true, false} {
				resp := ask(t, nc, ns, review("uid-"+tc.name, op, ns, tc.obj, tc.old, dry))
				if tc.want == "" {
					if !resp.Allowed {
						t.Fatalf("dry run %v: refused: %+v", dry, resp.Result)
					}
					continue
				}
				code, reason := int32(403), "Forbidden"
				if strings.Contains(tc.want, " is invalid: ") {
					code, reason = 422, "Invalid"
				}
				if resp.Allowed || resp.Result == nil || resp.Result.Code != code || string(resp.Result.Reason) != reason || resp.Result.Message != tc.want {
					t.Fatalf("dry run %v: got %+v, want a %d %q", dry, resp.Result, code, tc.want)
				}
			}
		})
	}
	// A pod's resize is checked by LimitRanger too, defaults and all.
	stored := strings.Replace(podManifest(ns, "running", "1"), `"name":`, `"resourceVersion":"9","name":`, 1)
	upsert(t, stream, stored)
	r.catchUp(t)
	resized := strings.Replace(stored, `"1"`, `"3"`, -1)
	body := strings.Replace(string(review("uid-resize", admissionv1.Update, ns, resized, stored, true)), `"operation":`, `"subResource":"resize","operation":`, 1)
	if resp := ask(t, nc, ns, []byte(body)); resp.Allowed || resp.Result == nil ||
		resp.Result.Message != `pods "running" is forbidden: maximum cpu usage per Container is 2, but limit is 3` {
		t.Errorf("resize past the LimitRange: got %+v", resp.Result)
	}
	// Only the two allowed creates reserved: the held claim's 1Gi, the
	// new claim's 500Mi, and one pod (and the stored pod that was to be
	// resized).
	r.catchUp(t)
	if got := r.used(t, ns, "q", "requests.storage"); got != "1524Mi" {
		t.Errorf("requests.storage used %s, want 1524Mi", got)
	}
	if got := r.used(t, ns, "q", "pods"); got != "2" {
		t.Errorf("pods used %s, want 2", got)
	}
}
