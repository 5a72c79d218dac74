package server

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/quotaledger/quota/ingest"
	"github.com/quotaledger/quota/ledger"
	"github.com/quotaledger/quota/ledger/ledgertest/workload"
	"github.com/quotaledger/quota/projector"
)

// TestStopAnswersQueriesReceived stops the ledger right after a burst of
// describe queries reached it, with events appended just before them:
// Run returns only once each query has its reply, and each is answered
// from the projection, not failed by the stop.
func TestStopAnswersQueriesReceived(t *testing.T) {
	ctx, stop := context.WithCancel(context.Background())
	defer stop()
	url, runDone := startLedger(t, ctx, Config{})
	client, err := nats.Connect(url, nats.MaxReconnects(0))
	if err != nil {
		t.Fatal(err)
	}
	defer client.Close()
	// Events for the projection to apply while the queries arrive.
	g, err := workload.New(workload.Config{Seed: 1, Namespaces: 4, Events: 3000})
	if err != nil {
		t.Fatal(err)
	}
	var batch []byte
	send := func() {
		t.Helper()
		m, err := client.Request(ingest.Subject, batch, 30*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		var reply ingest.Reply
		if err := json.Unmarshal(m.Data, &reply); err != nil || reply.Error != "" || len(reply.Rejected) > 0 {
			t.Fatalf("ingest: %s (%v)", m.Data, err)
		}
		batch = batch[:0]
	}
	for {
		line, ok := g.Next(nil)
		if !ok {
			break
		}
		if len(batch)+len(line) > 512<<10 {
			send()
		}
		batch = append(append(batch, line...), '\n')
	}
	send()
	describeThenStop(t, client, 200, stop, runDone)
}

// TestStopWaitsForTheProjectionTheQueriesNeed stops the ledger while its
// projection is behind the stream: events appended faster than it folds
// them (the embedded JetStream syncing once a second), then describe
// queries, then the stop. Each query waits for the projection to reach
// the stream's last sequence, so the projection must keep running until
// the queries received are answered; stopped with them, it would leave
// each to fail after its timeout.
func TestStopWaitsForTheProjectionTheQueriesNeed(t *testing.T) {
	ctx, stop := context.WithCancel(context.Background())
	defer stop()
	url, runDone := startLedger(t, ctx, Config{SyncInterval: time.Second})
	client, err := nats.Connect(url, nats.MaxReconnects(0))
	if err != nil {
		t.Fatal(err)
	}
	defer client.Close()
	js, err := jetstream.New(client)
	if err != nil {
		t.Fatal(err)
	}
	stream, err := ledger.Open(ctx, js, ledger.Config{})
	if err != nil {
		t.Fatal(err)
	}
	// The events go straight to the stream, as fast as ingest appends
	// them, with no round trip through the ledger per batch.
	g, err := workload.New(workload.Config{Seed: 1, Namespaces: 4, Events: 30000})
	if err != nil {
		t.Fatal(err)
	}
	var lines bytes.Buffer
	for {
		line, ok := g.Next(nil)
		if !ok {
			break
		}
		lines.Write(line)
		lines.WriteByte('\n')
	}
	in, err := ingest.New(stream, ingest.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if rep, err := in.IngestFile(ctx, "workload", &lines); err != nil || rep.Rejected > 0 {
		t.Fatalf("ingest: %+v, %v", rep, err)
	}
	describeThenStop(t, client, 50, stop, runDone)
}

// startLedger runs the ledger on cfg (with a listen address of its own,
// and unless cfg has them, a data dir and a quiet logger) until ctx ends,
// and returns its URL once it is ready and the channel Run's result
// arrives on.
func startLedger(t *testing.T, ctx context.Context, cfg Config) (string, <-chan error) {
	t.Helper()
	if cfg.DataDir == "" {
		cfg.DataDir = t.TempDir()
	}
	cfg.Listen = "127.0.0.1:0"
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	ready := make(chan string, 1)
	cfg.Ready = func(url string) { ready <- url }
	runDone := make(chan error, 1)
	go func() { runDone <- Run(ctx, cfg) }()
	select {
	case url := <-ready:
		return url, runDone
	case err := <-runDone:
		t.Fatalf("Run: %v", err)
	case <-time.After(30 * time.Second):
		t.Fatal("the ledger did not get ready")
	}
	return "", nil
}

// describeThenStop sends describe queries, stops the ledger once they are
// on their way and waits for Run to return; then every query must have a
// reply holding its quota list.
func describeThenStop(t *testing.T, client *nats.Conn, queries int, stop context.CancelFunc, runDone <-chan error) {
	t.Helper()
	inbox := nats.NewInbox()
	replies := make(chan *nats.Msg, queries)
	if _, err := client.ChanSubscribe(inbox+".*", replies); err != nil {
		t.Fatal(err)
	}
	body, err := json.Marshal(projector.DescribeRequest{Namespace: "tenant-00001"})
	if err != nil {
		t.Fatal(err)
	}
	for i := range queries {
		if err := client.PublishRequest(projector.SubjectDescribe, fmt.Sprintf("%s.%d", inbox, i), body); err != nil {
			t.Fatal(err)
		}
	}
	if err := client.Flush(); err != nil {
		t.Fatal(err)
	}
	stop()
	select {
	case err := <-runDone:
		if err != nil {
			t.Fatalf("Run: %v", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("Run did not return")
	}
	timeout := time.After(10 * time.Second)
	for answered := 0; answered < queries; answered++ {
		select {
		case m := <-replies:
			var reply projector.QueryReply
			if err := json.Unmarshal(m.Data, &reply); err != nil {
				t.Fatalf("reply to %s: %s (%v)", m.Subject, m.Data, err)
			}
			if reply.Error != "" || reply.List == nil {
				t.Fatalf("reply to %s: %s", m.Subject, m.Data)
			}
		case <-timeout:
			t.Fatalf("%d of %d queries answered", answered, queries)
		}
	}
}
