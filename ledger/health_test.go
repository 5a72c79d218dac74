package ledger_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/quotaledger/quota/ledger"
	"github.com/quotaledger/quota/ledger/ledgertest"
)

func TestHealthReportsAStoreThatCannotBeWritten(t *testing.T) {
	dir := t.TempDir()
	var logs ledgertest.LogBuffer
	emb, err := ledger.StartEmbedded(ledger.EmbeddedConfig{
		Port:     ledger.RandomPort,
		StoreDir: dir,
		Logger:   slog.New(slog.NewTextHandler(&logs, nil)),
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(emb.Shutdown)
	js := connectJetStream(t, emb.ClientURL())
	// A bound of 120 000 bytes makes JetStream's blocks 32 KiB: the second
	// block, where every write fails as on a full disk, comes after about
	// a hundred events.
	s := ledgertest.OpenStreamConfig(t, js, ledger.Config{AckWaitTimeout: 500 * time.Millisecond, MaxBytes: 120_000})
	if err := emb.Health(); err != nil {
		t.Fatalf("health of a new stream: %v", err)
	}
	ledgertest.FullDiskBlock(t, dir, ledger.DefaultStreamName, 2)

	// nats-server answers no append it could not store: the client times
	// out, and the error says where to look.
	var appended int
	for ; appended < 1000; appended++ {
		if _, err = s.Append(context.Background(), pod("a", fmt.Sprintf("p%d", appended)), ledger.AppendOptions{}); err != nil {
			break
		}
		if err := emb.Health(); err != nil {
			t.Fatalf("health after %d appends: %v", appended+1, err)
		}
	}
	if !errors.Is(err, ledger.ErrAckTimeout) || !strings.Contains(err.Error(), "log says") {
		t.Fatalf("append %d, to a full disk: got %v, want ErrAckTimeout naming the server's log", appended, err)
	}
	err = emb.Health()
	if !errors.Is(err, ledger.ErrStoreFailed) || !strings.Contains(err.Error(), "write error") ||
		!strings.Contains(err.Error(), ledger.DefaultStreamName) {
		t.Fatalf("health after the failed write: got %v, want ErrStoreFailed naming the stream and a write error", err)
	}
	// The server's own log reaches the logger, at its level. (A real full
	// disk adds the system's "no space left on device"; a block on
	// /dev/full fails one step later, as a block whose cache cannot be
	// loaded.)
	if got := logs.String(); !strings.Contains(got, "level=ERROR") || !strings.Contains(got, "critical write error") ||
		!strings.Contains(got, "component=nats") {
		t.Fatalf("the server's log does not say why it could not write:\n%s", got)
	}

	// A batch to the stream fails whole; the failures are told as one
	// run, not one line each.
	var entries []ledger.BatchEntry
	for i := range 20 {
		entries = append(entries, ledger.BatchEntry{Event: pod("a", fmt.Sprintf("b%d", i)), MsgID: fmt.Sprintf("b-%d", i)})
	}
	_, err = s.AppendBatch(context.Background(), entries)
	want := "append batch: 20 of 20 failed: entries 0 to 19 (20, on quota.events.a): timed out waiting"
	if !errors.Is(err, ledger.ErrAckTimeout) || !strings.HasPrefix(err.Error(), want) || strings.Contains(err.Error(), "\n") {
		t.Fatalf("batch to a full disk: got\n%v\nwant one line starting %q", err, want)
	}
}

// TestStartSaysWhyTheServerGaveUp starts a second server on the first
// one's port: the start fails at once with nats-server's own reason, not
// after the wait for a server that will never be ready.
func TestStartSaysWhyTheServerGaveUp(t *testing.T) {
	first, _, _ := ledgertest.StartServer(t)
	u, err := url.Parse(first.ClientURL())
	if err != nil {
		t.Fatal(err)
	}
	port, err := strconv.Atoi(u.Port())
	if err != nil {
		t.Fatal(err)
	}
	started := time.Now()
	second, err := ledger.StartEmbedded(ledger.EmbeddedConfig{Host: u.Hostname(), Port: port, StoreDir: t.TempDir(), ReadyTimeout: time.Minute})
	if err == nil {
		second.Shutdown()
		t.Fatal("a second server started on the first one's port")
	}
	if took := time.Since(started); !errors.Is(err, ledger.ErrServerNotReady) || !strings.Contains(err.Error(), "address already in use") || took > 30*time.Second {
		t.Fatalf("after %s: got %v, want ErrServerNotReady saying the address is in use, well within the minute's wait", took, err)
	}
}

// TestOpenSaysWhenTheServerHasNoJetStream opens the ledger's streams on a
// NATS server running without JetStream: the error says so, where NATS
// alone says only that nothing answered.
func TestOpenSaysWhenTheServerHasNoJetStream(t *testing.T) {
	srv, err := server.NewServer(&server.Options{Host: "127.0.0.1", Port: server.RANDOM_PORT, NoSigs: true, NoLog: true})
	if err != nil {
		t.Fatal(err)
	}
	srv.Start()
	t.Cleanup(srv.Shutdown)
	if !srv.ReadyForConnections(10 * time.Second) {
		t.Fatal("the server did not get ready")
	}
	js := connectJetStream(t, srv.ClientURL())
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := ledger.Open(ctx, js, ledger.Config{}); !errors.Is(err, ledger.ErrNoJetStream) {
		t.Errorf("open: got %v, want ErrNoJetStream", err)
	}
	if _, err := ledger.Attach(ctx, js, ledger.Config{}); !errors.Is(err, ledger.ErrNoJetStream) {
		t.Errorf("attach: got %v, want ErrNoJetStream", err)
	}
}

// connectJetStream connects to the server at url, closed when the test
// ends.
func connectJetStream(t *testing.T, url string) jetstream.JetStream {
	t.Helper()
	nc, err := nats.Connect(url, nats.MaxReconnects(0))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	return js
}
