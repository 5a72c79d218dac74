package projector

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

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
	p := openTemp(t)
	step := stepper(t, p, &records, 1)
	used := func(quotaName, resource string) string {
		t.Helper()
		return usedIn(t, p, quotaName, resource)
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

	checks := []struct {
		ev                    ledger.Event
		quota, resource, want string
		why                   string
	}{
		{upsertEvent("services", "np", nodePortService("np", 1)), "svc", "services.nodeports", "4", "np lost two ports: no recount"},
		{upsertEvent("services", "other", nodePortService("other", 2)), "svc", "services.nodeports", "5", "other gained a port: admission adds it"},
		// The quota tracks configmaps: a configmap's deletion recounts it.
		{deleteEvent("configmaps", "cm"), "svc", "services.nodeports", "3", "a configmap's deletion: recounted"},
		{upsertEvent("pods", "web", cpuPod("web", "500m", false)), "cpu", "requests.cpu", "2", "web resized down: no recount"},
		{deleteEvent("services", "other"), "cpu", "requests.cpu", "2", "a service's deletion does not recount a quota of pods"},
		{upsertEvent("pods", "web", cpuPod("web", "500m", true)), "cpu", "requests.cpu", "500m", "web took a deadline: recounted"},
	}
	for i, c := range checks {
		step(c.ev)
		if got := used(c.quota, c.resource); got != c.want {
			t.Errorf("%s: %s %s, want %s", c.why, c.quota, got, c.want)
		}
		if i != 0 {
			continue
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

	// A create is charged at admission and recounts nothing: a stale
	// figure stays stale.
	step(upsertEvent("services", "np", nodePortService("np", 2)))
	step(upsertEvent("services", "np", nodePortService("np", 1)))
	step(upsertEvent("services", "late", nodePortService("late", 1)))
	if got := used("svc", "services.nodeports"); got != "3" {
		t.Errorf("after np lost a port and late was created: %s, want 3 (2 kept, 1 added)", got)
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
	p := openTemp(t)
	step := stepper(t, p, &records, 1)
	withStatus := func(cpu string) json.RawMessage {
		return json.RawMessage(`{"apiVersion":"v1","kind":"Pod","metadata":{"name":"web","namespace":"team-a"},` +
			`"spec":{"nodeName":"node-a","containers":[{"name":"app","resources":{"requests":{"cpu":"500m"}}}]},` +
			`"status":{"phase":"Running","containerStatuses":[{"name":"app","allocatedResources":{"cpu":"` + cpu + `"},` +
			`"resources":{"requests":{"cpu":"` + cpu + `"}}}]}}`)
	}
	step(upsertEvent("resourcequotas", "cpu", json.RawMessage(
		`{"apiVersion":"v1","kind":"ResourceQuota","metadata":{"name":"cpu","namespace":"team-a"},"spec":{"hard":{"requests.cpu":"10"}}}`)),
		upsertEvent("pods", "web", cpuPod("web", "500m", false)),
		upsertEvent("pods", "web", withStatus("1500m")))
	if got := usedIn(t, p, "cpu", "requests.cpu"); got != "500m" {
		t.Errorf("after the first status: %s, want 500m (neither charged nor recounted)", got)
	}
	step(upsertEvent("pods", "web", withStatus("1200m")))
	if got := usedIn(t, p, "cpu", "requests.cpu"); got != "1200m" {
		t.Errorf("after a status change: %s, want 1200m (recounted)", got)
	}
}

// usedIn prints a figure of one of team-a's quotas.
func usedIn(t testing.TB, p *Projector, quotaName, resource string) string {
	t.Helper()
	list, err := p.Quotas("team-a", quotaName, false)
	if err != nil {
		t.Fatal(err)
	}
	if len(list.Items) != 1 {
		t.Fatalf("quota %s: %d items", quotaName, len(list.Items))
	}
	v := list.Items[0].Status.Used[corev1.ResourceName(resource)]
	return v.String()
}
