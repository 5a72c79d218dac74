package export

import "context"

// window bounds the watch events read and not yet acknowledged, over all
// resources: acquire waits while it is full, which holds the watch that
// read the event back; it never drops one.
type window struct {
	slots   chan struct{}
	metrics *metrics
}

func newWindow(size int, m *metrics) *window {
	return &window{slots: make(chan struct{}, size), metrics: m}
}

func (w *window) acquire(ctx context.Context) error {
	select {
	case w.slots <- struct{}{}:
	default:
		w.metrics.windowFull.Inc()
		select {
		case w.slots <- struct{}{}:
		case <-ctx.Done():
			return ErrStopped
		}
	}
	w.metrics.inFlight.Set(float64(len(w.slots)))
	return nil
}

func (w *window) release(n int) {
	for range n {
		<-w.slots
	}
	w.metrics.inFlight.Set(float64(len(w.slots)))
}
