package export_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/resourceversion"

	"github.com/quotaledger/quota/testdata/kubecluster/kubecluster"
)

// bookmarkTimeout bounds the wait for a bookmark: the watch cache sends
// one about every minute, and the exporter asks for the version to reach
// every 10 seconds.
const bookmarkTimeout = 3 * time.Minute

// TestExportBookmarks runs kube-apiserver with its watch cache on (the
// default), whose watches send bookmarks, and resources nothing changes
// while the exporter streams: one read whole as protobuf (limitranges),
// one read as protobuf metadata (podtemplates) and a custom resource read
// as JSON (widgets.example.com). Their watches deliver no event, so only
// a bookmark can take each one's feed past a version the cluster reached
// after its list: the ledger's feed of each must get there, with the
// exporter counting bookmarks of it and never listing it again.
func TestExportBookmarks(t *testing.T) {
	c := kubecluster.Start(t, kubecluster.Options{APIServerFlags: []string{"--disable-admission-plugins=ResourceQuota"}})
	l := kubecluster.Serve(t)
	createWidgetCRD(t, c)
	x := startExporter(t, c, l, "exporter-0")
	x.waitReady(t)

	// A write elsewhere: the cluster's version is now past every list
	// the exporter made.
	c.CreateNamespace(t, "elsewhere")
	cm, err := c.Client.CoreV1().ConfigMaps("elsewhere").Create(context.Background(),
		&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "moved"}}, metav1.CreateOptions{})
	must(t, err)
	after := cm.ResourceVersion
	quiet := []string{"limitranges", "podtemplates", "widgets.example.com"}

	start := time.Now()
	deadline := start.Add(bookmarkTimeout)
	for {
		feeds := ledgerFeeds(t, l)
		var behind []string
		for _, res := range quiet {
			if c, err := resourceversion.CompareResourceVersion(feeds[res], after); err != nil || c < 0 {
				behind = append(behind, res+" at "+feeds[res])
			}
		}
		if len(behind) == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s after a write at resourceVersion %s, the feed of %s\nexporter:\n%s", bookmarkTimeout, after, strings.Join(behind, ", "), x.Logs)
		}
		time.Sleep(time.Second)
	}
	t.Logf("every quiet resource's feed passed %s within %s", after, time.Since(start).Round(time.Second))
	for _, res := range quiet {
		if got := x.metric(t, "quota_export_bookmarks_total", `resource="`+res+`"`); got == 0 {
			t.Errorf("%s: no bookmark counted", res)
		}
		if got := x.metric(t, "quota_export_resyncs_total", `resource="`+res+`"`); got != 1 {
			t.Errorf("%s: %v resyncs, want the first list's alone: its feed moved by a list", res, got)
		}
		if got := x.metric(t, "quota_export_events_total", `resource="`+res+`"`, `type="ADDED"`); got != 0 {
			t.Errorf("%s: %v events, want none: its feed moved by an event", res, got)
		}
	}
}

// ledgerFeeds is the resourceVersion of each resource's feed in quota
// status.
func ledgerFeeds(t *testing.T, l *kubecluster.Ledger) map[string]string {
	t.Helper()
	var status struct {
		Feeds []struct {
			Resource        string `json:"resource"`
			ResourceVersion string `json:"resourceVersion"`
		} `json:"feeds"`
	}
	if err := json.Unmarshal([]byte(l.MustRun("status", "-o", "json")), &status); err != nil {
		t.Fatalf("quota status -o json: %v", err)
	}
	out := map[string]string{}
	for _, f := range status.Feeds {
		out[f.Resource] = f.ResourceVersion
	}
	return out
}
