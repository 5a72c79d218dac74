package server

import (
	"bytes"
	"log/slog"
	"strings"
	"testing"

	"github.com/nats-io/nats.go"
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
