package admission

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"time"

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

// groupCommit decides j, a reserving create or update, in its namespace's
// next round and returns its outcome: the group commit of reservations, as
// bbolt's DB.Batch is the group commit of writes. Rounds, their decide and
// commit steps, and the namespace's view in the cache (stateCache) are one
// mechanism, with this contract:
//
// What is batched: the reserving requests of one namespace that queue
// while a round is in flight there; the next round takes them all, up to
// RoundReservationsMax of them whose objects fit in the stream's
// MaxMsgSize/roundBytesShare bytes, and its reservations go to the log as
// one Reserve event, with one compare-and-swap and one write to disk. A
// responder has at most one round in flight per namespace: the request
// that finds none running leads it on its own goroutine, and a goroutine
// of the namespace's runs those that queued meanwhile, so the more clients
// admit into a namespace at once, the more each write carries.
//
// What may be re-run: the decisions. An attempt reads the namespace's view
// from the cache, decides the requests one after the other on it
// (decideRound: each sees the charges of those before it, on a copy of the
// view's state) and appends the allowed ones' reservations expecting the
// subject's last sequence to be the view's (commitRound). When another
// writer (a replica, ingest, a sweep) appended first, JetStream refuses
// the append; the attempt leaves nothing behind but the requests' objects
// prepared against the namespace's defaults, and once the projection has
// applied the subject's new last event the whole group is decided again on
// a fresh view. So deciding has no effect outside its attempt, and at most
// ReserveAttemptsMax attempts are made before the round fails with
// ErrContention.
//
// What a caller waits for: its own outcome, delivered once, when the
// round's Reserve event is durable in the log (JetStream acknowledged it),
// or when the round fails; a request that is denied or charges nothing
// waits for its round all the same. The view with the round's reservations
// on top is in the cache before any outcome is delivered, so the next
// decisions in the namespace, the caller's included, see them without
// waiting for the projection. ctx bounds only the caller's wait: a round
// goes on without it, within RequestTimeout.
func (r *Responder) groupCommit(ctx context.Context, namespace string, j *job) (outcome, error) {
	r.enqueue(ctx, namespace, j)
	select {
	case o := <-j.done:
		return o, nil
	case <-ctx.Done():
		return outcome{}, fmt.Errorf("waiting for the namespace's reservations: %w", ctx.Err())
	}
}

// enqueue queues j for its namespace's next round. When no round is
// running for the namespace, the caller becomes the namespace's leader:
// it runs the round (which holds j) itself, then hands what has queued
// meanwhile to a goroutine of its own, so a lone request is decided
// without a hand-off between goroutines.
func (r *Responder) enqueue(ctx context.Context, namespace string, j *job) {
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
		r.rounds(ctx, namespace, q, true)
	}
}

// rounds runs rounds for a namespace until its queue is empty; a leader
// (first) runs one and passes the rest on. ctx is the leader's request's:
// its round ends by the request's deadline, which the request counted
// from its arrival.
func (r *Responder) rounds(ctx context.Context, namespace string, q *queue, first bool) {
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
		r.round(ctx, namespace, jobs)
		if first {
			r.mu.Lock()
			idle := len(q.jobs) == 0
			if idle {
				q.running = false
				delete(r.queues, namespace)
			}
			r.mu.Unlock()
			if !idle {
				go r.rounds(context.Background(), namespace, q, false)
			}
			return
		}
	}
}

// round decides jobs together and reserves what they charge, delivering
// each job's outcome (see groupCommit).
func (r *Responder) round(leader context.Context, namespace string, jobs []*job) {
	deadline := time.Now().Add(RequestTimeout)
	if d, ok := leader.Deadline(); ok && d.Before(deadline) {
		deadline = d
	}
	ctx, cancel := context.WithDeadline(context.Background(), deadline)
	defer cancel()
	// A panic deciding the round fails its requests, each answered once,
	// and leaves the namespace's queue running for the next round.
	defer ledger.Survive(r.cfg.Logger, "decide a round of reservations", func(err error) { failUnanswered(jobs, err) })
	outcomes := make([]outcome, len(jobs))
	unmoved := 0
	for try := range ReserveAttemptsMax {
		again, err := r.attempt(ctx, namespace, jobs, outcomes, try, &unmoved)
		if !again || err != nil {
			deliverRound(jobs, outcomes, err)
			return
		}
	}
	err := ErrContention
	if unmoved > ReserveAttemptsMax/2 {
		err = fmt.Errorf("%w: the log refused %d of %d compare-and-swaps with the namespace unmoved, as a leader does while it changes or cannot reach its followers", ErrContention, unmoved, ReserveAttemptsMax)
	}
	deliverRound(jobs, outcomes, err)
}

