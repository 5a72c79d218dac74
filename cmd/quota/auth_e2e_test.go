package main

import (
	"net/http"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestServeRequiresTheComponentsKeys runs serve's embedded NATS with the
// authorization `quota credentials` writes: a client without a key is
// refused, the webhook's key relays reviews and may not append to the log, the
// exporter's key ingests, and the operator's describes.
func TestServeRequiresTheComponentsKeys(t *testing.T) {
	dir := t.TempDir()
	creds := filepath.Join(dir, "credentials")
	s := startServer(t, filepath.Join(dir, "data"))
	s.mustRun("credentials", creds)
	s.stop()
	s = startServer(t, filepath.Join(dir, "data"), "--auth", filepath.Join(creds, "auth.conf"))
	key := func(c string) []string { return []string{"--nkey", filepath.Join(creds, c+".nk")} }
	write := fileWriter(t, dir)
	quota := write("quota.yaml", podsQuota)

	if _, errOut, code := s.run("describe", "-n", "team"); code != exitError || !strings.Contains(errOut, "Authorization Violation") {
		t.Errorf("describe without a key: exit %d, %s; want refused", code, errOut)
	}
	if _, errOut, code := s.run(append([]string{"ingest", quota}, key("webhook")...)...); code == 0 || !strings.Contains(strings.ToLower(errOut), "permission") {
		t.Errorf("ingest with the webhook's key: exit %d, %s; want a permissions violation", code, errOut)
	}
	s.mustRun(append([]string{"ingest", quota}, key("export")...)...)
	if out := s.mustRun(append([]string{"describe", "pods", "-n", "team"}, key("operator")...)...); !strings.Contains(out, "pods") {
		t.Errorf("describe with the operator's key:\n%s", out)
	}

	pki := newWebhookPKI(t, t.TempDir())
	w := startWebhook(t, pki, s.url, key("webhook")...)
	if code, body := w.get("/readyz"); code != http.StatusOK {
		t.Fatalf("/readyz of the webhook with its key: %d %s", code, body)
	}
	if r := w.admit("a", "/validate", review("a", "team", false, podObject("a", "", "1"))); !r.Allowed {
		t.Errorf("a create through the webhook with its key: denied: %v", r.Result)
	}
	if out := s.mustRun(append([]string{"describe", "pods", "-n", "team"}, key("operator")...)...); !regexp.MustCompile(`(?m)^pods\s+1\s+2$`).MatchString(out) {
		t.Errorf("describe after the create, want pods used 1 of 2:\n%s", out)
	}
}
