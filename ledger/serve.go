package ledger

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
)

// ServeDrainTimeout bounds how long Serve, once its context has ended,
// waits for its subscriptions to hand over the requests they received.
// Past it the rest are dropped: their clients time out and ask again.
const ServeDrainTimeout = time.Minute

// Route is a subject Serve answers.
type Route struct {
	// Subject is subscribed in the queue group Queue, so that several
	// servers share its requests and each is answered once.
	Subject, Queue string
	// Subscriptions is how many subscriptions of the queue group take
	// the subject's requests, each delivering on a goroutine of its own.
	// Zero: one.
	Subscriptions int
	// PendingMsgsMax and PendingBytesMax bound each subscription's
	// requests received and not yet taken by Handle; past them the
	// connection drops requests as a slow consumer's and reports it to its
	// error handler. Both must be set.
	PendingMsgsMax, PendingBytesMax int
	// InFlightMax is how many workers, living as long as Serve, run the
	// work Handle hands back; a subscription waits for a free one, its
	// requests queuing meanwhile. Zero: the work runs on the subscription's
	// goroutine.
	InFlightMax int
	// Handle takes each request on its subscription's goroutine, in the
	// order received, and answers it or returns the work that does. Its
	// context outlives Serve's, for the drain, so each handler bounds its
	// own time. Handle and its work recover their own panics (Survive).
	Handle func(ctx context.Context, m *nats.Msg) (work func())
}

// Serve answers routes on nc until ctx ends: it subscribes each route,
// bounds its work in flight and its requests waiting, and once ctx ends
// drains the subscriptions, answering the requests received (for at most
// ServeDrainTimeout), and returns nil once every handler and its work have
// returned. A subscription that closes before ctx ends (its connection
// closed, the server took it away) stops the others and makes Serve
// return ErrSubscriptionClosed naming it.
func Serve(ctx context.Context, nc *nats.Conn, routes ...Route) error {
	// A connection's close leaves its subscriptions' status alone: it is
	// watched apart. Registered before the subscriptions, it misses no
	// close after them.
	connClosed := nc.StatusChanged(nats.CLOSED)
	defer nc.RemoveStatusListener(connClosed)
	s := &serving{}
	defer s.stop()
	for _, rt := range routes {
		if err := s.subscribe(context.WithoutCancel(ctx), nc, rt); err != nil {
			return closedUnder(err)
		}
	}
	// A round trip to the server makes the subscriptions effective
	// before the caller is seen to be serving.
	if err := nc.Flush(); err != nil {
		return closedUnder(fmt.Errorf("serve: subscribe: %w", err))
	}
	if subject := s.firstClosed(ctx, connClosed); subject != "" {
		return fmt.Errorf("%w: %s", ErrSubscriptionClosed, subject)
	}
	return s.drain(connClosed)
}

// closedUnder is err, as ErrSubscriptionClosed if the connection closed
// while Serve subscribed: the same end as a close just after.
func closedUnder(err error) error {
	if errors.Is(err, nats.ErrConnectionClosed) {
		return fmt.Errorf("%w: %w", ErrSubscriptionClosed, err)
	}
	return err
}

// serving is what Serve keeps of its routes.
type serving struct {
	subs []*nats.Subscription
	// closed are the subscriptions' channels of SubscriptionClosed.
	closed []<-chan nats.SubStatus
	pools  []*workers
	// Each delivery holds handling for reading while it runs; stop takes
	// it for writing, so it waits for the deliveries in progress, and a
	// delivery the subscription makes after it (a message taken just
	// before the unsubscribe) finds stopped and does nothing.
	handling sync.RWMutex
	stopped  bool
}

// subscribe subscribes rt, handing its requests to rt.Handle under ctx.
func (s *serving) subscribe(ctx context.Context, nc *nats.Conn, rt Route) error {
	if rt.PendingMsgsMax <= 0 || rt.PendingBytesMax <= 0 {
		return fmt.Errorf("%w: serve %s: pending limits must be set", ErrInvalidConfig, rt.Subject)
	}
	w := startWorkers(rt.InFlightMax)
	s.pools = append(s.pools, w)
	handle := func(m *nats.Msg) {
		s.handling.RLock()
		defer s.handling.RUnlock()
		if s.stopped {
			return
		}
		if work := rt.Handle(ctx, m); work != nil {
			w.run(work)
		}
	}
	for range max(rt.Subscriptions, 1) {
		sub, err := nc.QueueSubscribe(rt.Subject, rt.Queue, handle)
		if err == nil {
			s.subs = append(s.subs, sub)
			s.closed = append(s.closed, sub.StatusChanged(nats.SubscriptionClosed))
			err = sub.SetPendingLimits(rt.PendingMsgsMax, rt.PendingBytesMax)
		}
		if err != nil {
			return fmt.Errorf("subscribe %s: %w", rt.Subject, err)
		}
	}
	return nil
}

// firstClosed waits until ctx ends, returning "", or until a
// subscription or the connection closes, naming it.
func (s *serving) firstClosed(ctx context.Context, connClosed <-chan nats.Status) string {
	ended := make(chan string, len(s.closed))
	quit := make(chan struct{})
	defer close(quit)
	for i, c := range s.closed {
		go func() {
			select {
			case <-c:
				ended <- s.subs[i].Subject
			case <-quit:
			}
		}()
	}
	select {
	case <-ctx.Done():
		return ""
	case subject := <-ended:
		return subject
	case <-connClosed:
		return "the connection"
	}
}

// drain drains the subscriptions and waits, at most ServeDrainTimeout,
// until each has handed its last request over and closed, or the
// connection has.
func (s *serving) drain(connClosed <-chan nats.Status) error {
	var errs []error
	for _, sub := range s.subs {
		if err := sub.Drain(); err != nil && !errors.Is(err, nats.ErrConnectionClosed) && !errors.Is(err, nats.ErrBadSubscription) {
			errs = append(errs, fmt.Errorf("drain %s: %w", sub.Subject, err))
		}
	}
	timeout := time.NewTimer(ServeDrainTimeout)
	defer timeout.Stop()
	for _, c := range s.closed {
		select {
		case <-c:
		case <-connClosed:
			return errors.Join(errs...)
		case <-timeout.C:
			return errors.Join(append(errs, fmt.Errorf("drain: requests still waiting after %s, dropped", ServeDrainTimeout))...)
		}
	}
	return errors.Join(errs...)
}

// stop unsubscribes, then returns once every delivery and every worker's
// work has returned.
func (s *serving) stop() {
	for _, sub := range s.subs {
		_ = sub.Unsubscribe()
	}
	s.handling.Lock()
	s.stopped = true
	s.handling.Unlock()
	for _, w := range s.pools {
		w.stop()
	}
}

// workers run a route's work, at most n at once; with none, run runs
// the work itself.
type workers struct {
	n    int
	work chan func()
	wg   sync.WaitGroup
}

// startWorkers starts n workers. They live until stop: a worker's stack,
// grown by its first requests, serves the next ones as it is.
func startWorkers(n int) *workers {
	w := &workers{n: n, work: make(chan func())}
	for range n {
		w.wg.Go(func() {
			for f := range w.work {
				f()
			}
		})
	}
	return w
}

// run runs f on a worker, waiting for one to be free, or itself when
// there are no workers.
func (w *workers) run(f func()) {
	if w.n == 0 {
		f()
		return
	}
	w.work <- f
}

// stop returns once every worker has finished its work. No work may be
// handed over after it is called.
func (w *workers) stop() {
	close(w.work)
	w.wg.Wait()
}
