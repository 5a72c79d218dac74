package projector

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/quotaledger/quota/ledger"
)

// deletedPod is a pod of team-a deleted at the given moment with a grace
// period; scheduled pods keep one, and no kubelet ends them.
func deletedPod(name, cpu string, at time.Time, grace int) json.RawMessage {
	return json.RawMessage(fmt.Sprintf(`{"apiVersion":"v1","kind":"Pod","metadata":{"name":%q,"namespace":"team-a",`+
		`"deletionTimestamp":%q,"deletionGracePeriodSeconds":%d},"spec":{"nodeName":"node-a","containers":[{"name":"app",`+
		`"resources":{"requests":{"cpu":%q}}}]}}`, name, at.Add(time.Duration(grace)*time.Second).Format(time.RFC3339), grace, cpu))
}

// TestOverduePodsDroppedAtARecount: a pod stuck terminating counts until
// Kubernetes' next recount after its deletionTimestamp plus grace period;
// the deletion of another pod sets one off, dated by that deletion.
func TestOverduePodsDroppedAtARecount(t *testing.T) {
	t0 := time.Date(2026, 11, 22, 20, 41, 44, 0, time.UTC)
	for _, tt := range []struct {
		name       string
		otherAfter time.Duration
		wantPods   string
		wantCPU    string
	}{
		// stuck: deleted at t0 with 2 s of grace, so its deletionTimestamp
		// is t0+2s and Kubernetes drops it from t0+4s.
		{"a deletion after the deadline", 8 * time.Second, "1", "200m"},
		{"a deletion before the deadline", 3 * time.Second, "2", "700m"},
		// Recorded (rec-term-3): timestamps are whole seconds, and the
		// recount comes after the deletion that dates it, so a deletion
		// stamped with the deadline's second comes after the deadline.
		{"a deletion in the deadline's second", 4 * time.Second, "1", "200m"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var records []ledger.Record
			// The stream times are a day later: a recording ingested late.
			record := teamARecorder(&records, t0.Add(24*time.Hour))
			record(upsertEvent("resourcequotas", "compute", json.RawMessage(
				`{"apiVersion":"v1","kind":"ResourceQuota","metadata":{"name":"compute","namespace":"team-a"},"spec":{"hard":{"pods":"5","requests.cpu":"2","count/pods":"5"}}}`)))
			record(upsertEvent("pods", "stuck", cpuPod("stuck", "500m", false)))
			record(upsertEvent("pods", "other", cpuPod("other", "100m", false)))
			record(upsertEvent("pods", "keep", cpuPod("keep", "200m", false)))
			record(upsertEvent("pods", "stuck", deletedPod("stuck", "500m", t0, 2)))
			record(upsertEvent("pods", "other", deletedPod("other", "100m", t0.Add(tt.otherAfter), 0)))
			record(deleteEvent("pods", "other"))
			p, used := computeUsed(t, records, tt.wantPods, tt.wantCPU)
			if got := used["count/pods"]; got.String() != "2" {
				t.Errorf("count/pods %s, want 2 (stuck and keep are stored)", got.String())
			}
			q := openTemp(t)
			applyAll(t, q, records, len(records))
			if a, b := quotaStrings(t, p), quotaStrings(t, q); a != b {
				t.Errorf("event by event:\n%s\nin one batch:\n%s", a, b)
			}
		})
	}
}

// endedPod is a pod of team-a the API server last wrote at the given
// moment, setting its phase to Failed.
func endedPod(name, cpu string, at time.Time) json.RawMessage {
	return json.RawMessage(fmt.Sprintf(`{"apiVersion":"v1","kind":"Pod","metadata":{"name":%q,"namespace":"team-a",`+
		`"managedFields":[{"manager":"kubectl","operation":"Update","time":%q},{"manager":"kubelet","operation":"Update","subresource":"status","time":%q}]},`+
		`"spec":{"nodeName":"node-a","containers":[{"name":"app","resources":{"requests":{"cpu":%q}}}]},"status":{"phase":"Failed"}}`,
		name, at.Add(-time.Minute).Format(time.RFC3339), at.Format(time.RFC3339), cpu))
}

