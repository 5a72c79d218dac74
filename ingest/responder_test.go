package ingest_test

import (
	"context"
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/quotaledger/quota/ingest"
	"github.com/quotaledger/quota/ledger/ledgertest"
)

const requestTimeout = 10 * time.Second

func TestResponderRepliesAfterTheAppend(t *testing.T) {
	_, nc, js := ledgertest.StartServer(t)
	s := ledgertest.OpenStream(t, js)
	in, err := ingest.New(s, ingest.Options{})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- ingest.NewResponder(nc, in, nil).Run(ctx) }()

	request := func(payload string, source string) ingest.Reply {
		t.Helper()
		msg := nats.NewMsg(ingest.Subject)
		msg.Data = []byte(payload)
		if source != "" {
			msg.Header.Set(ingest.SourceHeader, source)
		}
		// The responder may not have subscribed yet: retry on no
		// responders until the deadline.
		deadline := time.Now().Add(requestTimeout)
		for {
			resp, err := nc.RequestMsg(msg, requestTimeout)
			if errors.Is(err, nats.ErrNoResponders) && time.Now().Before(deadline) {
				continue
			}
			if err != nil {
				t.Fatalf("request: %v", err)
			}
			var reply ingest.Reply
			if err := json.Unmarshal(resp.Data, &reply); err != nil {
				t.Fatalf("reply %s: %v", resp.Data, err)
			}
			return reply
		}
	}
	cm := `{"type":"ADDED","object":{"kind":"ConfigMap","apiVersion":"v1","metadata":{"name":"c","namespace":"ns","uid":"u","resourceVersion":"1"}}}`
	reply := request(cm, "exporter-a")
	if reply.Appended != 1 || len(reply.Rejected) != 0 || reply.Error != "" {
		t.Fatalf("first: got %+v", reply)
	}
	// The event is in the stream when the reply arrives.
	if last, _ := s.LastSeq(context.Background()); last != 1 {
		t.Fatalf("last seq after reply: got %d, want 1", last)
	}
	reply = request(cm+"\n"+`{"type":"BOOKMARK","object":{"kind":"ConfigMap","apiVersion":"v1","metadata":{"resourceVersion":"2"}}}`+"\nnot json\n", "")
	if reply.Skipped != 1 || reply.Bookmarks != 1 || len(reply.Rejected) != 1 || reply.Rejected[0].Source != "quota.ingest:3" {
		t.Fatalf("second: got %+v", reply)
	}
	recs := ledgertest.ReadAll(t, s, 1)
	if recs[0].Event.Source != "exporter-a:1" {
		t.Errorf("source: got %q, want exporter-a:1", recs[0].Event.Source)
	}

	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("run: %v", err)
		}
	case <-time.After(requestTimeout):
		t.Fatal("run did not return after its context ended")
	}
}
