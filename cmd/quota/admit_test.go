package main

import (
	"errors"
	"fmt"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/quotaledger/quota/ledger/ledgertest"
)

// TestAdmitRefusesAnotherNamespace asks about a manifest of one namespace
// with -n naming another: refused before the ledger is asked (no server
// runs here), as kubectl refuses it, naming both namespaces.
func TestAdmitRefusesAnotherNamespace(t *testing.T) {
	file := fileWriter(t, t.TempDir())("cm.yaml", "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: settings, namespace: other}\n")
	noServer := &ledgerProc{t: t, url: "nats://127.0.0.1:1"}
	out, errOut, code := noServer.run("admit", "--dry-run", "-n", "team", "-f", file)
	want := `the namespace from the provided object "other" does not match the namespace "team"; give -n other, or none`
	if code != 2 || out != "" || !strings.Contains(errOut, want) {
		t.Fatalf("exit %d, stdout %q, stderr %q; want exit 2 and %q", code, out, errOut, want)
	}
}

// TestClientsSayWhenNoServerAnswers runs the clients against a NATS
// server on which no ledger answers: each exits 2 naming its subject and
// that no ledger server answers there; admit adds that the servers may
// still be catching up with the stream, which only admission waits for.
func TestClientsSayWhenNoServerAnswers(t *testing.T) {
	srv, _, _ := ledgertest.StartServer(t)
	file := fileWriter(t, t.TempDir())("pod.yaml", "apiVersion: v1\nkind: Pod\nmetadata: {name: web}\nspec: {containers: [{name: app, image: app}]}\n")
	noLedger := &ledgerProc{t: t, url: srv.ClientURL()}
	for _, tc := range []struct {
		args []string
		want []string
	}{
		{[]string{"admit", "--dry-run", "-n", "team", "-f", file}, []string{"ask the ledger (quota.admit.team): no ledger server answers there", "still catching up"}},
		{[]string{"describe", "-n", "team"}, []string{"ask the ledger (quota.query.describe): no ledger server answers there"}},
		{[]string{"explain", "-n", "team"}, []string{"ask the ledger (quota.query.explain): no ledger server answers there"}},
	} {
		out, errOut, code := noLedger.run(append(tc.args, "--wait-for-server", "0")...)
		for _, want := range tc.want {
			if code != 2 || out != "" || !strings.Contains(errOut, want) {
				t.Errorf("quota %s: exit %d, stdout %q, stderr %q; want exit 2 and %q", tc.args[0], code, out, errOut, want)
			}
		}
	}
}

func TestClientsRefuseAnEmptyServer(t *testing.T) {
	for _, args := range [][]string{{"describe", "-A"}, {"ingest", "-"}, {"rejects"}} {
		out, err := exec.Command(binary, append(args, "--server", "")...).CombinedOutput()
		var ee *exec.ExitError
		if !errors.As(err, &ee) || ee.ExitCode() != exitError || !strings.Contains(string(out), "--server is empty") {
			t.Errorf("quota %s --server \"\": %v\n%s\nwant exit %d saying --server is empty", strings.Join(args, " "), err, out, exitError)
		}
	}
}

// TestClientsWaitForAStartingServer runs clients right after starting
// serve, without waiting for it to announce that it serves, as a script
// would: they wait for it (--wait-for-server, 3 s by default) and succeed.
// With no server at all, a client gives up once its wait is over.
func TestClientsWaitForAStartingServer(t *testing.T) {
	addr := fmt.Sprintf("127.0.0.1:%d", freePort(t))
	serve := exec.Command(binary, "serve", "--data", t.TempDir(), "--listen", addr)
	if err := serve.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		serve.Process.Signal(syscall.SIGTERM)
		serve.Wait()
	})
	client := &ledgerProc{t: t, url: "nats://" + addr}
	dir := filepath.Join(samplesDir, "sample-team-a")
	client.mustRun("ingest", filepath.Join(dir, "events.jsonl"))
	if out := client.mustRun("describe", "-n", "sample-team-a"); !strings.Contains(out, "team-a-compute") {
		t.Errorf("describe right after the start:\n%s", out)
	}
	if out := client.mustRun("admit", "--dry-run", "-n", "sample-team-a", "-f", filepath.Join(dir, "probes", "01.json")); strings.TrimSpace(out) != "allowed" {
		t.Errorf("admit right after the start: %q, want allowed", out)
	}

	none := &ledgerProc{t: t, url: fmt.Sprintf("nats://127.0.0.1:%d", freePort(t))}
	started := time.Now()
	_, errOut, code := none.run("describe", "-A", "--wait-for-server", "300ms")
	if waited := time.Since(started); code != exitError || !strings.Contains(errOut, "is 'quota serve' running?") || waited < 250*time.Millisecond {
		t.Errorf("describe with no server: exit %d after %s, %q; want exit %d after about 300ms, saying none runs", code, waited, errOut, exitError)
	}
}
