package main

import (
	"os/exec"
	"strings"
	"testing"
)

// TestVersion asks the binary for its version, and checks serve logs it.
func TestVersion(t *testing.T) {
	out, err := exec.Command(binary, "--version").Output()
	if err != nil {
		t.Fatal(err)
	}
	if got := string(out); !strings.HasPrefix(got, "quota version ") || !strings.Contains(got, ", go1.") {
		t.Errorf("quota --version printed %q, want the build and the Go release", got)
	}
	s := startServer(t, t.TempDir())
	if logs := s.logs.String(); !strings.Contains(logs, `msg="quota serve starting" version=`) {
		t.Errorf("serve did not log its version:\n%s", logs)
	}
}
