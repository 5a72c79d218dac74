package admission

import (
	"context"
	"strings"
	"testing"

	admissionv1 "k8s.io/api/admission/v1"

	"github.com/quotaledger/quota/ledger/ledgertest"
)

// TestMalformedRequestsGetABadRequestReply sends requests that are not
// usable AdmissionReviews: each gets an AdmissionReview back with code 400
// and a message naming the problem, never silence.
func TestMalformedRequestsGetABadRequestReply(t *testing.T) {
	srv, _, js := ledgertest.StartServer(t)
	stream := ledgertest.OpenStream(t, js)
	upsert(t, stream, quotaManifest("team", "q", map[string]string{"pods": "5"}))
	r := startReplica(t, srv.ClientURL(), Config{})
	r.catchUp(t)
	pod := podManifest("team", "web-1", "")
	cases := []struct {
		name    string
		subject string
		body    string
		uid     string
		message string
	}{
		{name: "body that is not JSON", subject: "team", body: "pods please", message: "bad admission request"},
		{name: "review without a request", subject: "team", body: `{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview"}`, message: "request is missing"},
		{name: "object that is not a Kubernetes object", subject: "team", uid: "u1",
			body: string(review("u1", admissionv1.Create, "team", `{"kind":5}`, "", false)), message: "object"},
		{name: "create without an object", subject: "team", uid: "u2",
			body: string(review("u2", admissionv1.Create, "team", "", "", false)), message: "object: missing"},
		{name: "request namespace differs from the subject", subject: "team", uid: "u3",
			body: string(review("u3", admissionv1.Create, "other", pod, "", false)), message: `request namespace "other" on the subject of namespace "team"`},
		{name: "object namespace differs from the subject", subject: "team", uid: "u4",
			body: string(review("u4", admissionv1.Create, "", podManifest("other", "web-1", ""), "", false)), message: `object namespace "other" differs from "team"`},
		{name: "unknown operation", subject: "team", uid: "u5",
			body: string(review("u5", "PATCH", "team", pod, "", false)), message: `unknown operation "PATCH"`},
		{name: "update without an old object", subject: "team", uid: "u6",
			body: string(review("u6", admissionv1.Update, "team", pod, "", false)), message: "UPDATE without oldObject"},
		{name: "subject naming no namespace Kubernetes allows", subject: "Team", uid: "u8",
			body: string(review("u8", admissionv1.Create, "", podManifest("Team", "web-1", ""), "", true)), message: `subject names no valid namespace: namespace "Team" is not a DNS label`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			resp := ask(t, r.client, tc.subject, []byte(tc.body))
			if resp.Allowed || resp.Result == nil || resp.Result.Code != 400 || resp.Result.Reason != "BadRequest" {
				t.Fatalf("got %+v, want a 400 BadRequest", resp.Result)
			}
			if !strings.Contains(resp.Result.Message, tc.message) {
				t.Errorf("got message %q, want it to contain %q", resp.Result.Message, tc.message)
			}
			if string(resp.UID) != tc.uid {
				t.Errorf("got uid %q, want %q", resp.UID, tc.uid)
			}
		})
	}
}

