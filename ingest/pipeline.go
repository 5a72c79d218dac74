package ingest

import (
	"context"
	"crypto/sha256"
	"errors"
	"runtime"
	"sync"
	"time"

	"github.com/quotaledger/quota/ledger"
)

// Limits of the ingest pipeline. Records are prepared (decoded, trimmed,
// hashed, encoded) by GOMAXPROCS workers, then applied in input order by one
// goroutine while one batch at a time is appended by another.
const (
	// PrepareQueueMax is the number of records read ahead of the one being
	// applied: it bounds the memory of records prepared out of order.
	PrepareQueueMax = 1024
	// PrepareWorkersMax bounds the goroutines preparing records, whatever
	// GOMAXPROCS says.
	PrepareWorkersMax = 64
)

// errStopped tells Parse to stop because the pipeline already failed; the
// failure itself is returned instead.
var errStopped = errors.New("ingest stopped")

// job is one record on its way through the pipeline; done receives its
// preparation exactly once.
type job struct {
	rec  Record
	done chan prepared
}

// prepared is what a record becomes without looking at other records: the
// order-dependent steps (unchanged-upsert memory, report, rejections) are
// left to the applying goroutine.
type prepared struct {
	rec Record
	// reject, when set, is the reason the record is rejected before the
	// unchanged-upsert memory is consulted.
	reject string
	// bookmark is a watch BOOKMARK, counted and skipped.
	bookmark bool
	// warnings are the record's problems that do not stop it.
	warnings []Rejection
	// lateReject, when set, is the reason an event is rejected after the
	// memory was updated (the stream would refuse it).
	lateReject string
	pendingEntry
}

// pipeline is the state of one IngestFile call: Parse submits records on
// the caller's goroutine, workers prepare them, apply consumes them in
// input order and hands full batches to append.
type pipeline struct {
	run

	work  chan *job
	order chan *job
	// batches holds no buffer: apply may build the next batch while one is
	// being appended, never hand over a second.
	batches chan []pendingEntry

	stop     chan struct{}
	stopOnce sync.Once
	err      error // the first failure; written once before stop closes

	workers sync.WaitGroup
	applied chan struct{}
	written chan struct{}

	// appends is counted by the appending goroutine, added to the report
	// at the end.
	appends Report
}

func newPipeline(in *Ingester, ctx context.Context) *pipeline {
	p := &pipeline{
		run:     run{in: in, ctx: ctx},
		work:    make(chan *job, PrepareQueueMax),
		order:   make(chan *job, PrepareQueueMax),
		batches: make(chan []pendingEntry),
		stop:    make(chan struct{}),
		applied: make(chan struct{}),
		written: make(chan struct{}),
	}
	workers := min(max(runtime.GOMAXPROCS(0), 1), PrepareWorkersMax)
	p.workers.Add(workers)
	for range workers {
		go p.prepareLoop()
	}
	go p.apply()
	go p.append()
	return p
}

// fail records the first failure and stops the pipeline.
func (p *pipeline) fail(err error) {
	p.stopOnce.Do(func() {
		p.err = err
		close(p.stop)
	})
}

func (p *pipeline) stopped() bool {
	select {
	case <-p.stop:
		return true
	default:
		return false
	}
}

// submit is Parse's callback: it queues rec for preparation and for
// applying in input order.
func (p *pipeline) submit(rec Record) error {
	j := &job{rec: rec, done: make(chan prepared, 1)}
	// A job is queued for applying only once it is queued for preparing,
	// so apply never waits for a preparation that will not come.
	select {
	case p.work <- j:
	case <-p.stop:
		return errStopped
	}
	select {
	case p.order <- j:
	case <-p.stop:
		return errStopped
	}
	return nil
}

// finish ends the input, waits for every goroutine and returns the first
// failure: the pipeline's, or else parseErr.
func (p *pipeline) finish(parseErr error) error {
	if parseErr != nil && !errors.Is(parseErr, errStopped) {
		// A read error: what was not yet applied is not appended, as the
		// input did not end where it should have.
		p.fail(parseErr)
	}
	close(p.work)
	close(p.order)
	p.workers.Wait()
	<-p.applied
	<-p.written
	p.report.Add(p.appends)
	return p.err
}

