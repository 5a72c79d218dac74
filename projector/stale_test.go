package projector

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/quotaledger/quota/ledger"
)

func nodePortService(name string, ports int) json.RawMessage {
	var ps []string
	for i := range ports {
		ps = append(ps, `{"name":"p`+string(rune('a'+i))+`","port":`+string(rune('1'+i))+`}`)
	}
	return json.RawMessage(`{"apiVersion":"v1","kind":"Service","metadata":{"name":"` + name + `","namespace":"team-a"},` +
		`"spec":{"type":"NodePort","ports":[` + strings.Join(ps, ",") + `]}}`)
}

func cpuPod(name, cpu string, deadline bool) json.RawMessage {
	spec := `"containers":[{"name":"app","resources":{"requests":{"cpu":"` + cpu + `"}}}]`
	if deadline {
		spec += `,"activeDeadlineSeconds":60`
	}
	return json.RawMessage(`{"apiVersion":"v1","kind":"Pod","metadata":{"name":"` + name + `","namespace":"team-a"},"spec":{` + spec + `}}`)
}

// TestStaleUntilRecount: an update that lowers a charge without the quota
// controller recounting (a NodePort service losing a port, a pod resized
// down) leaves the quota's figure where it was, as Kubernetes does, until
// an event that makes it recount: a deletion of an object of a kind the
// quota tracks, a pod moving between the Terminating scopes, a service
// changing type, any claim update, a change of the quota's spec.
func TestStaleUntilRecount(t *testing.T) {
	var records []ledger.Record
	record := teamARecorder(&records, time.Date(2026, 11, 22, 3, 0, 0, 0, time.UTC))
	p := openTemp(t)
	step := func(evs ...ledger.Event) {
		t.Helper()
		from := len(records)
		for _, ev := range evs {
			record(ev)
		}
		applyAll(t, p, records[from:], 1)
	}
	used := func(quotaName, resource string) string {
		t.Helper()
		list, err := p.Quotas("team-a", quotaName, false)
		if err != nil {
			t.Fatal(err)
		}
		v := list.Items[0].Status.Used[corev1.ResourceName(resource)]
		return v.String()
	}
	step(upsertEvent("resourcequotas", "svc", json.RawMessage(
		`{"apiVersion":"v1","kind":"ResourceQuota","metadata":{"name":"svc","namespace":"team-a"},"spec":{"hard":{"services.nodeports":"10","configmaps":"5"}}}`)),
		upsertEvent("resourcequotas", "cpu", json.RawMessage(
			`{"apiVersion":"v1","kind":"ResourceQuota","metadata":{"name":"cpu","namespace":"team-a"},"spec":{"hard":{"requests.cpu":"10"}}}`)),
		upsertEvent("services", "np", nodePortService("np", 3)),
		upsertEvent("services", "other", nodePortService("other", 1)),
		upsertEvent("configmaps", "cm", json.RawMessage(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"cm","namespace":"team-a"}}`)),
		upsertEvent("pods", "web", cpuPod("web", "2", false)))
	if got := used("svc", "services.nodeports"); got != "4" {
		t.Fatalf("node ports %s, want 4", got)
	}

	step(upsertEvent("services", "np", nodePortService("np", 1)))
	if got := used("svc", "services.nodeports"); got != "4" {
		t.Errorf("after np lost two ports: %s, want 4 (no recount)", got)
	}
	var buf bytes.Buffer
	e, err := p.Explain("team-a", "svc")
	if err != nil {
		t.Fatal(err)
	}
	if err := WriteExplain(&buf, e); err != nil {
		t.Fatal(err)
	}
	if want := "services.nodeports: used 4 of 10\n  (the charges below sum to 2: an update changed one"; !strings.Contains(buf.String(), want) {
		t.Errorf("explain:\n%s\nwant it to contain\n%s", buf.String(), want)
	}
	step(upsertEvent("services", "other", nodePortService("other", 2)))
	if got := used("svc", "services.nodeports"); got != "5" {
		t.Errorf("after other gained a port: %s, want 5 (admission adds the growth)", got)
	}
	// A deletion of a configmap recounts the quota: it tracks configmaps.
	step(deleteEvent("configmaps", "cm"))
	if got := used("svc", "services.nodeports"); got != "3" {
		t.Errorf("after a configmap's deletion: %s, want 3 (recounted)", got)
	}

	// A pod resized down: no recount until the pod moves into the
	// Terminating scope.
	step(upsertEvent("pods", "web", cpuPod("web", "500m", false)))
	if got := used("cpu", "requests.cpu"); got != "2" {
		t.Errorf("after web was resized down: %s, want 2 (no recount)", got)
	}
	// A service's deletion does not recount a quota of pods.
	step(deleteEvent("services", "other"))
	if got := used("cpu", "requests.cpu"); got != "2" {
		t.Errorf("after a service's deletion: %s, want 2", got)
	}
	step(upsertEvent("pods", "web", cpuPod("web", "500m", true)))
	if got := used("cpu", "requests.cpu"); got != "500m" {
		t.Errorf("after web took a deadline: %s, want 500m (recounted)", got)
	}

	// A service's type change recounts.
	step(upsertEvent("services", "np", nodePortService("np", 3)))
	step(upsertEvent("services", "np", nodePortService("np", 2)))
	if got := used("svc", "services.nodeports"); got != "3" {
		t.Fatalf("np at two ports: %s, want 3", got)
	}
	step(upsertEvent("services", "np", json.RawMessage(`{"apiVersion":"v1","kind":"Service","metadata":{"name":"np","namespace":"team-a"},`+
		`"spec":{"type":"ClusterIP","ports":[{"name":"pa","port":1}]}}`)))
	if got := used("svc", "services.nodeports"); got != "0" {
		t.Errorf("after np became a ClusterIP: %s, want 0", got)
	}

	// A replay of the same log in one batch ends the same.
	q := openTemp(t)
	applyAll(t, q, records, len(records))
	if a, b := quotaStrings(t, p), quotaStrings(t, q); a != b {
		t.Errorf("event by event:\n%s\nin one batch:\n%s", a, b)
	}
}

func quotaStrings(t testing.TB, p *Projector) string {
	t.Helper()
	list, err := p.Quotas("team-a", "", false)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := json.Marshal(list.Items)
	return string(b)
}

// TestStatusGrowthNotCharged: a pod's status reporting resources beyond
// its spec raises its charge, but Kubernetes' admission does not see a
// status update and its controller recounts only when a container status
// it had already seen changes its resources.
func TestStatusGrowthNotCharged(t *testing.T) {
	var records []ledger.Record
	record := teamARecorder(&records, time.Date(2026, 11, 22, 3, 0, 0, 0, time.UTC))
	withStatus := func(cpu string) json.RawMessage {
		return json.RawMessage(`{"apiVersion":"v1","kind":"Pod","metadata":{"name":"web","namespace":"team-a"},` +
			`"spec":{"nodeName":"node-a","containers":[{"name":"app","resources":{"requests":{"cpu":"500m"}}}]},` +
			`"status":{"phase":"Running","containerStatuses":[{"name":"app","allocatedResources":{"cpu":"` + cpu + `"},` +
			`"resources":{"requests":{"cpu":"` + cpu + `"}}}]}}`)
	}
	record(upsertEvent("resourcequotas", "cpu", json.RawMessage(
		`{"apiVersion":"v1","kind":"ResourceQuota","metadata":{"name":"cpu","namespace":"team-a"},"spec":{"hard":{"requests.cpu":"10"}}}`)))
	record(upsertEvent("pods", "web", cpuPod("web", "500m", false)))
	record(upsertEvent("pods", "web", withStatus("1500m")))
	p := openTemp(t)
	applyAll(t, p, records, 1)
	cpu := func() string {
		t.Helper()
		list, err := p.Quotas("team-a", "cpu", false)
		if err != nil {
			t.Fatal(err)
		}
		v := list.Items[0].Status.Used["requests.cpu"]
		return v.String()
	}
	if got := cpu(); got != "500m" {
		t.Errorf("after the first status: %s, want 500m (neither charged nor recounted)", got)
	}
	record(upsertEvent("pods", "web", withStatus("1200m")))
	applyAll(t, p, records[len(records)-1:], 1)
	if got := cpu(); got != "1200m" {
		t.Errorf("after a status change: %s, want 1200m (recounted)", got)
	}
}