// attempt decides jobs on the namespace's current view, setting their
// outcomes, and appends their reservations. again says the round must
// decide again: the projection has applied what the attempt waited for.
func (r *Responder) attempt(ctx context.Context, namespace string, jobs []*job, outcomes []outcome, try int, unmoved *int) (again bool, err error) {
	v, applied, err := r.states.get(ctx, namespace)
	if err != nil {
		return false, err
	}
	// A read of the projection left open would hold every later commit of
	// the projection that grows the file, so it is closed however the
	// decisions end, a panic included, and before the append, which may
	// wait on the log.
	objs, err := r.proj.Objects()
	if err != nil {
		return false, err
	}
	defer objs.Close()
	d := &draft{v: v, applied: applied, st: v.NamespaceState, ids: make(map[string]bool, len(jobs)), objects: objs}
	err = r.decideRound(d, namespace, jobs, outcomes)
	objs.Close()
	switch {
	case err != nil:
		return false, err
	case d.wait != 0:
		return true, r.proj.WaitApplied(ctx, d.wait)
	case len(d.reservations) == 0:
		return false, nil
	}
	return r.commitRound(ctx, namespace, d, try, unmoved)
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
	// reservations are to be appended, for the objects keys.
	reservations []ledger.EncodedReservation
	keys         []string
	// ids are the reservations' IDs.
	ids map[string]bool
	// objects is the attempt's read of the projection.
	objects *projector.Objects
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
			r.decideCreate(d, namespace, j, &outcomes[i])
			continue
		}
		// A hold (an update's reservation) is checked against what the
		// projection has of the object, as the fold will apply
		// it (see projector.NamespaceState.Hold).
		u := j.update
		key := objectKey(u.obj.Resource, u.obj.Name)
		if d.v.reserved(key) && d.v.SubjectSeq > d.applied {
			// This responder reserved the object in a round the
			// projection may not have applied: the projection's read
			// would miss that reservation, so decide once the view's
			// reservations are all in.
			d.wait = d.v.SubjectSeq
			return nil
		}
		if d.updated == nil {
			d.updated = map[string]projector.Stored{}
		}
		out, res, err := r.decideUpdate(d.v.env, d.st, d.objects, j, d.updated, d.ids)
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
		d.reservations = append(d.reservations, res)
	}
	return nil
}

// decideCreate decides a create job of a round on d, setting its outcome
// o (an error of the request alone included) and adding its reservation
// to d.
func (r *Responder) decideCreate(d *draft, namespace string, j *job, o *outcome) {
	p := j.prepared
	if p == nil || p.env != d.v.env {
		// Prepared against other defaults (or not at all): the
		// request's object is decoded and prepared again. A
		// prepared create is only read by decisions, so it serves
		// every attempt with the same defaults.
		obj, err := decodeObject(j.req.Object, namespace)
		if err != nil {
			*o = outcome{err: fmt.Errorf("%w: object: %v", ErrBadRequest, err)}
			return
		}
		p = prepare(d.v.env, obj, r.cfg.Limited)
		p.reserveAs(j.reservation)
		j.prepared = p
	}
	dec := p.decide(d.st)
	if !dec.allowed {
		*o = outcome{resp: failure(dec.code, dec.reason(), dec.message)}
		return
	}
	*o = outcome{resp: &admissionv1.AdmissionResponse{Allowed: true}}
	if !dec.charged {
		return
	}
	if p.err != nil {
		*o = outcome{err: p.err}
		return
	}
	res := p.reservation
	if d.ids[res.ID()] {
		// The same request twice in one round (a client's retry):
		// the second reservation needs an ID of its own, and
		// charges nothing when it names the same object.
		var err error
		if res, err = p.encode(NewUID()); err != nil {
			*o = outcome{err: err}
			return
		}
	}
	d.ids[res.ID()] = true
	name := p.nameFor(res.ID())
	key := objectKey(p.object.Resource, name)
	if !d.v.has(d.objects, p.object.Resource, name) && !slices.Contains(d.keys, key) {
		// The fold charges only the first reservation of an object
		// the namespace does not hold yet; so does the view. The
		// view's state is shared with the decisions reading it, so
		// the round charges a copy of its own.
		d.own()
		d.st.Reserve(p.charge)
		d.keys = append(d.keys, key)
	}
	d.reservations = append(d.reservations, res)
}

