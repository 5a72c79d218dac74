package ledger_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/quotaledger/quota/ledger"
)

const serveTimeout = 10 * time.Second

// serving runs ledger.Serve of routes on nc until the test ends, or
// until the returned cancel; its error arrives on the channel, which is
// closed after it.
func serving(t *testing.T, nc *nats.Conn, routes ...ledger.Route) (context.CancelFunc, <-chan error) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	// The last route answers at once: once it does, the routes before it
	// are subscribed too.
	ready := route("s.ready", 0, func(_ context.Context, m *nats.Msg) func() {
		_ = m.Respond(nil)
		return nil
	})
	go func() {
		done <- ledger.Serve(ctx, nc, append(routes, ready)...)
		close(done)
	}()
	t.Cleanup(func() {
		cancel()
		<-done
	})
	for deadline := time.Now().Add(serveTimeout); ; {
		_, err := nc.Request("s.ready", nil, serveTimeout)
		if err == nil {
			break
		}
		if !errors.Is(err, nats.ErrNoResponders) || time.Now().After(deadline) {
			t.Fatalf("serving: %v", err)
		}
	}
	return cancel, done
}

// route is a route of subject in the test's queue group, with inFlight
// workers running what handle hands back.
func route(subject string, inFlight int, handle func(ctx context.Context, m *nats.Msg) func()) ledger.Route {
	return ledger.Route{Subject: subject, Queue: "test", PendingMsgsMax: 64, PendingBytesMax: 1 << 20, InFlightMax: inFlight, Handle: handle}
}

// ask sends n requests on subject, each with its number as its body,
// and returns the channel their answers arrive on.
func ask(t *testing.T, nc *nats.Conn, subject string, n int) <-chan *nats.Msg {
	t.Helper()
	answers := make(chan *nats.Msg, n)
	inbox := nc.NewInbox()
	sub, err := nc.ChanSubscribe(inbox, answers)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = sub.Unsubscribe() })
	for i := range n {
		if err := nc.PublishRequest(subject, inbox, fmt.Appendf(nil, "%d", i)); err != nil {
			t.Fatal(err)
		}
	}
	return answers
}

// answered waits for n answers on answers.
func answered(t *testing.T, answers <-chan *nats.Msg, n int) {
	t.Helper()
	timeout := time.After(serveTimeout)
	for i := range n {
		select {
		case <-answers:
		case <-timeout:
			t.Fatalf("%d of %d answers within %s", i, n, serveTimeout)
		}
	}
}

// waitUntil polls cond until it holds, failing the test past
// serveTimeout.
func waitUntil(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(serveTimeout); !cond(); {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within %s", what, serveTimeout)
		}
		time.Sleep(time.Millisecond)
	}
}

// TestServeBoundsTheWorkInFlight hands every request's work to two
// workers, each held until released: two run, the others wait, and every
// request is answered once the work may end.
func TestServeBoundsTheWorkInFlight(t *testing.T) {
	nc := connect(t, 1<<20)
	var running, most atomic.Int32
	release := make(chan struct{})
	serving(t, nc, route("s.work", 2, func(_ context.Context, m *nats.Msg) func() {
		return func() {
			n := running.Add(1)
			for {
				if old := most.Load(); n <= old || most.CompareAndSwap(old, n) {
					break
				}
			}
			<-release
			running.Add(-1)
			_ = m.Respond(m.Data)
		}
	}))
	answers := ask(t, nc, "s.work", 6)
	waitUntil(t, "two requests at work", func() bool { return running.Load() == 2 })
	close(release)
	answered(t, answers, 6)
	if got := most.Load(); got != 2 {
		t.Errorf("at most %d at work at once, want 2", got)
	}
}

// TestServeAnswersWhatItReceivedBeforeReturning ends Serve's context
// while one request is at work, one waits for the worker and others wait
// in the subscription: Serve returns only once each is answered.
func TestServeAnswersWhatItReceivedBeforeReturning(t *testing.T) {
	nc := connect(t, 1<<20)
	var started atomic.Int32
	release := make(chan struct{})
	cancel, done := serving(t, nc, route("s.drain", 1, func(ctx context.Context, m *nats.Msg) func() {
		return func() {
			started.Add(1)
			select {
			case <-release:
			case <-ctx.Done():
				t.Error("a request's context ended with Serve's")
			}
			_ = m.Respond(m.Data)
		}
	}))
	answers := ask(t, nc, "s.drain", 4)
	waitUntil(t, "a request at work", func() bool { return started.Load() == 1 })
	cancel()
	select {
	case err := <-done:
		t.Fatalf("Serve returned %v with requests unanswered", err)
	default:
	}
	close(release)
	answered(t, answers, 4)
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("Serve: %v", err)
		}
	case <-time.After(serveTimeout):
		t.Fatal("Serve did not return once its requests were answered")
	}
}

// TestServeAnswersOnTheSubscriptionWithNoWorkers answers on the
// subscription's goroutine, in the order received, when a route has no
// workers.
func TestServeAnswersOnTheSubscriptionWithNoWorkers(t *testing.T) {
	nc := connect(t, 1<<20)
	var (
		mu    sync.Mutex
		order []string
	)
	serving(t, nc, route("s.inline", 0, func(_ context.Context, m *nats.Msg) func() {
		return func() {
			mu.Lock()
			order = append(order, string(m.Data))
			mu.Unlock()
			_ = m.Respond(m.Data)
		}
	}))
	answered(t, ask(t, nc, "s.inline", 3), 3)
	mu.Lock()
	defer mu.Unlock()
	if fmt.Sprint(order) != "[0 1 2]" {
		t.Errorf("handled %v, want [0 1 2]", order)
	}
}

// TestServeNoticesAClosedSubscription closes the connection Serve
// subscribes on: Serve returns ErrSubscriptionClosed.
func TestServeNoticesAClosedSubscription(t *testing.T) {
	nc := connect(t, 1<<20)
	_, done := serving(t, nc, route("s.closed", 1, func(_ context.Context, m *nats.Msg) func() {
		_ = m.Respond(m.Data)
		return nil
	}))
	nc.Close()
	select {
	case err := <-done:
		if !errors.Is(err, ledger.ErrSubscriptionClosed) {
			t.Fatalf("Serve: %v, want ErrSubscriptionClosed", err)
		}
	case <-time.After(serveTimeout):
		t.Fatal("Serve did not notice its subscription closed")
	}
}

// TestServeOnAClosedConnection: a connection closed before Serve
// subscribes (or while it does) ends it as a close after would.
func TestServeOnAClosedConnection(t *testing.T) {
	nc := connect(t, 1<<20)
	nc.Close()
	err := ledger.Serve(context.Background(), nc, route("s.gone", 1, nil))
	if !errors.Is(err, ledger.ErrSubscriptionClosed) {
		t.Fatalf("Serve: %v, want ErrSubscriptionClosed", err)
	}
}

// TestServeWantsPendingLimits refuses a route without them.
func TestServeWantsPendingLimits(t *testing.T) {
	nc := connect(t, 1<<20)
	r := route("s.limits", 1, nil)
	r.PendingMsgsMax = 0
	if err := ledger.Serve(context.Background(), nc, r); !errors.Is(err, ledger.ErrInvalidConfig) {
		t.Fatalf("Serve: %v, want ErrInvalidConfig", err)
	}
}