// TestOverduePodsDroppedAtAPodsEnd: the end of another pod makes
// Kubernetes recount too, at a moment no deletion dates; the latest time
// in the ended pod's managedFields, its write, does (rec-term-phase).
func TestOverduePodsDroppedAtAPodsEnd(t *testing.T) {
	t0 := time.Date(2026, 11, 23, 0, 12, 15, 0, time.UTC)
	for _, tt := range []struct {
		name       string
		endedAfter time.Duration
		wantPods   string
		wantCPU    string
	}{
		// stuck: deleted at t0 with 2 s of grace; overdue from t0+4s.
		{"an end after the deadline", 10 * time.Second, "1", "200m"},
		{"an end before the deadline", 3 * time.Second, "2", "700m"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var records []ledger.Record
			record := teamARecorder(&records, t0.Add(24*time.Hour))
			record(upsertEvent("resourcequotas", "compute", json.RawMessage(
				`{"apiVersion":"v1","kind":"ResourceQuota","metadata":{"name":"compute","namespace":"team-a"},"spec":{"hard":{"pods":"5","requests.cpu":"2"}}}`)))
			record(upsertEvent("pods", "stuck", cpuPod("stuck", "500m", false)))
			record(upsertEvent("pods", "ends", cpuPod("ends", "100m", false)))
			record(upsertEvent("pods", "keep", cpuPod("keep", "200m", false)))
			record(upsertEvent("pods", "stuck", deletedPod("stuck", "500m", t0, 2)))
			record(upsertEvent("pods", "ends", endedPod("ends", "100m", t0.Add(tt.endedAfter))))
			computeUsed(t, records, tt.wantPods, tt.wantCPU)
		})
	}
}

// computeUsed applies records one at a time to a new projection and
// checks the pods and requests.cpu its quota compute uses; it returns the
// projection and the whole of compute's usage.
func computeUsed(t *testing.T, records []ledger.Record, wantPods, wantCPU string) (*Projector, corev1.ResourceList) {
	t.Helper()
	p := openTemp(t)
	applyAll(t, p, records, 1)
	list, err := p.Quotas("team-a", "compute", false)
	if err != nil {
		t.Fatal(err)
	}
	used := list.Items[0].Status.Used
	if got := used["pods"]; got.String() != wantPods {
		t.Errorf("pods %s, want %s", got.String(), wantPods)
	}
	if got := used["requests.cpu"]; got.String() != wantCPU {
		t.Errorf("requests.cpu %s, want %s", got.String(), wantCPU)
	}
	return p, used
}

// TestDeadlinesMigrate: a schema 4 file has the deadlines of its pods
// being deleted noted when opened.
func TestDeadlinesMigrate(t *testing.T) {
	t0 := time.Date(2026, 11, 22, 20, 41, 44, 0, time.UTC)
	var records []ledger.Record
	record := teamARecorder(&records, t0.Add(time.Minute))
	record(upsertEvent("resourcequotas", "compute", json.RawMessage(
		`{"apiVersion":"v1","kind":"ResourceQuota","metadata":{"name":"compute","namespace":"team-a"},"spec":{"hard":{"pods":"5"}}}`)))
	record(upsertEvent("pods", "stuck", deletedPod("stuck", "500m", t0, 2)))
	record(upsertEvent("pods", "other", cpuPod("other", "100m", false)))
	path := filepath.Join(t.TempDir(), "projection.db")
	p, err := Open(Config{Path: path, NoSync: true}, nil)
	if err != nil {
		t.Fatal(err)
	}
	applyAll(t, p, records, 1)
	p = downgrade(t, p, path, bucketDeadlines, 4)
	defer p.Close()
	record(upsertEvent("pods", "other", deletedPod("other", "100m", t0.Add(10*time.Second), 0)))
	applyAll(t, p, records[len(records)-1:], 1)
	list, err := p.Quotas("team-a", "compute", false)
	if err != nil {
		t.Fatal(err)
	}
	if got := list.Items[0].Status.Used["pods"]; got.String() != "0" {
		t.Errorf("pods %s, want 0: stuck is overdue, other deleted", got.String())
	}
	checkConsistent(t, p)
}