// commitRound appends the reservations of d, expecting the namespace's
// subject where the view saw it, and puts the view they make in the
// cache. again says another writer came first: the projection has
// applied its events, and the round decides again.
func (r *Responder) commitRound(ctx context.Context, namespace string, d *draft, try int, unmoved *int) (again bool, err error) {
	seq, err := r.reserve(ctx, namespace, d.reservations, d.v.SubjectSeq)
	if errors.Is(err, ledger.ErrConflict) {
		r.cfg.Metrics.conflict()
		last, err := r.stream.LastSubjectSeq(ctx, namespace)
		if err != nil {
			return false, err
		}
		if last == d.v.SubjectSeq {
			// The subject has not moved: a replicated stream's leader
			// refuses a compare-and-swap while another append to the
			// subject is on its way to the replicas, whatever the
			// expected sequence. Let that one land first; one that
			// never does is a leader cut off from its followers, which
			// the quorum check tells within seconds.
			*unmoved++
			conflictPause(ctx, try)
			if err := r.quorum(); err != nil {
				return false, err
			}
		}
		return true, r.proj.WaitApplied(ctx, last)
	}
	if err != nil {
		if qerr := r.quorum(); qerr != nil {
			// An append a leader cut off from its followers took and
			// cannot commit: say why.
			return false, fmt.Errorf("%w (the append: %v)", qerr, err)
		}
		return false, err
	}
	r.cfg.Metrics.appended(len(d.reservations))
	// The reservations are durable in the log: answer now. The next
	// decisions in the namespace see them through the view, until the
	// projection has applied them.
	r.states.put(d.v.withReservations(d.st, d.keys, seq, d.applied))
	return false, nil
}

// decideUpdate decides an update job of a round against st, with updated
// the objects the round's earlier updates reserved. It returns the
// reservation to append, a zero one when the update reserves nothing:
// denied, charging no quota, or adding nothing to what the object the
// projection holds charges (or a request the round or the projection holds
// a reservation of already). The outcome's charge is what the reservation
// holds. The error, when set, fails the round; one of the request alone is
// in the outcome.
func (r *Responder) decideUpdate(env *quota.Environment, st *projector.NamespaceState, objs *projector.Objects, j *job, updated map[string]projector.Stored, ids map[string]bool) (outcome, ledger.EncodedReservation, error) {
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
		if h, err = objs.ForUpdate(st.Namespace, u.obj.Resource, u.obj.Name); err != nil {
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
	if objs.Reserved(j.reservation) {
		// A retried request whose reservation the projection holds.
		return allowed, none, nil
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
// namespace's subject to be at expect. The compare-and-swap admits one
// append per sequence, and a client's retry names an object the
// namespace already holds, so its reservation charges nothing. The event
// carries a message ID of its own all the same: on a replicated log, an
// append whose leader went away before acknowledging it is sent again
// with it (ledger.Stream.Append), and if the first send was stored the
// second is told so (a duplicate) instead of meeting its own append as a
// conflict, which would decide the round again against its own
// reservations and could refuse what it had allowed.
func (r *Responder) reserve(ctx context.Context, namespace string, reservations []ledger.EncodedReservation, expect uint64) (uint64, error) {
	ttl, release := r.cfg.ReservationTTL, ""
	if r.cfg.ReleaseByFeed {
		ttl, release = r.cfg.StoreTimeout, ledger.ReleaseByFeed
	}
	ev, err := ledger.EncodeReserve(namespace, ttl, release, "admission", reservations)
	if err != nil {
		return 0, err
	}
	res, err := r.stream.AppendEncoded(ctx, ev, ledger.AppendOptions{MsgID: "reserve/" + NewUID(), ExpectLastSubjectSeq: &expect})
	if err != nil {
		return 0, err
	}
	return res.Seq, nil
}

// conflictPauseMax bounds the pause after a compare-and-swap refused
// while another append to the subject was in flight.
const conflictPauseMax = 20 * time.Millisecond

// conflictPause waits a random while up to conflictPauseMax, more for a
// round's later tries, or until ctx ends: rounds of several servers
// refused together do not all try again at once, and a round's tries
// outlast the quorum check.
func conflictPause(ctx context.Context, try int) {
	longest := conflictPauseMax * time.Duration(1+try/8)
	t := time.NewTimer(longest/4 + rand.N(longest*3/4))
	defer t.Stop()
	select {
	case <-t.C:
	case <-ctx.Done():
	}
}
