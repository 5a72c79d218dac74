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
	if !foldReadsValue(o) {
		// The typed value is most of what a decoded object weighs, and a
		// prepared batch waits with its objects while the one before it is
		// folded.
		o.Value = nil
	}
	return evaluated{object: o, charge: charges.intern(charge)}
}

// foldReadsValue says whether the fold reads the typed value of an
// evaluated object: a quota's spec (upsertQuota), and a pod being deleted,
// which is charged again once its deadline passes (deadlineCharge).
func foldReadsValue(o *object.Object) bool {
	return o.Resource == "resourcequotas" || o.Resource == "pods" && o.DeletionTimestamp != nil
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

// charges are the charges of the objects evaluated lately, by their
// encoding: the pods of one workload have one charge, and the records
// that share a charge share its figures' map, which is most of what a
// record of a pod weighs. Sharing is safe because a charge is never
// changed once evaluated (quota.Evaluate makes a new one every time).
var charges = chargeTable{m: make(map[string]quota.Charge)}

// chargeTableMax bounds the distinct charges kept; a full table starts
// over, which costs sharing, never correctness.
const chargeTableMax = 8192

type chargeTable struct {
	mu sync.Mutex
	m  map[string]quota.Charge
}

// intern returns the charge equal to c, encoding for encoding, that the
// table holds, or c, which it then holds.
func (t *chargeTable) intern(c quota.Charge) quota.Charge {
	var scratch [256]byte
	key := appendCharge(scratch[:0], &c)
	t.mu.Lock()
	defer t.mu.Unlock()
	if held, ok := t.m[string(key)]; ok {
		return held
	}
	t.hold(key, c)
	return c
}

// decode returns the charge encoded as b (appendCharge): the table's, or
// one read from b, which it then holds.
func (t *chargeTable) decode(b []byte) (quota.Charge, error) {
	t.mu.Lock()
	held, ok := t.m[string(b)]
	t.mu.Unlock()
	if ok {
		return held, nil
	}
	var c quota.Charge
	if err := readCharge(b, &c); err != nil {
		return c, err
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	t.hold(b, c)
	return c, nil
}

// hold keeps c under key, starting the table over when it is full.
func (t *chargeTable) hold(key []byte, c quota.Charge) {
	if len(t.m) >= chargeTableMax {
		clear(t.m)
	}
	t.m[string(key)] = c
}
