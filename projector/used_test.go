package projector

import (
	"os"
	"path/filepath"
	"testing"

	corev1 "k8s.io/api/core/v1"
)

// TestUsedHoldsWhatKubernetesTracks holds status.used to the names the
// quota controller computes: a bare extended resource, an event count and
// the count of a resource no cluster serves are valid in spec.hard but
// absent from used; a custom resource's count shows once something is
// counted. Events are never charged.
func TestUsedHoldsWhatKubernetesTracks(t *testing.T) {
	const events = `{"type":"ADDED","object":{"apiVersion":"v1","kind":"ResourceQuota","metadata":{"name":"mixed","namespace":"gpu","uid":"q1","resourceVersion":"1"},"spec":{"hard":{"pods":"5","nvidia.com/gpu":"2","limits.nvidia.com/gpu":"2","requests.nvidia.com/gpu":"2","count/events":"1","count/events.events.k8s.io":"1","count/foos.apps":"1","count/deployments.apps":"2","count/widgets.example.com":"3","count/gadgets.example.com":"3"}}}}
{"type":"ADDED","object":{"apiVersion":"v1","kind":"Pod","metadata":{"name":"trainer","namespace":"gpu","uid":"p1","resourceVersion":"2"},"spec":{"containers":[{"name":"c","image":"x","resources":{"limits":{"nvidia.com/gpu":"1"},"requests":{"nvidia.com/gpu":"1"}}}]}}}
{"type":"ADDED","object":{"apiVersion":"v1","kind":"Event","metadata":{"name":"trainer.1","namespace":"gpu","uid":"e1","resourceVersion":"3"},"reason":"Scheduled"}}
{"type":"ADDED","object":{"apiVersion":"example.com/v1","kind":"Gadget","metadata":{"name":"g","namespace":"gpu","uid":"g1","resourceVersion":"4"}}}
`
	file := filepath.Join(t.TempDir(), "events.jsonl")
	if err := os.WriteFile(file, []byte(events), 0o644); err != nil {
		t.Fatal(err)
	}
	p := openTemp(t)
	applyAll(t, p, watchRecords(t, 0, file), 10)
	list, err := p.Quotas("gpu", "", false)
	if err != nil {
		t.Fatal(err)
	}
	if len(list.Items) != 1 {
		t.Fatalf("%d quotas, want 1", len(list.Items))
	}
	st := list.Items[0].Status
	want := map[corev1.ResourceName]string{
		"pods":                      "1",
		"requests.nvidia.com/gpu":   "1",
		"count/deployments.apps":    "0",
		"count/gadgets.example.com": "1",
	}
	if len(st.Used) != len(want) {
		t.Errorf("used %v, want %v", st.Used, want)
	}
	for name, v := range want {
		if got, ok := st.Used[name]; !ok || got.String() != v {
			t.Errorf("used[%s] = %s (present %v), want %s", name, got.String(), ok, v)
		}
	}
	if len(st.Hard) != 10 {
		t.Errorf("hard has %d names, want all 10 of spec.hard: %v", len(st.Hard), st.Hard)
	}
}

// TestUsedIsARunningTotal follows a quota through an increase, added in
// the running figure's format as admission adds it, then a deletion of
// another kind: requests.storage, built up as 1G and then 2Gi less 1G,
// prints 2147483648 before and after. (Kubernetes' recount after the
// deletion reprints it as a fresh sum, 2Gi.)
func TestUsedIsARunningTotal(t *testing.T) {
	const events = `{"type":"ADDED","object":{"apiVersion":"v1","kind":"ResourceQuota","metadata":{"name":"q","namespace":"team","uid":"q1","resourceVersion":"1"},"spec":{"hard":{"requests.storage":"100Gi","count/configmaps":"10"}}}}
{"type":"ADDED","object":{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"cm1","namespace":"team","uid":"c1","resourceVersion":"2"}}}
{"type":"ADDED","object":{"apiVersion":"v1","kind":"PersistentVolumeClaim","metadata":{"name":"v1","namespace":"team","uid":"v1","resourceVersion":"3"},"spec":{"accessModes":["ReadWriteOnce"],"resources":{"requests":{"storage":"1G"}}}}}
{"type":"MODIFIED","object":{"apiVersion":"v1","kind":"PersistentVolumeClaim","metadata":{"name":"v1","namespace":"team","uid":"v1","resourceVersion":"4"},"spec":{"accessModes":["ReadWriteOnce"],"resources":{"requests":{"storage":"2Gi"}}}}}
{"type":"DELETED","object":{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"cm1","namespace":"team","uid":"c1","resourceVersion":"5"}}}
`
	file := filepath.Join(t.TempDir(), "events.jsonl")
	if err := os.WriteFile(file, []byte(events), 0o644); err != nil {
		t.Fatal(err)
	}
	records := watchRecords(t, 0, file)
	p := openTemp(t)
	storage := func() string {
		t.Helper()
		list, err := p.Quotas("team", "q", false)
		if err != nil {
			t.Fatal(err)
		}
		v := list.Items[0].Status.Used["requests.storage"]
		return v.String()
	}
	applyAll(t, p, records[:4], 1)
	if got := storage(); got != "2147483648" {
		t.Errorf("after the claim grew: requests.storage %s, want 2147483648 (1G plus the increase)", got)
	}
	applyAll(t, p, records[4:], 1)
	// Kubernetes' recount after the deletion prints a fresh sum, 2Gi; the
	// ledger's figure is a running total and keeps its format.
	if got := storage(); got != "2147483648" {
		t.Errorf("after the deletion: requests.storage %s, want 2147483648", got)
	}
}
