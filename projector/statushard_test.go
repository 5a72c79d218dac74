package projector

import (
	"encoding/json"
	"testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/quotaledger/quota/ledger"
)

// quotaOf is the event of a ResourceQuota of team-a with the given spec.
func quotaOf(name, spec string) ledger.Event {
	return upsertEvent("resourcequotas", name, json.RawMessage(
		`{"apiVersion":"v1","kind":"ResourceQuota","metadata":{"name":"`+name+`","namespace":"team-a"},"spec":`+spec+`}`))
}

func storageQuota(hard string) ledger.Event { return quotaOf("storage", `{"hard":`+hard+`}`) }

func claim(name, size string) ledger.Event {
	return upsertEvent("persistentvolumeclaims", name, json.RawMessage(
		`{"apiVersion":"v1","kind":"PersistentVolumeClaim","metadata":{"name":"`+name+`","namespace":"team-a"},`+
			`"spec":{"accessModes":["ReadWriteOnce"],"resources":{"requests":{"storage":"`+size+`"}}}}`))
}

// TestStatusHardUntilStatusWrite: the quota controller copies spec.hard
// into status.hard only when it writes status. A change of spec.hard that
// changes no value writes nothing, so status.hard keeps its strings (and
// the decisions that read it), until a recount that changes used writes
// status again. Recorded: a quota created with requests.storage 10G and
// patched to 1e10 showed 10G in status.hard while spec.hard said 10e9.
func TestStatusHardUntilStatusWrite(t *testing.T) {
	var records []ledger.Record
	p := openTemp(t)
	step := stepper(t, p, &records, 1)
	status := func() (hard, used string) {
		t.Helper()
		list, err := p.Quotas("team-a", "storage", false)
		if err != nil {
			t.Fatal(err)
		}
		q := list.Items[0]
		h, u := q.Status.Hard[corev1.ResourceRequestsStorage], q.Status.Used[corev1.ResourceRequestsStorage]
		return h.String(), u.String()
	}
	step(storageQuota(`{"requests.storage":"10G","persistentvolumeclaims":"5"}`),
		claim("a", "1Gi"), claim("b", "2G"))

	_, before := status()
	checks := []struct {
		ev        ledger.Event
		hard, why string
		// used is the figure expected, or "" for the one before.
		used string
	}{
		{storageQuota(`{"requests.storage":"1e10","persistentvolumeclaims":"5"}`), "10G",
			"the same value written anew (10e9): status is not written", ""},
		{storageQuota(`{"requests.storage":"9765625Ki","persistentvolumeclaims":"5"}`), "10G",
			"again: status still shows what was last written", ""},
		{claim("c", "1G"), "10G", "an admission writes used only", "4073741824"},
		{deleteEvent("persistentvolumeclaims", "a"), "9765625Ki", "a deletion's recount writes status, hard from spec", "3G"},
		{storageQuota(`{"requests.storage":"12G","persistentvolumeclaims":"5"}`), "12G", "a new value is written at once", "3G"},
	}
	for _, c := range checks {
		step(c.ev)
		want := c.used
		if want == "" {
			want = before
		}
		hard, used := status()
		if hard != c.hard || used != want {
			t.Errorf("%s: status.hard %s, used %s; want %s, %s", c.why, hard, used, c.hard, want)
		}
		before = used
	}

	// A namespace's decisions read the same strings.
	step(storageQuota(`{"requests.storage":"12e9","persistentvolumeclaims":"5"}`))
	st, err := p.Namespace("team-a")
	if err != nil {
		t.Fatal(err)
	}
	for _, q := range st.Quotas {
		if q.Quota.Name == "storage" {
			if got := q.Quota.Hard["requests.storage"].String(); got != "12G" {
				t.Errorf("decisions read hard %s, want 12G", got)
			}
			return
		}
	}
	t.Error("no quota storage in the namespace's state")
}

// TestSameHardDoesNotRecount: the quota controller ignores an update of a
// quota whose spec.hard keeps its values, so a stale figure stays
// (testdata/recorded/rec-same-hard).
func TestSameHardDoesNotRecount(t *testing.T) {
	var records []ledger.Record
	p := openTemp(t)
	step := stepper(t, p, &records, 1)
	svcQuota := func(hard string) ledger.Event {
		return quotaOf("svc", `{"hard":{"services.nodeports":"`+hard+`"}}`)
	}
	step(svcQuota("1k"), upsertEvent("services", "np", nodePortService("np", 3)),
		upsertEvent("services", "np", nodePortService("np", 1)))
	if got := usedIn(t, p, "svc", "services.nodeports"); got != "3" {
		t.Fatalf("after np lost two ports: %s, want 3 (no recount)", got)
	}
	step(svcQuota("1e3"))
	if got := usedIn(t, p, "svc", "services.nodeports"); got != "3" {
		t.Errorf("after hard 1k written as 1e3: %s, want 3 (the controller ignores it)", got)
	}
	step(svcQuota("2k"))
	if got := usedIn(t, p, "svc", "services.nodeports"); got != "1" {
		t.Errorf("after hard 2k: %s, want 1 (recounted)", got)
	}
}

// TestChangedScopesRecount: the API server refuses a change of a quota's
// scopes, but a log that holds one anyway has the quota recounted, hard
// unchanged or not: its figures must follow what it matches, or a later
// release would take them below zero.
func TestChangedScopesRecount(t *testing.T) {
	var records []ledger.Record
	p := openTemp(t)
	step := stepper(t, p, &records, 1)
	scoped := func(scope string) ledger.Event {
		return quotaOf("scoped", `{"hard":{"requests.cpu":"10"},"scopes":["`+scope+`"]}`)
	}
	step(scoped("NotTerminating"), upsertEvent("pods", "web", cpuPod("web", "2", false)),
		upsertEvent("pods", "batch", cpuPod("batch", "500m", true)))
	if got := usedIn(t, p, "scoped", "requests.cpu"); got != "2" {
		t.Fatalf("NotTerminating: %s, want 2", got)
	}
	step(scoped("Terminating"))
	if got := usedIn(t, p, "scoped", "requests.cpu"); got != "500m" {
		t.Errorf("scopes changed to Terminating: %s, want 500m", got)
	}
	step(deleteEvent("pods", "batch"))
	if got := usedIn(t, p, "scoped", "requests.cpu"); got != "0" {
		t.Errorf("after batch's deletion: %s, want 0", got)
	}
}
