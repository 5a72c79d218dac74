package admission

import (
	"testing"

	admissionv1 "k8s.io/api/admission/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/quotaledger/quota/ledger/ledgertest"
)

// TestRuntimeClassSchedulingRefusesBeforeQuota asks over NATS for pods
// naming a RuntimeClass that was ingested from a watch event with a node
// selector: a pod selecting another value for one of its labels gets the
// RuntimeClass plugin's 403, an empty class name its plain error (a 500
// with no reason, as kube-apiserver reports it), and neither reserves; a
// pod agreeing with the class is decided by quota.
func TestRuntimeClassSchedulingRefusesBeforeQuota(t *testing.T) {
	srv, _, js := ledgertest.StartServer(t)
	stream := ledgertest.OpenStream(t, js)
	const ns = "zoned"
	ingestWatch(t, stream,
		`{"type":"ADDED","object":{"apiVersion":"node.k8s.io/v1","kind":"RuntimeClass","metadata":{"name":"gvisor","uid":"rc1","resourceVersion":"1"},"handler":"runsc","scheduling":{"nodeSelector":{"sandbox":"gvisor","zone":"b"},"tolerations":[{"key":"sandbox","operator":"Exists","effect":"NoSchedule"}]}}}`,
		`{"type":"ADDED","object":`+quotaManifest(ns, "q", map[string]string{"pods": "1"})+`}`,
	)
	r := startReplica(t, srv.ClientURL(), Config{})
	r.catchUp(t)
	nc := clientConn(t, srv.ClientURL())

	pod := func(name, spec string) string {
		return `{"apiVersion":"v1","kind":"Pod","metadata":{"name":"` + name + `","namespace":"` + ns + `"},"spec":{` + spec + `"containers":[{"name":"a","image":"i"}]}}`
	}
	for _, tc := range []struct {
		name, obj string
		code      int32
		reason    metav1.StatusReason
		want      string // the message, "" when allowed
	}{
		{"node selector against the class's", pod("elsewhere", `"runtimeClassName":"gvisor","nodeSelector":{"zone":"a"},`), 403, metav1.StatusReasonForbidden,
			`pods "elsewhere" is forbidden: conflict: runtimeClass.scheduling.nodeSelector[zone] = b; pod.spec.nodeSelector[zone] = a`},
		{"empty class name", pod("unnamed", `"runtimeClassName":"",`), 500, metav1.StatusReasonUnknown,
			`resource name may not be empty`},
		{"node selector agreeing with the class's", pod("along", `"runtimeClassName":"gvisor","nodeSelector":{"zone":"b","disk":"ssd"},`), 200, "", ""},
		{"the next pod exceeds the quota", pod("second", `"runtimeClassName":"gvisor",`), 403, metav1.StatusReasonForbidden,
			`pods "second" is forbidden: exceeded quota: q, requested: pods=1, used: pods=1, limited: pods=1`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			// A dry run first, then the real create: the agreeing pod's
			// reservation fills the quota for the case after it.
			for _, dry := range []bool{true, false} {
				resp := ask(t, nc, ns, review("uid-"+tc.name, admissionv1.Create, ns, tc.obj, "", dry))
				if tc.want == "" {
					if !resp.Allowed {
						t.Fatalf("dry run %v: refused: %+v", dry, resp.Result)
					}
					continue
				}
				if resp.Allowed || resp.Result == nil || resp.Result.Code != tc.code || resp.Result.Reason != tc.reason || resp.Result.Message != tc.want {
					t.Fatalf("dry run %v: got %+v, want a %d (%q) %q", dry, resp.Result, tc.code, tc.reason, tc.want)
				}
			}
		})
	}
}