// writtenQuota is a quota of team-a last written at the given moment.
func writtenQuota(name, hard string, at time.Time) json.RawMessage {
	return json.RawMessage(fmt.Sprintf(`{"apiVersion":"v1","kind":"ResourceQuota","metadata":{"name":%q,"namespace":"team-a",`+
		`"managedFields":[{"manager":"kubectl","operation":"Update","time":%q}]},"spec":{"hard":%s}}`,
		name, at.Format(time.RFC3339), hard))
}

// quotaUsed returns the pods and requests.cpu a quota of team-a uses, as
// "pods/cpu".
func quotaUsed(t *testing.T, p *Projector, name string) string {
	t.Helper()
	list, err := p.Quotas("team-a", name, false)
	if err != nil {
		t.Fatal(err)
	}
	used := list.Items[0].Status.Used
	pods, cpu := used["pods"], used["requests.cpu"]
	return pods.String() + "/" + cpu.String()
}

// TestQuotaChangeRecountsItAlone: a change of a quota's hard makes
// Kubernetes recount that quota alone, so a pod stuck terminating past its
// deadline leaves it and still counts in the others, until a recount of
// theirs; the quota's own write dates the recount (rec-quota-recount). A
// quota created then counts without the pod from the start.
func TestQuotaChangeRecountsItAlone(t *testing.T) {
	t0 := time.Date(2026, 11, 23, 1, 38, 10, 0, time.UTC)
	for _, tt := range []struct {
		name      string
		changedAt time.Duration
		want      string // compute's usage after its change
	}{
		// stuck: deleted at t0 with 2 s of grace; overdue from t0+4s.
		{"a change after the deadline", 6 * time.Second, "1/200m"},
		{"a change before the deadline", 3 * time.Second, "2/700m"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var records []ledger.Record
			p := openTemp(t)
			step := stepper(t, p, &records, 1)
			step(upsertEvent("resourcequotas", "compute", writtenQuota("compute", `{"pods":"5","requests.cpu":"3"}`, t0.Add(-time.Minute))))
			step(upsertEvent("resourcequotas", "other", writtenQuota("other", `{"pods":"5","requests.cpu":"3"}`, t0.Add(-time.Minute))))
			step(upsertEvent("pods", "stuck", cpuPod("stuck", "500m", false)))
			step(upsertEvent("pods", "keep", cpuPod("keep", "200m", false)))
			step(upsertEvent("pods", "stuck", deletedPod("stuck", "500m", t0, 2)))
			step(upsertEvent("resourcequotas", "compute", writtenQuota("compute", `{"pods":"5","requests.cpu":"4"}`, t0.Add(tt.changedAt))))
			if got := quotaUsed(t, p, "compute"); got != tt.want {
				t.Errorf("compute after its change: %s, want %s", got, tt.want)
			}
			if got := quotaUsed(t, p, "other"); got != "2/700m" {
				t.Errorf("other after compute's change: %s, want 2/700m (not recounted)", got)
			}
			wantLeftOut := tt.want == "1/200m"
			if got := leftOut(t, p, "compute"); got != map[bool]string{true: "pods/stuck pods/stuck", false: ""}[wantLeftOut] {
				t.Errorf("explain compute: charges left out %q (want the stuck pod's: %v)", got, wantLeftOut)
			}
			if got := leftOut(t, p, "other"); got != "" {
				t.Errorf("explain other: charges left out %q, want none", got)
			}
			step(upsertEvent("resourcequotas", "late", writtenQuota("late", `{"pods":"5","requests.cpu":"3"}`, t0.Add(tt.changedAt))))
			if got := quotaUsed(t, p, "late"); got != tt.want {
				t.Errorf("a quota created then: %s, want %s", got, tt.want)
			}
			// Another pod's end recounts them all, at a moment past the
			// deadline in either case; the changed quota is not lowered
			// a second time.
			step(upsertEvent("pods", "ends", cpuPod("ends", "100m", false)))
			step(upsertEvent("pods", "ends", endedPod("ends", "100m", t0.Add(10*time.Second))))
			for _, name := range []string{"compute", "other", "late"} {
				if got := quotaUsed(t, p, name); got != "1/200m" {
					t.Errorf("%s after a pod's end: %s, want 1/200m", name, got)
				}
			}
			step(deleteEvent("pods", "stuck"))
			for _, name := range []string{"compute", "other", "late"} {
				if got := quotaUsed(t, p, name); got != "1/200m" {
					t.Errorf("%s after the stuck pod's deletion: %s, want 1/200m", name, got)
				}
			}
			q := openTemp(t)
			applyAll(t, q, records, len(records))
			if a, b := quotaStrings(t, p), quotaStrings(t, q); a != b {
				t.Errorf("event by event:\n%s\nin one batch:\n%s", a, b)
			}
		})
	}
}

