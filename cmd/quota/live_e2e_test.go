package main

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

// TestIngestOfALiveFeed pipes watch events into 'quota ingest -' and keeps
// its input open, as a watch piped in does: the events must be described
// while the feed is open, and a SIGINT must end the input cleanly, what
// was read appended and the exit status 0.
func TestIngestOfALiveFeed(t *testing.T) {
	s := startServer(t, t.TempDir())
	f, err := os.Open(filepath.Join(samplesDir, "sample-team-a", "events.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var events []string
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		events = append(events, sc.Text())
	}

	cmd := exec.Command(binary, "ingest", "-", "--server", s.url)
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()
	// Up to the second pod: the account, the quota and its status
	// updates, ledger-api and ledger-worker.
	for _, e := range events[:8] {
		if _, err := stdin.Write([]byte(e + "\n")); err != nil {
			t.Fatal(err)
		}
	}
	twoPods := regexp.MustCompile(`(?m)^pods\s+2\s+8$`)
	deadline := time.Now().Add(10 * time.Second)
	for {
		out, _, _ := s.run("describe", "-n", "sample-team-a")
		if twoPods.MatchString(out) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("10 s after eight events were piped in, describe says:\n%s\ningest: %s", out, stderr.String())
		}
		time.Sleep(20 * time.Millisecond)
	}

	if err := cmd.Process.Signal(syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		var ee *exec.ExitError
		if errors.As(err, &ee) || err != nil {
			t.Fatalf("ingest stopped by SIGINT: %v\n%s", err, stderr.String())
		}
	case <-time.After(30 * time.Second):
		t.Fatalf("ingest did not stop within 30 s of SIGINT\n%s", stderr.String())
	}
	for _, want := range []string{"stopped by a signal", "ingested 8 records"} {
		if !strings.Contains(stderr.String(), want) {
			t.Errorf("ingest's output lacks %q:\n%s", want, stderr.String())
		}
	}
}
