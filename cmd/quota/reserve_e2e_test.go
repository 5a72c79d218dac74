package main

import (
	"encoding/json"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	admissionv1 "k8s.io/api/admission/v1"
)

// TestUpdateReservedEndToEnd sends a PVC expansion to `quota serve` as a
// validating webhook relay would, over quota.admit.<namespace>: the
// allowed growth shows at once in describe and explain, a create that no
// longer fits is refused with Kubernetes' message, replay --verify finds
// the rebuilt projection equal to the live one (holds included), and the
// claim's own MODIFIED event confirms the growth without counting it
// twice.
func TestUpdateReservedEndToEnd(t *testing.T) {
	s := startServer(t, t.TempDir())
	write := fileWriter(t, t.TempDir())
	s.mustRun("ingest", write("objects.yaml", `apiVersion: v1
kind: ResourceQuota
metadata:
  name: storage
  namespace: team
spec:
  hard:
    requests.storage: 10Gi
---
apiVersion: v1
kind: PersistentVolumeClaim
metadata:
  name: db
  namespace: team
  uid: 6f1c
  resourceVersion: "40"
spec:
  accessModes: [ReadWriteOnce]
  resources:
    requests:
      storage: 4Gi
`))
	// An admission reads the projection as it is: describe waits until it
	// holds everything in the log, the quota and the claim included.
	if got := describedUsed(t, s, "team", "storage", "requests.storage"); got != "4Gi" {
		t.Fatalf("before the expansion: used %s, want 4Gi", got)
	}
	claim := func(size, rv string) json.RawMessage {
		return json.RawMessage(`{"apiVersion":"v1","kind":"PersistentVolumeClaim","metadata":{"name":"db","namespace":"team","uid":"6f1c","resourceVersion":"` + rv + `"},` +
			`"spec":{"accessModes":["ReadWriteOnce"],"resources":{"requests":{"storage":"` + size + `"}}}}`)
	}
	review := map[string]any{
		"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview",
		"request": map[string]any{
			"uid": "0d9e", "namespace": "team", "operation": "UPDATE",
			"kind":   map[string]string{"group": "", "version": "v1", "kind": "PersistentVolumeClaim"},
			"object": claim("8Gi", "40"), "oldObject": claim("4Gi", "40"),
		},
	}
	body, err := json.Marshal(review)
	if err != nil {
		t.Fatal(err)
	}
	nc, err := nats.Connect(s.url)
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	msg, err := nc.Request("quota.admit.team", body, 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	var reply admissionv1.AdmissionReview
	if err := json.Unmarshal(msg.Data, &reply); err != nil {
		t.Fatalf("reply %s: %v", msg.Data, err)
	}
	if reply.Response == nil || !reply.Response.Allowed || reply.Response.UID != "0d9e" {
		t.Fatalf("expanding db to 8Gi: %s", msg.Data)
	}
	used := func() string { return describedUsed(t, s, "team", "storage", "requests.storage") }
	if got := used(); got != "8Gi" {
		t.Errorf("describe after the expansion: used %s, want 8Gi", got)
	}
	if out := s.mustRun("explain", "storage", "-n", "team"); !regexp.MustCompile(`persistentvolumeclaims/db +8Gi +\d+ +update reserved \(0d9e, expires `).MatchString(out) {
		t.Errorf("explain does not show the expansion's hold:\n%s", out)
	}
	logs := write("logs.yaml", "apiVersion: v1\nkind: PersistentVolumeClaim\nmetadata:\n  name: logs\nspec:\n  accessModes: [ReadWriteOnce]\n  resources:\n    requests:\n      storage: 3Gi\n")
	out, _, code := s.run("admit", "--dry-run", "-n", "team", "-f", logs)
	want := `persistentvolumeclaims "logs" is forbidden: exceeded quota: storage, requested: requests.storage=3Gi, used: requests.storage=8Gi, limited: requests.storage=10Gi`
	if code != 1 || strings.TrimSpace(out) != want {
		t.Errorf("a 3Gi claim beside the held growth: exit %d\n%s\nwant exit 1\n%s", code, out, want)
	}
	if out := s.mustRun("replay", "--verify"); !strings.HasPrefix(out, "no drift at seq ") {
		t.Errorf("replay --verify with a hold: %q", out)
	}
	s.mustRun("ingest", write("expanded.json", `{"type":"MODIFIED","object":`+string(claim("8Gi", "41"))+`}`+"\n"))
	if got := used(); got != "8Gi" {
		t.Errorf("describe after db's MODIFIED event: used %s, want 8Gi", got)
	}
	if out := s.mustRun("explain", "storage", "-n", "team"); strings.Contains(out, "reserved") {
		t.Errorf("the hold outlived the event that confirms it:\n%s", out)
	}
}

// TestGenerateNameReservationConfirmedEndToEnd admits a pod manifest that
// has only a generateName with `quota admit`: its reservation, under a
// placeholder name, is confirmed by the ADDED event of the pod the cluster
// created with a generated name, so the pod counts once.
func TestGenerateNameReservationConfirmedEndToEnd(t *testing.T) {
	s := startServer(t, t.TempDir())
	write := fileWriter(t, t.TempDir())
	s.mustRun("ingest", write("quota.yaml", "apiVersion: v1\nkind: ResourceQuota\nmetadata:\n  name: pods\n  namespace: team\nspec:\n  hard:\n    pods: \"5\"\n"))
	// Once describe has answered, the projection holds the quota.
	if got := describedUsed(t, s, "team", "pods", "pods"); got != "0" {
		t.Fatalf("before the admission: used pods %s, want 0", got)
	}
	manifest := "apiVersion: v1\nkind: Pod\nmetadata:\n  generateName: web-\nspec:\n  containers:\n  - name: c\n    image: registry.example/web:1\n"
	if out := s.mustRun("admit", "-n", "team", "-f", write("pod.yaml", manifest)); strings.TrimSpace(out) != "allowed" {
		t.Fatalf("admit: %q", out)
	}
	used := func() string { return describedUsed(t, s, "team", "pods", "pods") }
	if got := used(); got != "1" {
		t.Fatalf("after the admission: used pods %s, want 1", got)
	}
	if out := s.mustRun("explain", "pods", "-n", "team"); !strings.Contains(out, "pods/web-reserved-") {
		t.Fatalf("explain does not show the placeholder:\n%s", out)
	}
	created := `{"type":"ADDED","object":{"apiVersion":"v1","kind":"Pod","metadata":{"generateName":"web-","name":"web-x7k2p","namespace":"team","uid":"41d0","resourceVersion":"12"},` +
		`"spec":{"containers":[{"name":"c","image":"registry.example/web:1"}]}}}` + "\n"
	s.mustRun("ingest", write("created.json", created))
	if got := used(); got != "1" {
		t.Errorf("after the pod's ADDED event: used pods %s, want 1 (the pod, counted once)", got)
	}
	if out := s.mustRun("explain", "pods", "-n", "team"); strings.Contains(out, "reserved") || !strings.Contains(out, "pods/web-x7k2p") {
		t.Errorf("explain after the ADDED event:\n%s", out)
	}
}

// describedUsed is the used figure of resource in quota name of
// namespace, as `quota describe` prints it.
func describedUsed(t testing.TB, s *ledgerProc, namespace, name, resource string) string {
	t.Helper()
	line := regexp.MustCompile(`(?m)^` + regexp.QuoteMeta(resource) + `\s+(\S+)\s+\S+$`)
	m := line.FindStringSubmatch(s.mustRun("describe", name, "-n", namespace))
	if m == nil {
		t.Fatalf("describe %s/%s shows no %s line", namespace, name, resource)
	}
	return m[1]
}
