package export_test

import (
	"strings"
	"testing"
	"time"

	"github.com/quotaledger/quota/testdata/kubecluster/kubecluster"
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
	c := kubecluster.Start(t, kubecluster.Options{APIServerFlags: clusterFlags})
	l := kubecluster.Serve(t)
	n := &counter{}
	clusterObjects(t, c)
	namespaceObjects(t, c, "team-a", n)
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

	t.Run("killed and restarted resumes from its checkpoints", func(t *testing.T) {
		x.Kill()
		mutate(t, c, "team-b", n)
		createWidget(t, c, "team-b", "w9")
		x = startExporter(t, c, l, "exporter-0")
		x.waitReady(t)
		converge(t, c, l, x.Logs)
		if !strings.Contains(x.Logs.String(), "resuming from the checkpoint") {
			t.Errorf("no resource resumed from its checkpoint\n%s", x.Logs)
		}
	})

	t.Run("a checkpoint etcd compacted away is a relist and a resync", func(t *testing.T) {
		x.Kill()
		mutate(t, c, "team-a", n)
		deleteWidget(t, c, "team-a", "w1")
		c.Compact(t)
		x = startExporter(t, c, l, "exporter-0")
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
}

// TestExportHandover runs two replicas: one leads and streams, the other
// stands by; killing the leader hands over to the other, which relists
// and resyncs, and the ledger equals the cluster again with the changes
// made while nobody streamed.
func TestExportHandover(t *testing.T) {
	c := kubecluster.Start(t, kubecluster.Options{APIServerFlags: clusterFlags})
	l := kubecluster.Serve(t)
	n := &counter{}
	clusterObjects(t, c)
	namespaceObjects(t, c, "team-a", n)

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
	mutate(t, c, "team-a", n)
	converge(t, c, l, b.Logs)
}
