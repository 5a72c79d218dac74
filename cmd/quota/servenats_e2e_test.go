package main

import (
	"path/filepath"
	"strings"
	"testing"
)

// TestServeLeavesTheEnvironmentsKeyToClients runs serve with its embedded
// server in a shell that exports $QUOTA_NKEY for the clients: serve starts
// (the key is not its own: the embedded server takes no credentials, and
// --auth names its clients), says so in its log, and a client of that
// shell authenticates with the key. Given on serve's command line, --nkey
// is still refused (TestServeRefusesBadFlags).
func TestServeLeavesTheEnvironmentsKeyToClients(t *testing.T) {
	dir := t.TempDir()
	creds := writeCredentials(t, dir)
	t.Setenv("QUOTA_NKEY", filepath.Join(creds, "operator.nk"))
	s := startServer(t, filepath.Join(dir, "data"), "--auth", filepath.Join(creds, "auth.conf"))
	if !strings.Contains(s.logs.String(), "ignored=$QUOTA_NKEY") {
		t.Errorf("serve's log does not say it left $QUOTA_NKEY to the clients:\n%s", s.logs)
	}
	s.mustRun("ingest", fileWriter(t, dir)("quota.yaml", podsQuota))
	if out := s.mustRun("describe", "pods", "-n", "team"); !strings.Contains(out, "pods") {
		t.Errorf("describe with $QUOTA_NKEY:\n%s", out)
	}
	t.Setenv("QUOTA_NKEY", "")
	if _, errOut, code := s.run("describe", "-n", "team"); code != exitError || !strings.Contains(errOut, "Authorization Violation") {
		t.Errorf("describe without a key: exit %d, %s; want refused", code, errOut)
	}
}
