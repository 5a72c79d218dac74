package admission

import (
	"context"
	"errors"
	"fmt"

	admissionv1 "k8s.io/api/admission/v1"

	"github.com/quotaledger/quota/ledger"
	"github.com/quotaledger/quota/ledger/object"
	"github.com/quotaledger/quota/ledger/quota"
	"github.com/quotaledger/quota/projector"
)

// Limits of one group commit.
const (
	// RoundReservationsMax bounds the creates decided in one round.
	RoundReservationsMax = 256
	// roundBytesShare is the share of the stream's largest event that the
	// objects of one round may take, leaving room for defaulting.
	roundBytesShare = 2
)

// A reserving create or update is decided in its namespace's next round.
// A round takes every request queued for the namespace, decides them one
// after the other against the namespace's view, each seeing the charges of
// those before it, and appends the reservations of the allowed ones as one
// Reserve event expecting the subject's last sequence to be the view's:
// one compare-and-swap and one write to disk for the whole group. While a
// round's append is on its way, the creates arriving meanwhile queue for
// the next one, so the more clients admit into a namespace at once, the
// more each write carries. On a conflict the round appends again at once
// when the events in between changed nothing (unchangedSince), and
// otherwise catches up with the subject and decides the whole group again.
//
// There is at most one round in flight per namespace: the first by the
// request that found none running, the next ones by a goroutine that
// lives while the namespace has creates queued.

// job is a reserving create or update waiting for its round.
type job struct {
	req *request
	// prepared is a create's object prepared against the namespace's
	// view when the request arrived, on the request's own goroutine; the
	// round uses it while the view's defaults are the same.
	prepared *prepared
	// update is set for an update: its objects, decoded.
	update *update
	// reservation is the reservation's ID: the request's uid, or a
	// random one.
	reservation string
	size        int
	done        chan outcome
}

// update is an update's object and the old object it replaces.
type update struct {
	obj, old *object.Object
	// subresource is the request's ("resize", "status" or none).
	subresource string
	// trimmed is obj's trimmed form, made when first reserved.
	trimmed []byte
}

type outcome struct {
	resp *admissionv1.AdmissionResponse
	err  error
	// charge is an allowed update's: what its reservation holds.
	charge quota.Charge
}

// queue holds the creates of one namespace waiting for a round.
type queue struct {
	jobs    []*job
	running bool
}

// enqueue queues j for its namespace's next round. When no round is
// running for the namespace, the caller becomes the namespace's leader:
// it runs the round (which holds j) itself, then hands what has queued
// meanwhile to a goroutine of its own, so a lone request is decided
// without a hand-off between goroutines.
func (r *Responder) enqueue(namespace string, j *job) {
	r.mu.Lock()
	q, ok := r.queues[namespace]
	if !ok {
		q = &queue{}
		r.queues[namespace] = q
	}
	q.jobs = append(q.jobs, j)
	lead := !q.running
	q.running = true
	r.mu.Unlock()
	if lead {
		r.rounds(namespace, q, true)
	}
}

// rounds runs rounds for a namespace until its queue is empty; a leader
// (first) runs one and passes the rest on.
func (r *Responder) rounds(namespace string, q *queue, first bool) {
	budget := int(r.stream.Config().MaxMsgSize) / roundBytesShare
	for {
		r.mu.Lock()
		n, size := 0, 0
		for n < len(q.jobs) && n < RoundReservationsMax && (n == 0 || size+q.jobs[n].size <= budget) {
			size += q.jobs[n].size
			n++
		}
		if n == 0 {
			q.running = false
			delete(r.queues, namespace)
			r.mu.Unlock()
			return
		}
		jobs := q.jobs[:n:n]
		q.jobs = q.jobs[n:]
		r.mu.Unlock()
		r.round(namespace, jobs)
		if first {
			r.mu.Lock()
			idle := len(q.jobs) == 0
			if idle {
				q.running = false
				delete(r.queues, namespace)
			}
			r.mu.Unlock()
			if !idle {
				go r.rounds(namespace, q, false)
			}
			return
		}
	}
}

