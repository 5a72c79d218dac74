package export_test

import (
	"os"
	"strings"
	"testing"
	"time"
)

// clusterFlags: no quota admission (no quota controller recounts the
// quotas' status, without which it refuses creates); no watch cache, so
// that a watch from a compacted resourceVersion gets 410 Gone from etcd.
var clusterFlags = []string{"--disable-admission-plugins=ResourceQuota", "--watch-cache=false"}

// TestExport streams a cluster into the ledger through every phase an
// operator meets, comparing the ledger with Kubernetes' own sums after
// each: the first sync; creates, updates and deletes; a custom resource
// that appears after the exporter started; a kill and a restart that
// resumes from checkpoints, with changes meanwhile; a restart from a
// checkpoint etcd has compacted away (410 Gone, a relist and a resync).
func TestExport(t *testing.T) {
	c, l, n := populated(t, nil)
	namespaceObjects(t, c, "team-b", n)

	x := startExporter(t, c, l, "exporter-0")
	x.waitReady(t)
	converge(t, c, l, x.Logs)
	if got := x.metric(t, "quota_export_resyncs_total", `reason="initial"`); got == 0 {
		t.Errorf("no initial resync counted")
	}

	t.Run("creates updates deletes", func(t *testing.T) {
		mutate(t, c, "team-a", n)
		mutate(t, c, "team-b", n)
		converge(t, c, l, x.Logs)
		// The pods' watch events carry their write time: the lag is
		// measured, and small.
		if lag := x.metric(t, "quota_export_lag_seconds", `resource="pods"`); lag <= 0 || lag > 60 {
			t.Errorf("quota_export_lag_seconds of pods = %v, want a few seconds", lag)
		}
		if got := x.metric(t, "quota_export_events_total", `resource="pods"`, `type="DELETED"`); got == 0 {
			t.Errorf("no pod DELETED event counted")
		}
	})

	t.Run("a custom resource created after the exporter started", func(t *testing.T) {
		createWidgetCRD(t, c)
		createWidget(t, c, "team-a", "w1")
		createWidget(t, c, "team-a", "w2")
		createWidget(t, c, "team-b", "w1")
		converge(t, c, l, x.Logs)
		deleteWidget(t, c, "team-a", "w2")
		converge(t, c, l, x.Logs)
	})

	// Exporters started in a subtest outlive it: they are the test's.
	outer := t
	t.Run("killed and restarted resumes from its checkpoints", func(t *testing.T) {
		x.Kill()
		mutate(t, c, "team-b", n)
		createWidget(t, c, "team-b", "w9")
		x = startExporter(outer, c, l, "exporter-0")
		x.waitReady(t)
		converge(t, c, l, x.Logs)
		if !strings.Contains(x.Logs.String(), "resuming from the checkpoint") {
			t.Errorf("no resource resumed from its checkpoint\n%s", x.Logs)
		}
		// Every resource had a checkpoint: none was listed again.
		if got := x.metric(t, "quota_export_resyncs_total"); got != 0 {
			t.Errorf("%v resyncs after a restart from checkpoints, want none\n%s", got, x.Logs)
		}
	})

	t.Run("a checkpoint etcd compacted away is a relist and a resync", func(t *testing.T) {
		x.Kill()
		mutate(t, c, "team-a", n)
		deleteWidget(t, c, "team-a", "w1")
		c.Compact(t)
		x = startExporter(outer, c, l, "exporter-0")
		x.waitReady(t)
		converge(t, c, l, x.Logs)
		deadline := time.Now().Add(convergeTimeout)
		for x.metric(t, "quota_export_resyncs_total", `reason="410"`) == 0 {
			if time.Now().After(deadline) {
				t.Fatalf("no resync after 410 Gone counted\n%s", x.Logs)
			}
			time.Sleep(pollInterval)
		}
		converge(t, c, l, x.Logs)
	})

	t.Run("a custom resource deleted with its objects", func(t *testing.T) {
		deleteWidgetCRD(t, c)
		converge(t, c, l, x.Logs)
	})
	if os.Getenv("EXPORT_SHOW_LOGS") != "" {
		t.Logf("exporter log:\n%s", x.Logs)
	}
}

