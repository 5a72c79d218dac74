package server

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/quotaledger/quota/ingest"
	"github.com/quotaledger/quota/ledger"
	"github.com/quotaledger/quota/ledger/ledgertest"
)

// TestStopsWhenTheStoreCannotBeWritten gives the embedded JetStream a
// block where every write fails as on a full disk. nats-server then
// answers no append to the stream until it restarts, even once space is
// freed; serve stops, saying why and what to do, where its clients would
// only time out.
func TestStopsWhenTheStoreCannotBeWritten(t *testing.T) {
	ctx, stop := context.WithCancel(context.Background())
	defer stop()
	var logs ledgertest.LogBuffer
	cfg := Config{
		DataDir: t.TempDir(),
		// 32 KiB blocks: block 2 comes after about a hundred events.
		Stream: ledger.Config{MaxBytes: 120_000, AckWaitTimeout: time.Second},
		Logger: slog.New(slog.NewTextHandler(&logs, nil)),
	}
	url, runDone := startLedger(t, ctx, cfg)
	store := filepath.Join(cfg.DataDir, JetStreamDir)
	ledgertest.FullDiskBlock(t, store, ledger.DefaultStreamName, 2)

	client, err := nats.Connect(url, nats.MaxReconnects(0))
	if err != nil {
		t.Fatal(err)
	}
	defer client.Close()
	sent := 0
	var runErr error
ingesting:
	for sent < 500 {
		var batch strings.Builder
		for range 10 {
			fmt.Fprintf(&batch, `{"type":"ADDED","object":%s}`+"\n", pod("a", fmt.Sprintf("p%d", sent)))
			sent++
		}
		// The request fails or times out once the server stops.
		_, _ = client.Request(ingest.Subject, []byte(batch.String()), 5*time.Second)
		select {
		case runErr = <-runDone:
			break ingesting
		default:
		}
	}
	if runErr == nil {
		select {
		case runErr = <-runDone:
		case <-time.After(10 * time.Second):
			t.Fatalf("the ledger still runs after %d events sent to a stream it cannot write", sent)
		}
	}
	if !errors.Is(runErr, ledger.ErrStoreFailed) || !strings.Contains(runErr.Error(), "start serve again") ||
		!strings.Contains(runErr.Error(), store) {
		t.Fatalf("Run returned %v, want ErrStoreFailed naming the store and what to do", runErr)
	}
	got := logs.String()
	for _, want := range []string{"critical write error", "embedded JetStream failed; stopping"} {
		if !strings.Contains(got, want) {
			t.Errorf("the log does not say %q:\n%s", want, got)
		}
	}
}

// TestStopsWhenTheStreamIsGone deletes the stream serve follows, and then
// also creates it again: serve stops saying so, where its projection
// would wait for events of a stream that is no more, or skip the new
// stream's first events, whose sequences it has applied already.
func TestStopsWhenTheStreamIsGone(t *testing.T) {
	defer func(d time.Duration) { streamCheckInterval = d }(streamCheckInterval)
	streamCheckInterval = 100 * time.Millisecond
	for _, recreate := range []bool{false, true} {
		t.Run(fmt.Sprintf("created again %v", recreate), func(t *testing.T) {
			ctx, stop := context.WithCancel(context.Background())
			defer stop()
			url, runDone := startLedger(t, ctx, Config{})
			client, err := nats.Connect(url, nats.MaxReconnects(0))
			if err != nil {
				t.Fatal(err)
			}
			defer client.Close()
			js, err := jetstream.New(client)
			if err != nil {
				t.Fatal(err)
			}
			if recreate {
				ledgertest.RecreateStreams(t, js)
			} else if err := js.DeleteStream(ctx, ledger.DefaultStreamName); err != nil {
				t.Fatal(err)
			}
			select {
			case err := <-runDone:
				if !errors.Is(err, ledger.ErrStreamGone) || !strings.Contains(err.Error(), "start serve again") {
					t.Fatalf("Run returned %v, want ErrStreamGone saying what to do", err)
				}
			case <-time.After(20 * time.Second):
				t.Fatal("the ledger still runs 20 s after its stream was deleted")
			}
		})
	}
}
