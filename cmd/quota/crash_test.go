package main

import (
	"bufio"
	"encoding/json"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/quotaledger/quota/ledger/ledgertest/workload"
)

// writeWorkload writes a generated watch stream of n events to a file.
func writeWorkload(t *testing.T, seed uint64, n int) string {
	t.Helper()
	gen, err := workload.New(workload.Config{Seed: seed, Namespaces: 6, Events: n})
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "events.jsonl")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	w := bufio.NewWriter(f)
	var line []byte
	for {
		var ok bool
		line, ok = gen.Next(line[:0])
		if !ok {
			break
		}
		w.Write(line)
		w.WriteByte('\n')
	}
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	f.Close()
	return path
}

// TestCrashDuringIngest kills `quota serve` with SIGKILL at random points of
// a large ingest, restarts it and re-runs the ingest (as an operator would),
// then checks that the projection equals a fresh fold of the log to the
// same sequence: nothing acknowledged is lost and nothing is counted twice.
func TestCrashDuringIngest(t *testing.T) {
	if testing.Short() {
		t.Skip("kills and restarts the server several times")
	}
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(seed, 0))
	events := writeWorkload(t, seed, 10000)
	data := t.TempDir()

	s := startServer(t, data)
	for kill := range 3 {
		ingest := exec.Command(binary, "ingest", "-q", events, "--server", s.url)
		if err := ingest.Start(); err != nil {
			t.Fatal(err)
		}
		// A random crash point, not a wait for a condition.
		time.Sleep(time.Duration(50+rng.IntN(700)) * time.Millisecond)
		s.kill()
		start := time.Now()
		_ = ingest.Wait() // it fails when the server goes away mid-run
		t.Logf("ingest client gave up %s after the kill", time.Since(start).Round(time.Millisecond))
		t.Logf("kill %d: server killed during ingest", kill+1)
		s = startServer(t, data)
	}
	// The operator re-runs the ingest; already appended events are
	// deduplicated by their message ids.
	s.mustRun("ingest", "-q", events)
	live := s.mustRun("describe", "-A", "-o", "json")

	// The log goes on growing (the sweep appends a Deadline event for
	// each pod left terminating past its deadline): the fresh fold stops
	// where the live projection was.
	var list struct {
		Metadata struct {
			ResourceVersion string `json:"resourceVersion"`
		} `json:"metadata"`
	}
	if err := json.Unmarshal([]byte(live), &list); err != nil || list.Metadata.ResourceVersion == "" {
		t.Fatalf("describe -A -o json: no resourceVersion (%v)", err)
	}
	rebuilt := s.mustRun("replay", "--until-seq", list.Metadata.ResourceVersion, "-o", "json")
	var got, want expectation
	if err := json.Unmarshal([]byte(live), &got); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal([]byte(rebuilt), &want); err != nil {
		t.Fatal(err)
	}
	if len(got.Items) != len(want.Items) {
		t.Fatalf("live projection has %d quotas, a fresh fold of the log to seq %s %d", len(got.Items), list.Metadata.ResourceVersion, len(want.Items))
	}
	for i := range want.Items {
		g, w := &got.Items[i], &want.Items[i]
		if g.Namespace+"/"+g.Name != w.Namespace+"/"+w.Name || statusStrings(g.Status.Used) != statusStrings(w.Status.Used) || statusStrings(g.Status.Hard) != statusStrings(w.Status.Hard) {
			t.Errorf("projection after crashes differs from a fresh fold of the log:\nlive %s/%s used %s\nfresh %s/%s used %s",
				g.Namespace, g.Name, statusStrings(g.Status.Used), w.Namespace, w.Name, statusStrings(w.Status.Used))
		}
	}
}

// TestOneStopSignaledTwice sends SIGTERM twice, 50 ms apart, as
// timeout(1) does (to the process, then to its process group) when the
// first has been handled before the second arrives: the two count as one
// request to stop, and the server stops cleanly rather than at once.
func TestOneStopSignaledTwice(t *testing.T) {
	s := startServer(t, t.TempDir())
	for i := range 2 {
		if i > 0 {
			time.Sleep(50 * time.Millisecond)
		}
		if err := s.cmd.Process.Signal(syscall.SIGTERM); err != nil {
			t.Fatal(err)
		}
	}
	select {
	case err := <-s.done:
		if err != nil {
			t.Fatalf("quota serve: %v\n%s", err, s.logs)
		}
	case <-time.After(30 * time.Second):
		s.cmd.Process.Kill()
		t.Fatalf("quota serve did not stop within 30s\n%s", s.logs)
	}
	if logs := s.logs.String(); !strings.Contains(logs, "quota ledger stopped") || strings.Contains(logs, "second signal") {
		t.Errorf("not a clean stop:\n%s", logs)
	}
}
