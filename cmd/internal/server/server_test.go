package server

import (
	"bytes"
	"context"
	"errors"
	"io"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/quotaledger/quota/ledger"
	"github.com/quotaledger/quota/ledger/ledgertest"
)

// TestConnectionLogsSlowConsumers checks that an asynchronous error of a
// subscription, such as the slow consumer whose messages the client
// drops, reaches the log with the subscription's subject.
func TestConnectionLogsSlowConsumers(t *testing.T) {
	var buf bytes.Buffer
	log := slog.New(slog.NewTextHandler(&buf, nil))
	var opts nats.Options
	for _, o := range connectionLogs(log) {
		if err := o(&opts); err != nil {
			t.Fatal(err)
		}
	}
	if opts.AsyncErrorCB == nil {
		t.Fatal("no error handler set")
	}
	opts.AsyncErrorCB(nil, &nats.Subscription{Subject: "quota.admit.*"}, nats.ErrSlowConsumer)
	got := buf.String()
	for _, want := range []string{"level=WARN", "subject=quota.admit.*", nats.ErrSlowConsumer.Error()} {
		if !strings.Contains(got, want) {
			t.Errorf("log %q lacks %q", got, want)
		}
	}
}

// TestExternalNATSMustTakeTheLargestEvent runs the ledger against an
// external NATS whose max_payload (1 MiB) is under the largest event asked
// for: Run refuses to start, naming both figures, rather than accept
// events the server would then refuse. At the server's own size it runs.
func TestExternalNATSMustTakeTheLargestEvent(t *testing.T) {
	srv, _, _ := ledgertest.StartServer(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	err := Run(ctx, Config{DataDir: t.TempDir(), NATSURL: srv.ClientURL(), Stream: ledger.Config{MaxMsgSize: 4 << 20},
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if !errors.Is(err, ErrPayloadLimit) || !strings.Contains(err.Error(), "at most 1048576 bytes") || !strings.Contains(err.Error(), "4194304") {
		t.Fatalf("got %v, want ErrPayloadLimit naming 1048576 and 4194304", err)
	}

	ready := make(chan struct{})
	done := make(chan error, 1)
	runCtx, stop := context.WithCancel(ctx)
	go func() {
		done <- Run(runCtx, Config{DataDir: t.TempDir(), NATSURL: srv.ClientURL(), Stream: ledger.Config{MaxMsgSize: 1 << 20},
			Logger: slog.New(slog.NewTextHandler(io.Discard, nil)), Ready: func(string) { close(ready) }})
	}()
	select {
	case <-ready:
	case err := <-done:
		t.Fatalf("at the server's own size: %v", err)
	case <-ctx.Done():
		t.Fatal("not ready in time")
	}
	stop()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}

// TestWarnsWhenListeningBeyondLoopback starts the embedded server on every
// interface: serve warns that it takes unauthenticated connections from
// other machines. On loopback it does not.
func TestWarnsWhenListeningBeyondLoopback(t *testing.T) {
	for _, tc := range []struct {
		listen string
		warns  bool
	}{
		{"0.0.0.0:0", true},
		{"127.0.0.1:0", false},
	} {
		var logs ledgertest.LogBuffer
		ready := make(chan struct{})
		done := make(chan error, 1)
		ctx, stop := context.WithCancel(context.Background())
		go func() {
			done <- Run(ctx, Config{DataDir: t.TempDir(), Listen: tc.listen, Logger: slog.New(slog.NewTextHandler(&logs, nil)),
				Ready: func(string) { close(ready) }})
		}()
		select {
		case <-ready:
		case err := <-done:
			t.Fatalf("--listen %s: %v", tc.listen, err)
		case <-time.After(30 * time.Second):
			t.Fatalf("--listen %s: not ready in 30 s", tc.listen)
		}
		stop()
		if err := <-done; err != nil {
			t.Fatal(err)
		}
		if warned := strings.Contains(logs.String(), "with no authentication"); warned != tc.warns {
			t.Errorf("--listen %s: warned %v, want %v:\n%s", tc.listen, warned, tc.warns, logs.String())
		}
	}
}