// TestExportHandover runs two replicas: one leads and streams, the other
// stands by; killing the leader hands over to the other, which relists
// and resyncs, and the ledger equals the cluster again with the changes
// made while nobody streamed.
func TestExportHandover(t *testing.T) {
	c, l, n := populated(t, nil)

	a := startExporter(t, c, l, "exporter-a")
	a.waitReady(t)
	b := startExporter(t, c, l, "exporter-b")
	converge(t, c, l, a.Logs, b.Logs)
	if b.leads(t) {
		t.Fatalf("both replicas lead")
	}
	mutate(t, c, "team-a", n)
	converge(t, c, l, a.Logs, b.Logs)

	a.Kill()
	mutate(t, c, "team-a", n)
	b.waitReady(t)
	converge(t, c, l, b.Logs)
	if got := b.metric(t, "quota_export_resyncs_total", `reason="takeover"`); got == 0 {
		t.Errorf("the standby took over without a takeover resync\n%s", b.Logs)
	}
	// Only team-a changed while nobody streamed: the takeover's resyncs
	// of the other namespaces and resources are left out, as the log
	// holds their lists already.
	if got := b.metric(t, "quota_export_resync_namespaces_unchanged_total"); got == 0 {
		t.Errorf("the takeover appended a resync of every namespace, changed or not\n%s", b.Logs)
	}
	mutate(t, c, "team-a", n)
	converge(t, c, l, b.Logs)

	// A leader stopped cleanly appends what it read and keeps its lease
	// until it runs out; then the standby takes over.
	d := startExporter(t, c, l, "exporter-d")
	if err := b.Stop(); err != nil {
		t.Fatalf("exporter-b did not stop cleanly: %v\n%s", err, b.Logs)
	}
	mutate(t, c, "team-a", n)
	d.waitReady(t)
	converge(t, c, l, d.Logs)
	if got := d.metric(t, "quota_export_resyncs_total", `reason="takeover"`); got == 0 {
		t.Errorf("the standby took over without a takeover resync\n%s", d.Logs)
	}
}

// TestExportNATSOutage stops the ledger while the exporter streams, with
// an in-flight window of 4 events: the watches are held back, nothing is
// dropped, and once the ledger is back the exporter catches up.
func TestExportNATSOutage(t *testing.T) {
	c, l, n := populated(t, nil)
	x := startExporter(t, c, l, "exporter-0", "--in-flight-max", "4")
	x.waitReady(t)
	converge(t, c, l, x.Logs)

	l.Restart(t, func() {
		for range 3 {
			mutate(t, c, "team-a", n)
		}
		deadline := time.Now().Add(convergeTimeout)
		for !strings.Contains(x.Logs.String(), "NATS unreachable") {
			if time.Now().After(deadline) {
				t.Fatalf("the exporter did not notice the ledger was gone\n%s", x.Logs)
			}
			time.Sleep(pollInterval)
		}
		if got := x.metric(t, "quota_export_window_full_total"); got == 0 {
			t.Errorf("the in-flight window never filled while the ledger was gone")
		}
		if got := x.metric(t, "quota_export_appends_in_flight"); got > 4 {
			t.Errorf("%v events in flight, the window is 4", got)
		}
	})
	converge(t, c, l, x.Logs)
	if x.Exited() {
		t.Fatalf("the exporter exited during the outage\n%s", x.Logs)
	}
}

// TestExportSplitResync lists more pods in one namespace than one event
// of the ledger (quota serve --max-event-size 16Ki) can hold: the resync
// is split, its objects appended one by one then the list of their names,
// and the ledger equals the cluster.
func TestExportSplitResync(t *testing.T) {
	c, l, n := populated(t, nil, "--max-event-size", "16Ki")
	for range 60 {
		createPod(t, c, "team-a", n, "")
	}
	x := startExporter(t, c, l, "exporter-0")
	x.waitReady(t)
	converge(t, c, l, x.Logs)
	if !strings.Contains(x.Logs.String(), "resource=pods reason=initial objects=63") || !strings.Contains(x.Logs.String(), "split=1") {
		t.Errorf("no split resync of the 63 pods logged\n%s", x.Logs)
	}
}

// TestExportAPIOutage takes the API server away from the exporter for
// longer than its lease lasts, changes objects meanwhile, and gives it
// back: the exporter says the API server is unreachable, loses and takes
// back its lease (its own, so it resumes from its checkpoints), and the
// ledger equals the cluster again.
func TestExportAPIOutage(t *testing.T) {
	c, l, n := populated(t, nil)
	x := startExporter(t, c, l, "exporter-0")
	x.waitReady(t)
	converge(t, c, l, x.Logs)

	c.StopAPI()
	mutate(t, c, "team-a", n)
	deadline := time.Now().Add(convergeTimeout)
	for !strings.Contains(x.Logs.String(), "lost the lease") {
		if time.Now().After(deadline) || x.Exited() {
			t.Fatalf("the exporter did not give up its lease while the API server was away\n%s", x.Logs)
		}
		time.Sleep(pollInterval)
	}
	mutate(t, c, "team-a", n)
	c.StartAPI(t)
	x.waitReady(t)
	converge(t, c, l, x.Logs)
	if os.Getenv("EXPORT_SHOW_LOGS") != "" {
		t.Logf("exporter log:\n%s", x.Logs)
	}
}
