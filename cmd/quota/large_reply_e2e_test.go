package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestAnswersLargerThanOneMessage: describe -A over more quotas, and
// explain of a namespace of more pods, than one NATS message holds (the
// server started with 64Ki messages) are answered whole.
func TestAnswersLargerThanOneMessage(t *testing.T) {
	dir := t.TempDir()
	var b strings.Builder
	event := func(obj map[string]any) {
		line, err := json.Marshal(map[string]any{"type": "ADDED", "object": obj})
		if err != nil {
			t.Fatal(err)
		}
		b.Write(line)
		b.WriteByte('\n')
	}
	const namespaces, pods = 400, 600
	for i := range namespaces {
		ns := fmt.Sprintf("team-%03d", i)
		event(map[string]any{"apiVersion": "v1", "kind": "ResourceQuota",
			"metadata": map[string]any{"name": "compute", "namespace": ns, "uid": "q-" + ns, "resourceVersion": fmt.Sprint(10 + i)},
			"spec":     map[string]any{"hard": map[string]any{"requests.cpu": "10", "requests.memory": "20Gi", "pods": "1k"}}})
	}
	for i := range pods {
		name := fmt.Sprintf("web-%03d", i)
		event(map[string]any{"apiVersion": "v1", "kind": "Pod",
			"metadata": map[string]any{"name": name, "namespace": "team-000", "uid": "p-" + name, "resourceVersion": fmt.Sprint(1000 + i)},
			"spec": map[string]any{"containers": []any{map[string]any{"name": "app",
				"resources": map[string]any{"requests": map[string]any{"cpu": "10m", "memory": "16Mi"}}}}}})
	}
	events := filepath.Join(dir, "events.jsonl")
	if err := os.WriteFile(events, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	s := startServer(t, filepath.Join(dir, "data"), "--max-event-size", "64Ki")
	s.mustRun("ingest", events)

	out := s.mustRun("describe", "-A", "-o", "json")
	if len(out) <= 64<<10 {
		t.Fatalf("describe -A gave %d bytes: the test needs an answer larger than a message", len(out))
	}
	var list struct {
		Items []struct {
			Metadata struct{ Namespace string }
			Status   struct{ Used map[string]string }
		}
	}
	if err := json.Unmarshal([]byte(out), &list); err != nil {
		t.Fatalf("describe -A: %v", err)
	}
	if len(list.Items) != namespaces {
		t.Fatalf("describe -A listed %d quotas, want %d", len(list.Items), namespaces)
	}
	for _, q := range list.Items {
		if q.Metadata.Namespace == "team-000" && (q.Status.Used["pods"] != "600" || q.Status.Used["requests.cpu"] != "6") {
			t.Errorf("team-000 used %v, want pods 600 and requests.cpu 6", q.Status.Used)
		}
	}

	text := s.mustRun("explain", "-n", "team-000", "-o", "json")
	if len(text) <= 64<<10 {
		t.Fatalf("explain gave %d bytes: the test needs an answer larger than a message", len(text))
	}
	if n := strings.Count(text, `web-`); n < pods {
		t.Errorf("explain names %d of the %d pods:\n%.2000s", n, pods, text)
	}
}
