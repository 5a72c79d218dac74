package main

import (
	"bufio"
	"bytes"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"

	"github.com/quotaledger/quota/ledger/ledgertest"
)

// TestServeStopsWhenItsProjectionCannotBeWritten runs serve under a file
// size limit (the shell's ulimit -f, which fails a write past it as a full
// disk does) that its projection outgrows. Serve must stop with an error
// that says the projection file cannot be written and what to do, and a
// serve started again without the limit must go on from the last batch
// committed and reach the usage of a projection built afresh.
func TestServeStopsWhenItsProjectionCannotBeWritten(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("file size limits through sh's ulimit -f are checked on Linux")
	}
	ns := startNATS(t, &server.Options{JetStream: true, StoreDir: t.TempDir()})
	url := ns.ClientURL()
	first, rest := splitLines(t, writeWorkload(t, 4, 3000), 200)
	data := t.TempDir()

	// 1024 blocks of 512 bytes: room for the checkpoints of the first
	// events' projection, not for all of them.
	limited := exec.Command("sh", "-c", `ulimit -f 1024 && exec "$0" "$@"`,
		binary, "serve", "--nats", url, "--data", data, "--projection-checkpoint-every", "500")
	logs := &ledgertest.LogBuffer{}
	limited.Stderr = logs
	if err := limited.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- limited.Wait() }()
	t.Cleanup(func() {
		if limited.ProcessState == nil {
			limited.Process.Kill()
			<-exited
		}
	})
	client := &ledgerProc{t: t, url: url}
	for deadline := time.Now().Add(30 * time.Second); !strings.Contains(logs.String(), "quota ledger serving"); {
		if time.Now().After(deadline) {
			t.Fatalf("serve under the limit did not start in 30 s\n%s", logs)
		}
		time.Sleep(20 * time.Millisecond)
	}
	client.mustRun("ingest", first)
	if out := client.mustRun("describe", "-A"); !strings.Contains(out, "Resource") {
		t.Fatalf("describe after the first events:\n%s", out)
	}
	client.mustRun("ingest", rest)

	select {
	case err := <-exited:
		var ee *exec.ExitError
		if !errors.As(err, &ee) || ee.ExitCode() != exitError {
			t.Fatalf("serve under the limit ended with %v, want exit %d\n%s", err, exitError, logs)
		}
	case <-time.After(60 * time.Second):
		t.Fatalf("serve still runs 60 s after its projection outgrew the file size limit\n%s", logs)
	}
	for _, want := range []string{"projection file cannot be written", "file too large", "it holds every event to seq", "start serve again", "the stream keeps every event"} {
		if !strings.Contains(logs.String(), want) {
			t.Errorf("serve's error does not say %q:\n%s", want, logs)
		}
	}

	// Started again without the limit, it goes on from where it stopped.
	s := startServer(t, data, "--nats", url)
	m := regexp.MustCompile(`projector following stream" from_seq=(\d+)`).FindStringSubmatch(s.logs.String())
	if m == nil {
		t.Fatalf("no start position in the log:\n%s", s.logs)
	}
	if from, _ := strconv.Atoi(m[1]); from <= 1 {
		t.Errorf("the projection started again from seq %d, want past the batches committed under the limit\n%s", from, s.logs)
	}
	got := s.mustRun("describe", "-A", "-o", "json")
	s.stop()

	fresh := startServer(t, t.TempDir(), "--nats", url)
	if want := fresh.mustRun("describe", "-A", "-o", "json"); got != want {
		t.Errorf("usage after the stop and start:\n%s\nwant, from a fresh projection:\n%s", got, want)
	}
}

// splitLines writes the first n lines of the file at path to one new
// file and the rest to another.
func splitLines(t *testing.T, path string, n int) (head, tail string) {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var a, b bytes.Buffer
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<24)
	for i := 0; sc.Scan(); i++ {
		w := &a
		if i >= n {
			w = &b
		}
		w.Write(sc.Bytes())
		w.WriteByte('\n')
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	head, tail = filepath.Join(dir, "head.jsonl"), filepath.Join(dir, "tail.jsonl")
	for name, buf := range map[string]*bytes.Buffer{head: &a, tail: &b} {
		if err := os.WriteFile(name, buf.Bytes(), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	return head, tail
}
