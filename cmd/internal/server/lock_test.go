package server

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestDataDirTakesOneServer starts a second server on a running one's
// data dir: it refuses at once, naming the first server's process, before
// opening anything there, and the first goes on serving. Once the first
// has stopped, a server starts on the directory again.
func TestDataDirTakesOneServer(t *testing.T) {
	dir := t.TempDir()
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	start := func(ctx context.Context) (<-chan string, <-chan error) {
		ready := make(chan string, 1)
		done := make(chan error, 1)
		go func() {
			done <- Run(ctx, Config{DataDir: dir, Listen: "127.0.0.1:0", Logger: quiet, Ready: func(url string) { ready <- url }})
		}()
		return ready, done
	}
	waitReady := func(ready <-chan string, done <-chan error) {
		t.Helper()
		select {
		case <-ready:
		case err := <-done:
			t.Fatalf("Run: %v", err)
		case <-time.After(30 * time.Second):
			t.Fatal("the ledger did not get ready")
		}
	}

	ctx, stop := context.WithCancel(context.Background())
	defer stop()
	ready, done := start(ctx)
	waitReady(ready, done)

	began := time.Now()
	err := Run(context.Background(), Config{DataDir: dir, Listen: "127.0.0.1:0", Logger: quiet})
	if !errors.Is(err, ErrDataDirInUse) {
		t.Fatalf("second server: got %v, want ErrDataDirInUse", err)
	}
	if pid := "pid " + strconv.Itoa(os.Getpid()); !strings.Contains(err.Error(), pid) || !strings.Contains(err.Error(), dir) {
		t.Errorf("error %q names neither the directory nor %s", err, pid)
	}
	// Without waiting for the projection file's lock (two seconds).
	if took := time.Since(began); took > time.Second {
		t.Errorf("the second server took %v to refuse", took)
	}
	select {
	case err := <-done:
		t.Fatalf("the first server stopped: %v", err)
	default:
	}

	stop()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	ctx2, stop2 := context.WithCancel(context.Background())
	defer stop2()
	ready, done = start(ctx2)
	waitReady(ready, done)
	stop2()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}
