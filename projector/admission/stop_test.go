package admission

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	admissionv1 "k8s.io/api/admission/v1"

	"github.com/quotaledger/quota/ledger"
	"github.com/quotaledger/quota/ledger/ledgertest"
	"github.com/quotaledger/quota/projector"
)

// TestStopAnswersEveryRequestReceived stops a responder right after a
// burst of requests, reserving creates and dry runs, has reached it: Run
// returns only once each of them has its reply, and each is decided as it
// would have been without the stop (allowed, under a quota none of them
// exhausts), not failed by the stop, and answered once, whichever of the
// responder's three subscriptions took it.
func TestStopAnswersEveryRequestReceived(t *testing.T) {
	const (
		ns       = "team"
		requests = 300
	)
	srv, _, js := ledgertest.StartServer(t)
	stream := ledgertest.OpenStream(t, js)
	upsert(t, stream, quotaManifest(ns, "q", map[string]string{"pods": "1000"}))
	proj, err := projector.Open(projector.Config{Path: filepath.Join(t.TempDir(), "projection.db"), NoSync: true, Logger: discardLogger()}, stream)
	if err != nil {
		t.Fatal(err)
	}
	projCtx, stopProj := context.WithCancel(context.Background())
	projDone := make(chan error, 1)
	go func() { projDone <- proj.Run(projCtx) }()
	t.Cleanup(func() {
		stopProj()
		<-projDone
		proj.Close()
	})
	connect := func() *nats.Conn {
		nc, err := nats.Connect(srv.ClientURL(), nats.MaxReconnects(0))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(nc.Close)
		return nc
	}
	respConn, client := connect(), connect()
	resp, err := NewResponder(respConn, stream, proj, Config{Logger: discardLogger(), Subscribers: 3})
	if err != nil {
		t.Fatal(err)
	}
	ctx, stop := context.WithCancel(context.Background())
	defer stop()
	runDone := make(chan error, 1)
	go func() { runDone <- resp.Run(ctx) }()
	poll(t, "responder subscribed", func() bool { return respConn.NumSubscriptions() == 3 })
	if err := respConn.Flush(); err != nil {
		t.Fatal(err)
	}

	inbox := nats.NewInbox()
	replies := make(chan *nats.Msg, requests)
	if _, err := client.ChanSubscribe(inbox+".*", replies); err != nil {
		t.Fatal(err)
	}
	for i := range requests {
		body := review(fmt.Sprintf("uid-%d", i), admissionv1.Create, ns, podManifest(ns, fmt.Sprintf("p-%d", i), "10m"), "", i%3 == 0)
		if err := client.PublishRequest(SubjectPrefix+ns, fmt.Sprintf("%s.%d", inbox, i), body); err != nil {
			t.Fatal(err)
		}
	}
	// Every request has reached the server, and so the responder's
	// connection, before the stop.
	if err := client.Flush(); err != nil {
		t.Fatal(err)
	}
	stop()
	select {
	case err := <-runDone:
		if err != nil {
			t.Fatalf("Run: %v", err)
		}
	case <-time.After(waitTimeout):
		t.Fatal("Run did not return")
	}
	seen := map[string]bool{}
	timeout := time.After(waitTimeout)
	for len(seen) < requests {
		select {
		case m := <-replies:
			var out admissionv1.AdmissionReview
			if err := json.Unmarshal(m.Data, &out); err != nil || out.Response == nil {
				t.Fatalf("reply to %s: %s (%v)", m.Subject, m.Data, err)
			}
			if !out.Response.Allowed {
				t.Errorf("reply to %s: not allowed: %+v", m.Subject, out.Response.Result)
			}
			if seen[m.Subject] {
				t.Errorf("reply to %s: answered twice", m.Subject)
			}
			seen[m.Subject] = true
		case <-timeout:
			t.Fatalf("%d of %d requests answered", len(seen), requests)
		}
	}
}

// TestRunStopsWhenItsConnectionCloses closes the responder's connection
// under it: Run returns ErrSubscriptionClosed rather than seem to run
// while answering nothing.
func TestRunStopsWhenItsConnectionCloses(t *testing.T) {
	srv, _, js := ledgertest.StartServer(t)
	stream := ledgertest.OpenStream(t, js)
	proj, err := projector.Open(projector.Config{Path: filepath.Join(t.TempDir(), "projection.db"), NoSync: true, Logger: discardLogger()}, stream)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { proj.Close() })
	nc, err := nats.Connect(srv.ClientURL(), nats.MaxReconnects(0))
	if err != nil {
		t.Fatal(err)
	}
	resp, err := NewResponder(nc, stream, proj, Config{Logger: discardLogger()})
	if err != nil {
		t.Fatal(err)
	}
	runDone := make(chan error, 1)
	go func() { runDone <- resp.Run(t.Context()) }()
	poll(t, "responder subscribed", func() bool { return nc.NumSubscriptions() > 0 })
	nc.Close()
	select {
	case err := <-runDone:
		if !errors.Is(err, ledger.ErrSubscriptionClosed) {
			t.Fatalf("Run: %v, want ErrSubscriptionClosed", err)
		}
	case <-time.After(waitTimeout):
		t.Fatal("Run did not return once its connection closed")
	}
}
