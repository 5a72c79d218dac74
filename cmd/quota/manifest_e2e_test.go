package main

import (
	"os/exec"
	"strings"
	"testing"
)

// TestClientsRefuseAnInvalidNamespace runs each client with a namespace
// that is not a DNS-1123 label against a running ledger: each says that
// the namespace is not a valid name, before sending anything, where a
// namespace that cannot be a subject token used to look like a server
// that does not run.
func TestClientsRefuseAnInvalidNamespace(t *testing.T) {
	s := startServer(t, t.TempDir())
	write := fileWriter(t, t.TempDir())
	pod := write("pod.yaml", "apiVersion: v1\nkind: Pod\nmetadata: {name: web}\nspec: {containers: [{name: app, image: app}]}\n")
	inOwn := write("own.yaml", "apiVersion: v1\nkind: Pod\nmetadata: {name: web, namespace: team.a}\nspec: {containers: [{name: app, image: app}]}\n")
	for _, tc := range []struct {
		args []string
		ns   string
	}{
		{[]string{"admit", "--dry-run", "-n", "team.a", "-f", pod}, "team.a"},
		{[]string{"admit", "--dry-run", "-f", inOwn}, "team.a"},
		{[]string{"admit", "--dry-run", "-n", ">", "-f", pod}, ">"},
		{[]string{"describe", "-n", "Team"}, "Team"},
		{[]string{"explain", "-n", "team*"}, "team*"},
		{[]string{"ingest", "-n", "team.a", pod}, "team.a"},
	} {
		out, errOut, code := s.run(tc.args...)
		want := `namespace "` + tc.ns + `" is not a valid name: `
		if code != exitError || out != "" || !strings.Contains(errOut, want) || strings.Contains(errOut, "no ledger server answers") {
			t.Errorf("quota %s: exit %d, stdout %q, stderr %q; want exit %d and %q", strings.Join(tc.args, " "), code, out, errOut, exitError, want)
		}
	}
	// Nothing was ingested: the pod is not in the log.
	if out := s.mustRun("describe", "-A"); out != "" {
		t.Errorf("describe -A after refused commands printed %q", out)
	}
}

// TestVersionCommand holds `quota version` to print what --version does.
func TestVersionCommand(t *testing.T) {
	flag, err := exec.Command(binary, "--version").Output()
	if err != nil {
		t.Fatal(err)
	}
	cmd, err := exec.Command(binary, "version").Output()
	if err != nil {
		t.Fatal(err)
	}
	if string(cmd) != string(flag) || !strings.HasPrefix(string(cmd), "quota version ") {
		t.Errorf("quota version printed %q, quota --version %q; want the same \"quota version ...\" line", cmd, flag)
	}
}
