package admission

import (
	"context"
	"encoding/json"
	"path/filepath"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/quotaledger/quota/ledger"
	"github.com/quotaledger/quota/ledger/ledgertest"
	"github.com/quotaledger/quota/projector"
)

// deletingPod is a scheduled pod of namespace ns asking for cpu, deleted
// at requested with a grace period of grace seconds (not deleted for a
// negative grace).
func deletingPod(ns, name, cpu string, requested time.Time, grace int) string {
	meta := map[string]any{"name": name, "namespace": ns, "uid": "uid-" + name}
	if grace >= 0 {
		meta["deletionTimestamp"] = requested.Add(time.Duration(grace) * time.Second).UTC().Format(time.RFC3339)
		meta["deletionGracePeriodSeconds"] = grace
	}
	b, _ := json.Marshal(map[string]any{
		"apiVersion": "v1", "kind": "Pod",
		"metadata": meta,
		"spec": map[string]any{"nodeName": "node-a", "containers": []any{map[string]any{
			"name": "app", "image": "registry.example/app:1",
			"resources": map[string]any{"requests": map[string]string{"cpu": cpu}}}}},
	})
	return string(b)
}

// TestPodPastItsDeadlineStopsCountingThroughTheLog deletes a pod with a
// grace period that no kubelet ends: it counts until the sweep sees its
// deadline (deletionTimestamp plus grace) pass on the wall clock and
// appends a Deadline event; from that event on it counts for count/pods
// only, in the live projection and in a projection rebuilt from the log,
// which never saw the wall clock. A later event of the same deletion
// (a status write) does not bring it back.
func TestPodPastItsDeadlineStopsCountingThroughTheLog(t *testing.T) {
	srv, _, js := ledgertest.StartServer(t)
	stream := ledgertest.OpenStream(t, js)
	const ns = "team"
	upsert(t, stream, quotaManifest(ns, "q", map[string]string{"pods": "5", "requests.cpu": "2", "count/pods": "5"}))
	clk := newClock()
	r := startReplica(t, srv.ClientURL(), Config{ReservationTTL: testTTL, SweepInterval: 5 * time.Millisecond, Now: clk.Now})
	requested := clk.Now().Truncate(time.Second)
	upsert(t, stream, deletingPod(ns, "stuck", "500m", requested, 30))
	upsert(t, stream, deletingPod(ns, "keep", "200m", time.Time{}, -1))
	r.catchUp(t)
	check := func(when, pods, cpu, count string) {
		t.Helper()
		for res, want := range map[string]string{"pods": pods, "requests.cpu": cpu, "count/pods": count} {
			if got := r.used(t, ns, "q", res); got != want {
				t.Errorf("%s: used %s %s, want %s", when, res, got, want)
			}
		}
	}
	check("within the grace period", "2", "700m", "2")
	if overdue, err := r.proj.OverduePods(clk.Now().Add(59*time.Second), 10); err != nil || len(overdue) != 0 {
		t.Fatalf("OverduePods before the deadline: %+v, %v; want none", overdue, err)
	}
	overdue, err := r.proj.OverduePods(clk.Now().Add(61*time.Second), 10)
	if err != nil || len(overdue) != 1 || overdue[0].Name != "stuck" || overdue[0].UID != "uid-stuck" {
		t.Fatalf("OverduePods past the deadline: %+v, %v; want the stuck pod", overdue, err)
	}

	// The API server set deletionTimestamp to the request's time plus the
	// grace period, and the evaluator adds the grace period again.
	clk.Advance(61 * time.Second)
	poll(t, "the deadline applied", func() bool { return r.used(t, ns, "q", "pods") == "1" })
	check("past the deadline", "1", "200m", "2")
	deadlines := 0
	for _, rec := range ledgertest.ReadAll(t, stream, 1) {
		if rec.Event.Type == ledger.Deadline {
			deadlines++
			if rec.Event.Name != "stuck" || rec.Event.UID != "uid-stuck" {
				t.Errorf("Deadline event for %s (%s), want stuck", rec.Event.Name, rec.Event.UID)
			}
		}
	}
	if deadlines != 1 {
		t.Errorf("%d Deadline events in the log, want 1", deadlines)
	}

	// The kubelet's last status write of the same deletion.
	upsert(t, stream, deletingPod(ns, "stuck", "500m", requested, 30))
	r.catchUp(t)
	check("after a later event of the deletion", "1", "200m", "2")

	events := ledgertest.ReadAll(t, stream, 1)
	rebuilt, err := projector.Open(projector.Config{Path: filepath.Join(t.TempDir(), "rebuilt.db"), NoSync: true, Logger: discardLogger()}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer rebuilt.Close()
	if err := rebuilt.Apply(context.Background(), events); err != nil {
		t.Fatal(err)
	}
	list, err := rebuilt.Quotas(ns, "q", false)
	if err != nil {
		t.Fatal(err)
	}
	for res, want := range map[string]string{"pods": "1", "requests.cpu": "200m", "count/pods": "2"} {
		if got := list.Items[0].Status.Used[corev1.ResourceName(res)]; got.String() != want {
			t.Errorf("rebuilt from the log: used %s %s, want %s", res, got.String(), want)
		}
	}
}