// leftOut lists, from the explanation of a quota of team-a, the charges
// marked left out, and fails if a resource's charges do not sum to its
// usage either way.
func leftOut(t *testing.T, p *Projector, name string) string {
	t.Helper()
	e, err := p.Explain("team-a", name)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, r := range e.Quotas[0].Resources {
		if r.Counted != "" {
			t.Errorf("explain %s %s: counted %s, used %s", name, r.Resource, r.Counted, r.Used)
		}
		for _, c := range r.Charges {
			if c.LeftOut {
				out = append(out, c.Object)
			}
		}
	}
	return strings.Join(out, " ")
}

// TestOtherKindsRecountPods: the deletion of a service makes Kubernetes
// recount the quotas that track services, every resource of them, so a
// pod stuck terminating past its deadline leaves those and still counts in
// a quota of pods alone (rec-kind-recount).
func TestOtherKindsRecountPods(t *testing.T) {
	t0 := time.Date(2026, 11, 23, 1, 38, 10, 0, time.UTC)
	var records []ledger.Record
	p := openTemp(t)
	step := stepper(t, p, &records, 1)
	step(upsertEvent("resourcequotas", "mixed", writtenQuota("mixed", `{"pods":"5","requests.cpu":"3","services":"3"}`, t0.Add(-time.Minute))))
	step(upsertEvent("resourcequotas", "podsonly", writtenQuota("podsonly", `{"pods":"5","requests.cpu":"3"}`, t0.Add(-time.Minute))))
	step(upsertEvent("services", "s1", json.RawMessage(`{"apiVersion":"v1","kind":"Service","metadata":{"name":"s1","namespace":"team-a"},"spec":{"type":"ClusterIP"}}`)))
	step(upsertEvent("pods", "stuck", cpuPod("stuck", "500m", false)))
	step(upsertEvent("pods", "stuck", deletedPod("stuck", "500m", t0, 2)))
	// A pod written after the deadline dates what follows; its create
	// recounts nothing.
	later := fmt.Sprintf(`{"apiVersion":"v1","kind":"Pod","metadata":{"name":"later","namespace":"team-a","managedFields":[{"manager":"kubectl","operation":"Update","time":%q}]},`+
		`"spec":{"containers":[{"name":"app","resources":{"requests":{"cpu":"200m"}}}]}}`, t0.Add(6*time.Second).Format(time.RFC3339))
	step(upsertEvent("pods", "later", json.RawMessage(later)))
	for _, name := range []string{"mixed", "podsonly"} {
		if got := quotaUsed(t, p, name); got != "2/700m" {
			t.Errorf("%s before any recount: %s, want 2/700m", name, got)
		}
	}
	step(deleteEvent("services", "s1"))
	if got := quotaUsed(t, p, "mixed"); got != "1/200m" {
		t.Errorf("mixed after the service's deletion: %s, want 1/200m", got)
	}
	if got := quotaUsed(t, p, "podsonly"); got != "2/700m" {
		t.Errorf("podsonly after the service's deletion: %s, want 2/700m (not recounted)", got)
	}
}

