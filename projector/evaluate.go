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

func evaluate(ev *ledger.Event, raw json.RawMessage, at time.Time) evaluated {
	o, err := decode(ev, raw)
	if err != nil {
		return evaluated{err: err}
	}
	charge, err := quota.Evaluate(o, at)
	if err != nil {
		return evaluated{err: skipf("evaluate %s %s/%s: %v", o.Resource, o.Namespace, o.Name, err)}
	}
	return evaluated{object: o, charge: charge}
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
