package projector

import (
	"context"
	"errors"
	"sync"
	"time"
)

// errNoStream is CatchUp's error on a projection that follows no stream
// (a replay's).
var errNoStream = errors.New("the projection follows no stream")

// positionReadTimeout bounds one read of the stream's position shared by
// several CatchUps, whatever their own deadlines.
const positionReadTimeout = 10 * time.Second

// positions coalesces the reads of the stream's last sequence that
// concurrent CatchUps make: a caller joins the next read, one that starts
// after it arrived, never one already in flight, so it still sees every
// event acknowledged before it asked; at most one read runs at a time.
// Under many concurrent queries that is one read per round trip instead
// of one per query.
type positions struct {
	read func(context.Context) (uint64, error)

	mu      sync.Mutex
	next    *positionRead // the read that starts when the running one ends
	running bool
}

type positionRead struct {
	done    chan struct{}
	seq     uint64
	err     error
	callers int // how many joined it
}

// last returns the stream's last sequence as read after the call began.
func (ps *positions) last(ctx context.Context) (uint64, error) {
	if ps.read == nil {
		return 0, errNoStream
	}
	ps.mu.Lock()
	if ps.next == nil {
		ps.next = &positionRead{done: make(chan struct{})}
	}
	r := ps.next
	r.callers++
	if !ps.running {
		ps.running = true
		go ps.run()
	}
	ps.mu.Unlock()
	select {
	case <-r.done:
		return r.seq, r.err
	case <-ctx.Done():
		return 0, ctx.Err()
	}
}

// run makes the reads callers wait for, one after another, until none
// waits.
func (ps *positions) run() {
	for {
		ps.mu.Lock()
		r := ps.next
		ps.next = nil
		if r == nil {
			ps.running = false
			ps.mu.Unlock()
			return
		}
		ps.mu.Unlock()
		ctx, cancel := context.WithTimeout(context.Background(), positionReadTimeout)
		r.seq, r.err = ps.read(ctx)
		cancel()
		close(r.done)
	}
}