// round decides jobs together and reserves what they charge, delivering
// each job's outcome.
func (r *Responder) round(namespace string, jobs []*job) {
	ctx, cancel := context.WithTimeout(context.Background(), RequestTimeout)
	defer cancel()
	outcomes := make([]outcome, len(jobs))
	deliver := func(err error) { deliverRound(jobs, outcomes, err) }
	// A panic deciding the round fails its requests, each answered once,
	// and leaves the namespace's queue running for the next round.
	defer ledger.Survive(r.cfg.Logger, "decide a round of reservations", func(err error) { failUnanswered(jobs, err) })
	// look is the attempt's read of the projection. A read left open
	// would hold every later commit of the projection that grows the
	// file, so it is closed however the attempt ends, a panic included.
	var look *lookup
	defer func() {
		if look != nil {
			look.close()
		}
	}()
	for range ReserveAttemptsMax {
		v, applied, err := r.states.get(ctx, namespace)
		if err != nil {
			deliver(err)
			return
		}
		look = &lookup{proj: r.proj}
		d := &draft{
			v:       v,
			applied: applied,
			st:      v.NamespaceState,
			ids:     make(map[string]bool, len(jobs)),
			look:    look,
		}
		err = r.decideRound(d, namespace, jobs, outcomes)
		// The read ends before the append: held while waiting on the log,
		// it would make a commit of the projection that grows the file wait.
		look.close()
		if err != nil {
			deliver(err)
			return
		}
		if d.wait != 0 {
			if err := r.proj.WaitApplied(ctx, d.wait); err != nil {
				deliver(err)
				return
			}
			continue
		}
		if len(d.reservations) == 0 {
			deliver(nil)
			return
		}
		again, err := r.commitRound(ctx, namespace, d)
		if again {
			continue
		}
		deliver(err)
		return
	}
	deliver(ErrContention)
}

// deliverRound answers each job of a round with its outcome, or with err
// when set.
func deliverRound(jobs []*job, outcomes []outcome, err error) {
	for i, j := range jobs {
		o := outcomes[i]
		if err != nil {
			o = outcome{err: err}
		}
		j.done <- o
	}
}

// failUnanswered answers with err each job of a round not answered yet.
func failUnanswered(jobs []*job, err error) {
	for _, j := range jobs {
		select {
		case j.done <- outcome{err: err}:
		default: // answered before the panic
		}
	}
}

// draft is one attempt of a round: the namespace's state as the round's
// decisions leave it, and the reservations they make.
type draft struct {
	// v is the namespace's view the attempt decides on, with applied the
	// namespace's last sequence the projection had applied.
	v       *view
	applied uint64
	// st is the state the decisions read and the reservations charge.
	st *projector.NamespaceState
	// owned says st is the round's own copy, charged in place.
	owned bool
	// reservations are to be appended, for the objects keys; charges
	// holds what each key's reservation charges when it is a create's,
	// nil for a hold.
	reservations []ledger.EncodedReservation
	keys         []string
	charges      []*quota.Charge
	// ids are the reservations' IDs.
	ids map[string]bool
	// look is the round's read of the projection, for holds.
	look *lookup
	// updated are the objects the round's updates reserve, by key, as
	// each reservation leaves them for the next; made by the first
	// update, as most rounds hold creates only.
	updated map[string]projector.Stored
	// wait, when set, is the sequence the projection must apply before
	// the round can decide.
	wait uint64
}

// own makes st the round's own copy before it is charged: the view's
// state is shared with the decisions reading it.
func (d *draft) own() {
	if !d.owned {
		d.st, d.owned = d.st.Clone(), true
	}
}

// decideRound decides each job on d, setting its outcome, until one must
// wait for the projection (d.wait). The error, when set, fails the round.
func (r *Responder) decideRound(d *draft, namespace string, jobs []*job, outcomes []outcome) error {
	for i, j := range jobs {
		if j.update == nil {
			if err := r.decideCreate(d, namespace, j, &outcomes[i]); err != nil {
				return err
			}
			continue
		}
		// A hold (an update's reservation) is checked against what the
		// projection has of the object, as the fold will apply
		// it (see projector.NamespaceState.Hold).
		u := j.update
		key := objectKey(u.obj.Resource, u.obj.Name)
		if at, ok := d.v.reservedAt(key); ok && at > d.applied {
			// This responder reserved the object in a round the
			// projection has not applied: the projection's read
			// would miss that reservation, so decide once it is in.
			d.wait = at
			return nil
		}
		if d.updated == nil {
			d.updated = map[string]projector.Stored{}
		}
		out, res, err := r.decideUpdate(d.v.env, d.st, d.look, j, d.updated, d.ids)
		if err != nil {
			return err
		}
		outcomes[i] = out
		if res.ID() == "" {
			continue
		}
		d.own()
		d.updated[key], _ = d.st.Hold(d.updated[key], out.charge)
		d.ids[res.ID()] = true
		d.keys = append(d.keys, key)
		d.charges = append(d.charges, nil)
		d.reservations = append(d.reservations, res)
	}
	return nil
}

