package projector

import (
	"os"
	"path/filepath"
	"testing"
)

// TestGracefulDeletionIsJudgedWhenItHappened ingests, months after they
// happened, the graceful deletions of two pods that no kubelet finishes:
// Kubernetes' quota controller judged each when it saw it, just after the
// request, so the pod with a 30-second grace period still counts and the
// pod deleted with none does not (but for count/pods, which counts every
// stored pod). The stream time, long past both grace periods, does not
// decide it.
func TestGracefulDeletionIsJudgedWhenItHappened(t *testing.T) {
	const events = `{"type":"ADDED","object":{"apiVersion":"v1","kind":"ResourceQuota","metadata":{"name":"q","namespace":"team","uid":"q1","resourceVersion":"1"},"spec":{"hard":{"pods":"5","count/pods":"5"}}}}
{"type":"ADDED","object":{"apiVersion":"v1","kind":"Pod","metadata":{"name":"slow","namespace":"team","uid":"p1","resourceVersion":"2"},"spec":{"nodeName":"node-1","containers":[{"name":"c","image":"x"}]}}}
{"type":"ADDED","object":{"apiVersion":"v1","kind":"Pod","metadata":{"name":"forced","namespace":"team","uid":"p2","resourceVersion":"3","finalizers":["example.com/hold"]},"spec":{"nodeName":"node-1","containers":[{"name":"c","image":"x"}]}}}
{"type":"MODIFIED","object":{"apiVersion":"v1","kind":"Pod","metadata":{"name":"slow","namespace":"team","uid":"p1","resourceVersion":"4","deletionTimestamp":"2026-01-05T10:00:30Z","deletionGracePeriodSeconds":30},"spec":{"nodeName":"node-1","containers":[{"name":"c","image":"x"}]}}}
{"type":"MODIFIED","object":{"apiVersion":"v1","kind":"Pod","metadata":{"name":"forced","namespace":"team","uid":"p2","resourceVersion":"5","finalizers":["example.com/hold"],"deletionTimestamp":"2026-01-05T10:00:40Z","deletionGracePeriodSeconds":0},"spec":{"nodeName":"node-1","containers":[{"name":"c","image":"x"}]}}}
`
	file := filepath.Join(t.TempDir(), "events.jsonl")
	if err := os.WriteFile(file, []byte(events), 0o644); err != nil {
		t.Fatal(err)
	}
	records := watchRecords(t, 0, file)
	p := openTemp(t)
	applyAll(t, p, records, 1)
	list, err := p.Quotas("team", "q", false)
	if err != nil {
		t.Fatal(err)
	}
	used := list.Items[0].Status.Used
	if got := used["pods"]; got.String() != "1" {
		t.Errorf("pods used %s, want 1: the gracefully deleted pod counts, the one deleted with no grace does not", got.String())
	}
	if got := used["count/pods"]; got.String() != "2" {
		t.Errorf("count/pods used %s, want 2", got.String())
	}
}
