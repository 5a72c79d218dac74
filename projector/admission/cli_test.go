package admission

import (
	"bufio"
	"bytes"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"
)

var servingLine = regexp.MustCompile(`quota ledger serving.* nats=(\S+)`)

// TestAdmitCommandExitCodes drives the quota binary: `quota admit` reads a
// YAML manifest and exits 0 when allowed, 1 with the API server's message
// when denied (a 403, or a 422 for an invalid object), and 2 when it
// cannot ask.
func TestAdmitCommandExitCodes(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the quota binary")
	}
	dir := t.TempDir()
	bin := filepath.Join(dir, "quota")
	build := exec.Command("go", "build", "-o", bin, "../../cmd/quota")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("build quota: %v\n%s", err, out)
	}
	serve := exec.Command(bin, "serve", "--data", filepath.Join(dir, "data"), "--listen", "127.0.0.1:0", "--reservation-ttl", "10m")
	stderr, err := serve.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := serve.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = serve.Process.Signal(syscall.SIGTERM)
		_ = serve.Wait()
	})
	urls := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			if m := servingLine.FindStringSubmatch(sc.Text()); m != nil {
				select {
				case urls <- m[1]:
				default:
				}
			}
		}
	}()
	var url string
	select {
	case url = <-urls:
	case <-time.After(waitTimeout):
		t.Fatalf("quota serve did not serve within %s", waitTimeout)
	}
	run := func(args ...string) (string, int) {
		t.Helper()
		cmd := exec.Command(bin, append(args, "--server", url)...)
		var out bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &out
		err := cmd.Run()
		var exit *exec.ExitError
		switch {
		case err == nil:
			return out.String(), 0
		case errors.As(err, &exit):
			return out.String(), exit.ExitCode()
		}
		t.Fatalf("quota %v: %v", args, err)
		return "", 0
	}
	write := func(name, text string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	quotaFile := write("quota.yaml", "apiVersion: v1\nkind: ResourceQuota\nmetadata:\n  name: compute\n  namespace: team\n  uid: q1\nspec:\n  hard:\n    pods: \"1\"\n    requests.cpu: \"1\"\n")
	if out, code := run("ingest", quotaFile); code != 0 {
		t.Fatalf("ingest: exit %d\n%s", code, out)
	}
	pod := func(name, cpu string) string {
		return write(name+".yaml", "apiVersion: v1\nkind: Pod\nmetadata:\n  name: "+name+"\nspec:\n  containers:\n  - name: app\n    image: app:1\n    resources:\n      limits:\n        cpu: "+cpu+"\n")
	}
	cases := []struct {
		name string
		args []string
		code int
		out  string
	}{
		{name: "dry run that fits is allowed and reserves nothing", args: []string{"admit", "--dry-run", "-n", "team", "-f", pod("web-0", "500m")}, code: 0, out: "allowed\n"},
		{name: "too much cpu is denied with Kubernetes' message", args: []string{"admit", "-n", "team", "-f", pod("big", "2")}, code: 1,
			out: `pods "big" is forbidden: exceeded quota: compute, requested: requests.cpu=2, used: requests.cpu=0, limited: requests.cpu=1` + "\n"},
		{name: "a create that fits is allowed and reserved", args: []string{"admit", "-n", "team", "-f", pod("web-1", "500m")}, code: 0, out: "allowed\n"},
		{name: "the reservation counts for the next admission", args: []string{"admit", "-n", "team", "-f", pod("web-2", "100m")}, code: 1,
			out: `pods "web-2" is forbidden: exceeded quota: compute, requested: pods=1, used: pods=1, limited: pods=1` + "\n"},
		{name: "a request above its limit is invalid, as the API server says", args: []string{"admit", "--dry-run", "-n", "team", "-f",
			write("upside.yaml", "apiVersion: v1\nkind: Pod\nmetadata:\n  name: upside\nspec:\n  containers:\n  - name: app\n    image: app:1\n    resources:\n      requests:\n        cpu: 2\n      limits:\n        cpu: 1\n")}, code: 1,
			out: `Pod "upside" is invalid: spec.containers[0].resources.requests: Invalid value: "2": must be less than or equal to cpu limit of 1` + "\n"},
		{name: "a manifest that is not YAML is an error", args: []string{"admit", "-n", "team", "-f", write("bad.yaml", "kind: [Pod\n")}, code: 2},
		{name: "a missing file is an error", args: []string{"admit", "-n", "team", "-f", filepath.Join(dir, "none.yaml")}, code: 2},
		{name: "an object of another namespace is an error", args: []string{"admit", "-n", "team", "-f",
			write("other.yaml", "apiVersion: v1\nkind: Pod\nmetadata:\n  name: x\n  namespace: other\nspec:\n  containers:\n  - name: app\n    image: app:1\n")}, code: 2},
	}
	for _, tc := range cases {
		out, code := run(tc.args...)
		if code != tc.code {
			t.Errorf("%s: got exit %d, want %d\n%s", tc.name, code, tc.code, out)
			continue
		}
		if tc.out != "" && out != tc.out {
			t.Errorf("%s: got output %q, want %q", tc.name, out, tc.out)
		}
		if tc.code == 2 && strings.TrimSpace(out) == "" {
			t.Errorf("%s: exit 2 without a message", tc.name)
		}
	}
}