// decideCreate decides a create job of a round on d, setting its outcome
// o and adding its reservation to d. The error, when set, fails the
// round; one of the request alone is in o.
func (r *Responder) decideCreate(d *draft, namespace string, j *job, o *outcome) error {
	p := j.prepared
	if p == nil || p.env != d.v.env {
		// Prepared against other defaults (or not at all): the
		// request's object is decoded and prepared again. A
		// prepared create is only read by decisions, so it serves
		// every attempt with the same defaults.
		obj, err := decodeObject(j.req.Object, namespace)
		if err != nil {
			*o = outcome{err: fmt.Errorf("%w: object: %v", ErrBadRequest, err)}
			return nil
		}
		p = prepare(d.v.env, obj, r.cfg.Limited)
		p.reserveAs(j.reservation)
		j.prepared = p
	}
	dec := p.decide(d.st)
	if !dec.allowed {
		*o = outcome{resp: failure(dec.code, dec.reason(), dec.message)}
		return nil
	}
	*o = outcome{resp: &admissionv1.AdmissionResponse{Allowed: true}}
	if !dec.charged {
		return nil
	}
	if p.err != nil {
		*o = outcome{err: p.err}
		return nil
	}
	res := p.reservation
	if d.ids[res.ID()] {
		// The same request twice in one round (a client's retry):
		// the second reservation needs an ID of its own, and
		// charges nothing when it names the same object.
		var err error
		if res, err = p.encode(newReservationID()); err != nil {
			*o = outcome{err: err}
			return nil
		}
	}
	d.ids[res.ID()] = true
	name := p.nameFor(res.ID())
	held, err := d.v.has(d.look, p.object.Resource, name)
	if err != nil {
		return err
	}
	key := objectKey(p.object.Resource, name)
	if !held && !contains(d.keys, key) {
		// The fold charges only the first reservation of an object
		// the namespace does not hold yet; so does the view. The
		// view's state is shared with the decisions reading it, so
		// the round charges a copy of its own.
		d.own()
		d.st.Reserve(p.charge)
		charge := p.charge
		d.keys = append(d.keys, key)
		d.charges = append(d.charges, &charge)
	}
	d.reservations = append(d.reservations, res)
	return nil
}

// commitRound appends the reservations of d, expecting the namespace's
// subject where the view saw it. again says another writer came first and
// the projection has caught up with it: the round decides again. When
// every event the other writers appended changed nothing the round's
// decisions read (unchangedSince), the decisions stand and are appended
// again at once.
func (r *Responder) commitRound(ctx context.Context, namespace string, d *draft) (again bool, err error) {
	for range ReserveAttemptsMax {
		seq, err := r.reserve(ctx, namespace, d.reservations, d.v.SubjectSeq)
		if errors.Is(err, ledger.ErrConflict) {
			r.cfg.Metrics.conflict()
			last, err := r.stream.LastSubjectSeq(ctx, namespace)
			if err != nil {
				return false, err
			}
			if v := r.unchangedSince(ctx, d, last); v != nil {
				r.cfg.Metrics.conflictUnchanged()
				d.v = v
				continue
			}
			// Catch up with the subject and decide the group again.
			if err := r.proj.WaitApplied(ctx, last); err != nil {
				return false, err
			}
			return true, nil
		}
		if err != nil {
			return false, err
		}
		r.cfg.Metrics.appended(len(d.reservations))
		// The reservations are durable in the log: answer now. The next
		// decisions in the namespace see them through the view, until the
		// projection has applied them.
		r.states.put(d.v.withReservations(d.st, d.keys, d.charges, seq, d.applied))
		return false, nil
	}
	return false, ErrContention
}

// UnchangedEventsMax bounds the events a round whose append was refused
// reads from the log to tell whether they changed anything; past it the
// round waits for the projection instead.
const UnchangedEventsMax = 32

