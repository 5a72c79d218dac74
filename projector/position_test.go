package projector

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// TestPositionsJoinOnlyReadsThatStartAfterThem: callers that arrive while
// a read is in flight share the next read, never the one in flight, so
// each sees a position read after it asked; many concurrent callers cost
// a few reads, not one each.
func TestPositionsJoinOnlyReadsThatStartAfterThem(t *testing.T) {
	var reads atomic.Uint64
	release := make(chan struct{})
	ps := &positions{read: func(context.Context) (uint64, error) {
		n := reads.Add(1)
		if n == 1 {
			<-release
		}
		return n, nil
	}}
	first := make(chan uint64)
	go func() {
		seq, _ := ps.last(context.Background())
		first <- seq
	}()
	for reads.Load() == 0 {
		time.Sleep(time.Millisecond)
	}
	// The first read is in flight: these callers arrived after it began.
	var wg sync.WaitGroup
	got := make([]uint64, 32)
	for i := range got {
		wg.Add(1)
		go func() {
			defer wg.Done()
			got[i], _ = ps.last(context.Background())
		}()
	}
	for joined := 0; joined < len(got); {
		time.Sleep(time.Millisecond)
		ps.mu.Lock()
		if ps.next != nil {
			joined = ps.next.callers
		}
		ps.mu.Unlock()
	}
	close(release)
	if seq := <-first; seq != 1 {
		t.Fatalf("the first caller got read %d, want 1", seq)
	}
	wg.Wait()
	for i, seq := range got {
		if seq < 2 {
			t.Fatalf("caller %d got read %d, which began before it arrived", i, seq)
		}
	}
	if n := reads.Load(); n != 2 {
		t.Fatalf("%d reads for 33 callers, want 2: the later 32 share one", n)
	}
}

// TestPositionsWithoutAStream: a projection that follows no stream says
// so rather than waiting.
func TestPositionsWithoutAStream(t *testing.T) {
	var ps positions
	if _, err := ps.last(context.Background()); err != errNoStream {
		t.Fatalf("got %v, want errNoStream", err)
	}
}