// statusWrittenQuota is a quota of team-a whose status a manager last
// wrote at the given moment: the quota controller after a recount, or the
// API server's admission (kube-apiserver) charging a create.
func statusWrittenQuota(name, hard, manager string, at time.Time) json.RawMessage {
	return json.RawMessage(fmt.Sprintf(`{"apiVersion":"v1","kind":"ResourceQuota","metadata":{"name":%q,"namespace":"team-a",`+
		`"managedFields":[{"manager":"kubectl","operation":"Update","time":"2026-11-23T00:00:00Z"},`+
		`{"manager":%q,"operation":"Update","subresource":"status","time":%q}]},"spec":{"hard":%s}}`,
		name, manager, at.Format(time.RFC3339), hard))
}

// TestControllerWriteRecounts: the quota controller writes a quota's
// status only after a recount that changed it, so such a write, in a
// second the stored quota had not told of, is a recount of that quota,
// even one no event of the log sets off (the controller's periodic full
// recount, in rec-recount-8): the pods past their deadline leave it, and a
// figure an update left stale is counted afresh. An admission's write is
// no recount.
func TestControllerWriteRecounts(t *testing.T) {
	t0 := time.Date(2026, 11, 23, 1, 28, 53, 0, time.UTC)
	const hard = `{"pods":"5","requests.cpu":"3","services.nodeports":"4"}`
	var records []ledger.Record
	p := openTemp(t)
	step := stepper(t, p, &records, 1)
	step(upsertEvent("resourcequotas", "compute", statusWrittenQuota("compute", hard, "kube-controller-manager", t0)),
		upsertEvent("resourcequotas", "other", statusWrittenQuota("other", hard, "kube-controller-manager", t0)),
		upsertEvent("pods", "stuck", cpuPod("stuck", "500m", false)),
		upsertEvent("pods", "keep", cpuPod("keep", "200m", false)),
		upsertEvent("services", "np", nodePortService("np", 2)),
		upsertEvent("pods", "stuck", deletedPod("stuck", "500m", t0, 2)),
		// A port lost, the type kept: no recount, both keep 2.
		upsertEvent("services", "np", nodePortService("np", 1)))
	nodePorts := func(name string) string {
		list, err := p.Quotas("team-a", name, false)
		if err != nil {
			t.Fatal(err)
		}
		v := list.Items[0].Status.Used["services.nodeports"]
		return v.String()
	}
	// The API server's admission writes status at t0+20s: no recount,
	// though it dates the clock past the deadline.
	step(upsertEvent("resourcequotas", "compute", statusWrittenQuota("compute", hard, "kube-apiserver", t0.Add(20*time.Second))))
	if got, ports := quotaUsed(t, p, "compute"), nodePorts("compute"); got != "2/700m" || ports != "2" {
		t.Errorf("compute after an admission's write: %s and %s node ports, want 2/700m and 2", got, ports)
	}
	step(upsertEvent("resourcequotas", "compute", statusWrittenQuota("compute", hard, "kube-controller-manager", t0.Add(28*time.Second))))
	if got, ports := quotaUsed(t, p, "compute"), nodePorts("compute"); got != "1/200m" || ports != "1" {
		t.Errorf("compute after the controller's write: %s and %s node ports, want 1/200m and 1", got, ports)
	}
	if got, ports := quotaUsed(t, p, "other"), nodePorts("other"); got != "2/700m" || ports != "2" {
		t.Errorf("other, not written: %s and %s node ports, want 2/700m and 2", got, ports)
	}
	// The same write again (an event of the same second) recounts nothing
	// more; the deletion recounts both.
	step(upsertEvent("resourcequotas", "compute", statusWrittenQuota("compute", hard, "kube-controller-manager", t0.Add(28*time.Second))),
		deleteEvent("pods", "stuck"))
	for _, name := range []string{"compute", "other"} {
		if got := quotaUsed(t, p, name); got != "1/200m" {
			t.Errorf("%s after the deletion: %s, want 1/200m", name, got)
		}
	}
}
