package ingest_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
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

// TestResponderAnswersStates asks a responder whose Ingester knows a
// projection for current states over NATS, as `quota ingest` does: an
// object in the log has its state's digest, which RemoteStates on a
// client and the projection agree on, one not in the log none, and a
// request over StatesKeysMax is refused.
func TestResponderAnswersStates(t *testing.T) {
	_, nc, js := ledgertest.StartServer(t)
	s := ledgertest.OpenStream(t, js)
	local := projectionStates(t, s)
	in, err := ingest.New(s, ingest.Options{States: local})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() { _ = ingest.NewResponder(nc, in, nil).Run(ctx) }()
	ingestString(t, in, "q.yaml", quota10)

	request := func(subject string, body []byte) (*nats.Msg, error) {
		deadline := time.Now().Add(requestTimeout)
		for {
			msg, err := nc.Request(subject, body, requestTimeout)
			if errors.Is(err, nats.ErrNoResponders) && time.Now().Before(deadline) {
				continue
			}
			return msg, err
		}
	}
	keys := []ingest.ObjectKey{{Namespace: "ns", Resource: "resourcequotas", Name: "q"}, {Namespace: "ns", Resource: "pods", Name: "none"}}
	remote, err := ingest.RemoteStates(request).ObjectStates(context.Background(), keys)
	if err != nil {
		t.Fatal(err)
	}
	want, err := local.ObjectStates(context.Background(), keys)
	if err != nil {
		t.Fatal(err)
	}
	if len(remote) != 2 || remote[0] != want[0] || remote[1] != want[1] || remote[0].Digest == "" || remote[1].Digest != "" || remote[0].After != 1 {
		t.Fatalf("states: remote %+v, local %+v; want the quota's digest after seq 1 and none for the pod", remote, want)
	}
	tooMany := make([]ingest.ObjectKey, ingest.StatesKeysMax+1)
	if _, err := ingest.RemoteStates(request).ObjectStates(context.Background(), tooMany); err == nil || !strings.Contains(err.Error(), "at most") {
		t.Fatalf("%d keys: %v, want a refusal naming the limit", len(tooMany), err)
	}
}