func (p *pipeline) prepareLoop() {
	defer p.workers.Done()
	for j := range p.work {
		j.done <- p.in.prepare(j.rec)
	}
}

// apply takes prepared records in input order, updates the unchanged-upsert
// memory and the report, keeps rejections, and hands a batch on when it is
// full or its oldest event has waited FlushDelay.
func (p *pipeline) apply() {
	defer close(p.applied)
	defer close(p.batches)
	var pending []pendingEntry
	flush := time.NewTimer(p.in.opts.FlushDelay)
	flush.Stop()
	defer flush.Stop()
	var due <-chan time.Time // flush's channel while pending holds events
	handOverPending := func() {
		due = nil
		flush.Stop()
		if p.handOver(pending) {
			pending = make([]pendingEntry, 0, p.in.opts.BatchSize)
		}
	}
	for {
		select {
		case j, ok := <-p.order:
			if !ok {
				if len(pending) > 0 && !p.stopped() {
					p.handOver(pending)
				}
				return
			}
			if p.stopped() {
				continue // drain
			}
			pr := <-j.done
			held := len(pending)
			if err := p.applyOne(pr, &pending); err != nil {
				p.fail(err)
				continue
			}
			switch {
			case len(pending) >= p.in.opts.BatchSize:
				handOverPending()
			case held == 0 && len(pending) > 0:
				flush.Reset(p.in.opts.FlushDelay)
				due = flush.C
			}
		case <-due:
			if !p.stopped() {
				handOverPending()
			}
			due = nil
		}
	}
}

// handOver gives batch to the appending goroutine, waiting while the
// previous batch is still being appended; it reports false when the
// pipeline stopped meanwhile.
func (p *pipeline) handOver(batch []pendingEntry) bool {
	select {
	case p.batches <- batch:
		return true
	case <-p.stop:
		return false
	}
}

// applyOne is the order-dependent part of one record.
func (p *pipeline) applyOne(pr prepared, pending *[]pendingEntry) error {
	if err := p.ctx.Err(); err != nil {
		return err
	}
	p.report.Warnings = listed(p.report.Warnings, pr.warnings...)
	if pr.reject != "" {
		return p.reject(pr.rec, pr.reject)
	}
	if pr.bookmark {
		p.report.Bookmarks++
		return nil
	}
	switch {
	case pr.plain, pr.deleted:
		// A plain object is judged against the log when its batch is
		// appended (judgePlain); a later watch event of the object must not
		// be skipped on a state remembered from before it.
		delete(p.in.last, pr.key)
	default:
		if prev, ok := p.in.last[pr.key]; ok && prev == pr.digest {
			p.report.Unchanged++
			return nil
		}
		p.in.remember(pr.key, pr.digest)
	}
	if pr.lateReject != "" {
		return p.reject(pr.rec, pr.lateReject)
	}
	*pending = append(*pending, pr.pendingEntry)
	return nil
}

// pendingEntry is an event on its way to the stream with what judgePlain
// needs to judge a plain object against the log.
type pendingEntry struct {
	entry   ledger.BatchEntry
	key     string
	digest  [sha256.Size]byte
	deleted bool
	// plain marks a plain object (not a watch event): skipped only when
	// the log holds its object in the state it states (judgePlain).
	plain bool
}

// append appends one batch at a time, in the order apply handed them, and
// waits for each batch's acknowledgements.
func (p *pipeline) append() {
	defer close(p.written)
	for batch := range p.batches {
		if p.stopped() {
			continue // drain
		}
		entries, unchanged, err := p.in.judgePlain(p.ctx, batch)
		if err != nil {
			p.fail(err)
			continue
		}
		p.appends.Unchanged += unchanged
		results, err := p.in.stream.AppendBatch(p.ctx, entries)
		p.appends.count(results)
		if err != nil {
			p.fail(err)
		}
	}
}