// unchangedSince returns d's view advanced to last when every event of
// the namespace after the view, up to last, reports an object at the
// charge the view holds it at (projector.UnchangingUpsert): the exporter's
// ADDED event of a create reserved a moment ago, a pod's status. Such
// events leave every figure a decision reads as it was, so the round's
// decisions stand. It returns nil when any event may have changed
// something, or the events cannot be read, or the projection has applied
// them already: the round then catches up with the projection, the way
// that always holds.
func (r *Responder) unchangedSince(ctx context.Context, d *draft, last uint64) *view {
	if applied, _, err := r.proj.SubjectSeqs(d.v.Namespace); err != nil || applied >= last {
		// The projection has those events already: deciding again on it
		// costs no wait, and no reads of the log.
		return nil
	}
	records, complete, err := r.stream.SubjectRecords(ctx, d.v.Namespace, d.v.SubjectSeq, last, UnchangedEventsMax)
	if err != nil || !complete || len(records) == 0 || records[len(records)-1].Seq != last {
		return nil
	}
	look := &lookup{proj: r.proj}
	defer look.close()
	// seen holds the objects the events reported, at the view's charges.
	seen := map[string]quota.Charge{}
	for i := range records {
		resource, name, charge, ok := projector.UnchangingUpsert(&records[i])
		if !ok {
			return nil
		}
		key := objectKey(resource, name)
		if contains(d.keys, key) {
			// The round reserves the object as new.
			return nil
		}
		held, ok := seen[key]
		if !ok {
			var err error
			if held, ok, err = d.v.charge(look, resource, name); err != nil || !ok {
				return nil
			}
		}
		if !projector.SameCharge(held, charge) {
			return nil
		}
		seen[key] = held
	}
	return d.v.advancedTo(last)
}

// decideUpdate decides an update job of a round against st, with updated
// the objects the round's earlier updates reserved. It returns the
// reservation to append, a zero one when the update reserves nothing:
// denied, charging no quota, or adding nothing to what the object the
// projection holds charges (or a request the round or the projection
// holds a reservation of already). The outcome's charge is what the reservation holds. The
// error, when set, fails the round; one of the request alone is in the
// outcome.
func (r *Responder) decideUpdate(env *quota.Environment, st *projector.NamespaceState, look *lookup, j *job, updated map[string]projector.Stored, ids map[string]bool) (outcome, ledger.EncodedReservation, error) {
	var none ledger.EncodedReservation
	u := j.update
	d := decideUpdate(env, st, u.obj, u.old, u.subresource, r.cfg.Limited)
	if !d.allowed {
		return outcome{resp: failure(d.code, d.reason(), d.message)}, none, nil
	}
	allowed := outcome{resp: &admissionv1.AdmissionResponse{Allowed: true}, charge: d.charge}
	if !d.charged || ids[j.reservation] {
		return allowed, none, nil
	}
	key := objectKey(u.obj.Resource, u.obj.Name)
	h, ok := updated[key]
	if !ok {
		var err error
		if h, err = look.forUpdate(st.Namespace, u.obj.Resource, u.obj.Name); err != nil {
			return outcome{}, none, err
		}
		updated[key] = h
	}
	if h.Found() && !h.Adds(d.charge) {
		return allowed, none, nil
	}
	// An object the projection does not hold is reserved all the same:
	// its event may be in the log and not applied yet, and the append's
	// compare-and-swap finds that out (the round then catches up and
	// decides again). If the projection was current, the fold charges the
	// reservation nothing, and neither does the view.
	if again, err := look.reserved(j.reservation); err != nil || again {
		// A retried request whose reservation the projection holds.
		return allowed, none, err
	}
	if u.trimmed == nil {
		var err error
		if u.trimmed, err = u.obj.Trimmed(); err != nil {
			return outcome{err: err}, none, nil
		}
	}
	res, err := ledger.EncodeReservation(ledger.Reservation{ID: j.reservation, Resource: u.obj.Resource, Name: u.obj.Name, Object: u.trimmed, Operation: ledger.HoldOperation})
	if err != nil {
		return outcome{err: err}, none, nil
	}
	return allowed, res, nil
}

// reserve appends reservations as one Reserve event, expecting the
// namespace's subject to be at expect. No message ID is sent: the
// compare-and-swap admits one append per sequence, and a client's retry
// names an object the namespace already holds, so its reservation charges
// nothing.
func (r *Responder) reserve(ctx context.Context, namespace string, reservations []ledger.EncodedReservation, expect uint64) (uint64, error) {
	ttl, release := r.cfg.ReservationTTL, ""
	if r.cfg.ReleaseByFeed {
		ttl, release = r.cfg.StoreTimeout, ledger.ReleaseByFeed
	}
	ev, err := ledger.EncodeReserve(namespace, ttl, release, "admission", reservations)
	if err != nil {
		return 0, err
	}
	res, err := r.stream.AppendEncoded(ctx, ev, ledger.AppendOptions{ExpectLastSubjectSeq: &expect})
	if err != nil {
		return 0, err
	}
	return res.Seq, nil
}

func contains(keys []string, key string) bool {
	for _, k := range keys {
		if k == key {
			return true
		}
	}
	return false
}