// TestOperationsChargeWhatKubernetesCharges checks the verdicts of the
// operations other than a plain create: DELETE is always allowed, an
// UPDATE is charged only its increase, and reserves it when it is allowed
// and grows the object, and a CONNECT is not quota's business.
func TestOperationsChargeWhatKubernetesCharges(t *testing.T) {
	srv, _, js := ledgertest.StartServer(t)
	stream := ledgertest.OpenStream(t, js)
	const ns = "data"
	upsert(t, stream, quotaManifest(ns, "storage", map[string]string{"requests.storage": "10Gi", "persistentvolumeclaims": "1"}))
	pvc := func(size string) string {
		return `{"apiVersion":"v1","kind":"PersistentVolumeClaim","metadata":{"name":"db","namespace":"data"},` +
			`"spec":{"accessModes":["ReadWriteOnce"],"resources":{"requests":{"storage":"` + size + `"}}}}`
	}
	// An UPDATE's oldObject is the stored object, with its resourceVersion:
	// without one Kubernetes cannot tell the update from a create and
	// charges it in full.
	stored := func(size string) string {
		return strings.Replace(pvc(size), `"namespace":"data"`, `"namespace":"data","resourceVersion":"41"`, 1)
	}
	upsert(t, stream, stored("4Gi"))
	r := startReplica(t, srv.ClientURL(), Config{})
	r.catchUp(t)
	cases := []struct {
		name    string
		op      admissionv1.Operation
		obj     string
		old     string
		allowed bool
		message string
		// reserves says the request appends a reservation.
		reserves bool
	}{
		{name: "growth past the limit is charged only its increase", op: admissionv1.Update, obj: pvc("12Gi"), old: stored("4Gi"),
			message: `persistentvolumeclaims "db" is forbidden: exceeded quota: storage, requested: requests.storage=8Gi, used: requests.storage=4Gi, limited: requests.storage=10Gi`},
		{name: "an update that does not grow is allowed", op: admissionv1.Update, obj: pvc("4Gi"), old: stored("4Gi"), allowed: true},
		{name: "an update whose old object has no resourceVersion is charged in full", op: admissionv1.Update, obj: pvc("4Gi"), old: pvc("4Gi"),
			message: `persistentvolumeclaims "db" is forbidden: exceeded quota: storage, requested: persistentvolumeclaims=1, used: persistentvolumeclaims=1, limited: persistentvolumeclaims=1`},
		{name: "a second claim exceeds the claim count", op: admissionv1.Create, obj: strings.Replace(pvc("1Gi"), `"db"`, `"logs"`, 1),
			message: `persistentvolumeclaims "logs" is forbidden: exceeded quota: storage, requested: persistentvolumeclaims=1, used: persistentvolumeclaims=1, limited: persistentvolumeclaims=1`},
		{name: "delete is always allowed", op: admissionv1.Delete, old: stored("4Gi"), allowed: true},
		{name: "connect is always allowed", op: admissionv1.Connect, allowed: true},
		{name: "growth that fits is allowed and reserved", op: admissionv1.Update, obj: pvc("8Gi"), old: stored("4Gi"), allowed: true, reserves: true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			before, err := stream.LastSeq(t.Context())
			if err != nil {
				t.Fatal(err)
			}
			resp := ask(t, r.client, ns, review("uid", tc.op, ns, tc.obj, tc.old, false))
			if resp.Allowed != tc.allowed {
				t.Fatalf("got allowed=%v %+v, want allowed=%v", resp.Allowed, resp.Result, tc.allowed)
			}
			if !tc.allowed && (resp.Result == nil || resp.Result.Code != 403 || resp.Result.Message != tc.message) {
				t.Errorf("got %+v, want 403 %q", resp.Result, tc.message)
			}
			after, err := stream.LastSeq(t.Context())
			if err != nil {
				t.Fatal(err)
			}
			if want := before + map[bool]uint64{true: 1}[tc.reserves]; after != want {
				t.Errorf("the stream moved from seq %d to %d, want %d", before, after, want)
			}
		})
	}
	if got := r.used(t, ns, "storage", "requests.storage"); got != "8Gi" {
		t.Errorf("got used requests.storage=%s, want 8Gi: the growth reserved", got)
	}
}

// TestClusterScopedObjectsAreAllowed offers objects outside every
// namespace: Kubernetes' quota admission passes them, so the ledger allows
// them, says why in a warning, and appends nothing.
func TestClusterScopedObjectsAreAllowed(t *testing.T) {
	srv, _, js := ledgertest.StartServer(t)
	stream := ledgertest.OpenStream(t, js)
	upsert(t, stream, quotaManifest("team", "q", map[string]string{"pods": "0", "count/storageclasses.storage.k8s.io": "0"}))
	r := startReplica(t, srv.ClientURL(), Config{})
	r.catchUp(t)
	before, err := stream.LastSeq(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	for _, obj := range []string{
		`{"apiVersion":"v1","kind":"Namespace","metadata":{"name":"x"}}`,
		`{"apiVersion":"storage.k8s.io/v1","kind":"StorageClass","metadata":{"name":"fast"},"provisioner":"example.com/disk"}`,
	} {
		for _, dryRun := range []bool{true, false} {
			resp := ask(t, r.client, "team", review("u1", admissionv1.Create, "team", obj, "", dryRun))
			if !resp.Allowed || len(resp.Warnings) != 1 || !strings.Contains(resp.Warnings[0], "cluster-scoped") {
				t.Errorf("%s (dry run %v): allowed %v, warnings %q; want allowed with a warning that it is cluster-scoped", obj, dryRun, resp.Allowed, resp.Warnings)
			}
		}
	}
	if after, err := stream.LastSeq(context.Background()); err != nil || after != before {
		t.Errorf("the stream went from seq %d to %d (%v): a cluster-scoped admission appended", before, after, err)
	}
}
