package main

import (
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// deniedWithin is how soon a client must report a subject its key lacks:
// far below requestTimeout, which it used to wait out.
const deniedWithin = 10 * time.Second

// writeCredentials runs `quota credentials` into dir/credentials and
// returns that directory.
func writeCredentials(t *testing.T, dir string) string {
	t.Helper()
	creds := filepath.Join(dir, "credentials")
	if out, err := exec.Command(binary, "credentials", creds).CombinedOutput(); err != nil {
		t.Fatalf("quota credentials: %v\n%s", err, out)
	}
	return creds
}

// TestClientsFailAtOnceOnADeniedSubject runs each client with a key of
// `quota credentials` that lacks the permission for the subject it needs:
// the server refuses the publish apart from the request, and the client
// exits 2 at once, naming the subject and the key's missing permission,
// instead of waiting for its request timeout.
func TestClientsFailAtOnceOnADeniedSubject(t *testing.T) {
	dir := t.TempDir()
	creds := writeCredentials(t, dir)
	s := startServer(t, filepath.Join(dir, "data"), "--auth", filepath.Join(creds, "auth.conf"))
	quota := fileWriter(t, dir)("quota.yaml", podsQuota)
	for _, tc := range []struct {
		name    string
		args    []string
		key     string
		subject string
	}{
		{"describe with the webhook's key", []string{"describe", "-n", "team"}, "webhook", `"quota.query.describe"`},
		{"explain with the webhook's key", []string{"explain", "-n", "team"}, "webhook", `"quota.query.explain"`},
		{"admit with the exporter's key", []string{"admit", "-f", quota}, "export", `"quota.admit.team"`},
		{"ingest with the webhook's key", []string{"ingest", quota}, "webhook", `"$JS.API.STREAM.INFO.QUOTA_EVENTS"`},
		{"rejects with the webhook's key", []string{"rejects"}, "webhook", `"$JS.API.STREAM.INFO.QUOTA_EVENTS"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			start := time.Now()
			_, errOut, code := s.run(append(tc.args, "--nkey", filepath.Join(creds, tc.key+".nk"))...)
			took := time.Since(start)
			if code != exitError || !strings.Contains(errOut, tc.subject) || !strings.Contains(errOut, "lack the permission for that subject") {
				t.Errorf("exit %d, stderr:\n%s\nwant exit %d naming %s and the missing permission", code, errOut, exitError, tc.subject)
			}
			if took > deniedWithin {
				t.Errorf("took %s, want the refusal within %s", took.Round(time.Millisecond), deniedWithin)
			}
		})
	}
	// The permitted key still gets its answers on the same server.
	s.mustRun("ingest", quota, "--nkey", filepath.Join(creds, "export.nk"))
	if out := s.mustRun("describe", "pods", "-n", "team", "--nkey", filepath.Join(creds, "operator.nk")); !strings.Contains(out, "pods") {
		t.Errorf("describe with the operator's key:\n%s", out)
	}
}
