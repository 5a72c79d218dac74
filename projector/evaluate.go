package projector

import (
	"encoding/json"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"github.com/quotaledger/quota/ledger"
	"github.com/quotaledger/quota/ledger/object"
	"github.com/quotaledger/quota/ledger/quota"
)

// evaluated is an object carried by an event, decoded, with its charge:
// the pure part of applying an upsert. It depends only on the record's
// bytes and stream time, so it is computed for a whole batch in parallel
// before the sequential apply, which then only reads and writes state.
type evaluated struct {
	object *object.Object
	charge quota.Charge
	err    error // why the object cannot be applied (an errSkip)
}

// parallelBatchMin is the smallest batch evaluated on several goroutines;
// below it the hand-off costs more than it saves.
const parallelBatchMin = 64

// testHookEvaluate, set by tests only, is called with every object
// evaluated.
var testHookEvaluate func(*object.Object)

func evaluate(ev *ledger.Event, raw json.RawMessage, at time.Time) (e evaluated) {
	// A panic reading one record (a bug, whatever the record holds) skips
	// that record, with a trace, rather than stopping the projector on it
	// at every start.
	defer ledger.Survive(nil, "decode and evaluate an object", func(err error) { e = evaluated{err: skipf("%v", err)} })
	o, err := decode(ev, raw)
	if err != nil {
		return evaluated{err: err}
	}
	if testHookEvaluate != nil {
		testHookEvaluate(o)
	}
	charge, err := quota.Evaluate(o, judgedAt(o, at))
	if err != nil {
		return evaluated{err: skipf("evaluate %s %s/%s: %v", o.Resource, o.Namespace, o.Name, err)}
	}
	return evaluated{object: o, charge: charge}
}

// judgedAt is the moment at which the fold judges the object of an event
// the stream received at: when the event happened. For most events that
// is the stream time, but a pod being deleted is judged when its deletion
// was requested: the API server sets deletionTimestamp to the request's
// time plus the grace period. So the pod keeps counting however late its
// event is ingested (a recording, a backlog) until a Deadline event says
// its deadline passed (deadline.go), its DELETED event, or, with a zero
// grace period, at once.
func judgedAt(o *object.Object, at time.Time) time.Time {
	if o.Resource != "pods" || o.DeletionTimestamp == nil || o.DeletionGracePeriodSeconds == nil {
		return at
	}
	grace := time.Duration(*o.DeletionGracePeriodSeconds) * time.Second
	if seen := o.DeletionTimestamp.Add(-grace).Add(time.Nanosecond); seen.Before(at) {
		return seen
	}
	return at
}

// evaluateRecord evaluates the objects one record carries.
func evaluateRecord(rec *ledger.Record) []evaluated {
	if rec.Err != nil {
		return nil
	}
	ev := &rec.Event
	switch ev.Type {
	case ledger.Upsert:
		return []evaluated{evaluate(ev, ev.Object, rec.Time)}
	case ledger.Reserve:
		reserved := ev.Reserved()
		out := make([]evaluated, len(reserved))
		for i, r := range reserved {
			out[i] = evaluate(ev, r.Object, rec.Time)
			if o := out[i].object; o != nil && len(ev.Reservations) > 0 && (o.Resource != r.Resource || o.Name != r.Name) {
				out[i] = evaluated{err: skipf("reservation %s names %s %s but holds %s %s", r.ID, r.Resource, r.Name, o.Resource, o.Name)}
			}
		}
		return out
	case ledger.Resync:
		out := make([]evaluated, len(ev.Items))
		for i, raw := range ev.Items {
			out[i] = evaluate(ev, raw, rec.Time)
		}
		return out
	}
	return nil
}

// evaluateAll evaluates every record's objects, on up to GOMAXPROCS
// goroutines for a large batch.
func evaluateAll(records []ledger.Record) [][]evaluated {
	out := make([][]evaluated, len(records))
	workers := runtime.GOMAXPROCS(0)
	if len(records) < parallelBatchMin || workers < 2 {
		for i := range records {
			out[i] = evaluateRecord(&records[i])
		}
		return out
	}
	var next atomic.Int64
	var wg sync.WaitGroup
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := int(next.Add(1) - 1)
				if i >= len(records) {
					return
				}
				out[i] = evaluateRecord(&records[i])
			}
		}()
	}
	wg.Wait()
	return out
}
