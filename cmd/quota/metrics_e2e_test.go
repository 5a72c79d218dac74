package main

import (
	"errors"
	"io"
	"net/http"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"
)

var metricsURL = regexp.MustCompile(`quota ledger serving.* metrics=(\S+)`)

// TestServeMetrics runs `quota serve --metrics-listen` and scrapes it after
// a reserving and a dry-run admission: the answers are counted by mode and
// result, the projection's applied sequence is there, and so are the
// process's own figures. A listen address that is not HOST:PORT stops the
// server before it serves.
func TestServeMetrics(t *testing.T) {
	dir := t.TempDir()
	write := fileWriter(t, dir)
	s := startServer(t, t.TempDir(), "--metrics-listen", "127.0.0.1:0")
	m := metricsURL.FindStringSubmatch(s.logs.String())
	if m == nil {
		t.Fatalf("no metrics URL in the serving line:\n%s", s.logs)
	}
	s.mustRun("ingest", write("quota.yaml", "apiVersion: v1\nkind: ResourceQuota\nmetadata:\n  name: pods\n  namespace: team\nspec:\n  hard:\n    pods: \"1\"\n"))
	pod := func(name string) string {
		return write(name+".yaml", "apiVersion: v1\nkind: Pod\nmetadata:\n  name: "+name+"\nspec:\n  containers:\n  - name: c\n    image: registry.example/app:1\n")
	}
	if out := s.mustRun("admit", "-n", "team", "-f", pod("web")); strings.TrimSpace(out) != "allowed" {
		t.Fatalf("admit web: %s", out)
	}
	if out, _, code := s.run("admit", "--dry-run", "-n", "team", "-f", pod("api")); code != 1 {
		t.Fatalf("dry-run admit past the quota: exit %d, %s", code, out)
	}

	resp, err := http.Get(m[1])
	if err != nil {
		t.Fatal(err)
	}
	body, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: %s %v", m[1], resp.Status, err)
	}
	text := string(body)
	for _, want := range []string{
		`quota_admission_requests_total{mode="reserving",result="allowed"} 1`,
		`quota_admission_requests_total{mode="dry_run",result="denied"} 1`,
		`quota_admission_reserve_appends_total 1`,
		`quota_admission_reservations_total 1`,
		`quota_projection_skipped_records_total 0`,
		`quota_projection_pending_records 0`,
		`quota_admission_duration_seconds_count{mode="reserving"} 1`,
	} {
		if !strings.Contains(text, want+"\n") {
			t.Errorf("metrics lack %q", want)
		}
	}
	applied := regexp.MustCompile(`(?m)^quota_projection_applied_sequence (\d+)$`).FindStringSubmatch(text)
	if applied == nil {
		t.Errorf("metrics lack quota_projection_applied_sequence")
	} else if n, _ := strconv.Atoi(applied[1]); n < 2 {
		t.Errorf("applied sequence %d, want the quota's and the reservation's events at least", n)
	}
	// The quota's upsert is the last cluster fact; the reservation after
	// it is none.
	if fact := regexp.MustCompile(`(?m)^quota_projection_last_fact_timestamp_seconds (\S+)$`).FindStringSubmatch(text); fact == nil {
		t.Errorf("metrics lack quota_projection_last_fact_timestamp_seconds")
	} else if v, err := strconv.ParseFloat(fact[1], 64); err != nil || time.Since(time.Unix(int64(v), 0)) > time.Minute || v <= 0 {
		t.Errorf("last fact at %s (%v), want the quota's ingest, seconds ago", fact[1], err)
	}
	for _, name := range []string{"process_resident_memory_bytes ", "go_gc_duration_seconds_count ", "quota_log_bytes ", "quota_log_messages ",
		"quota_log_first_timestamp_seconds ", "quota_store_bytes ", "quota_store_limit_bytes ", "quota_data_volume_free_bytes "} {
		if !strings.Contains(text, "\n"+name) {
			t.Errorf("metrics lack %s", name)
		}
	}

	cmd := exec.Command(binary, "serve", "--data", t.TempDir(), "--listen", "127.0.0.1:0", "--metrics-listen", "9464")
	msg, err := cmd.CombinedOutput()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 2 || !strings.Contains(string(msg), `metrics listen address "9464"`) {
		t.Errorf("serve --metrics-listen 9464: %v\n%s", err, msg)
	}
}
