package admission

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"time"

	"github.com/quotaledger/quota/ledger"
	"github.com/quotaledger/quota/projector"
)

// sweepUntil sweeps expired reservations every SweepInterval until ctx
// ends.
func (r *Responder) sweepUntil(ctx context.Context) {
	ticker := time.NewTicker(r.cfg.SweepInterval)
	defer ticker.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-ticker.C:
			if err := r.sweepOnce(ctx); err != nil && ctx.Err() == nil {
				r.cfg.Logger.Warn("reservation sweep failed", "err", err)
			}
		}
	}
}

// sweep appends Expire events for the reservations past their expiry: one
// per namespace. Every append to a namespace's subject makes the round in
// flight there decide again, so a sweep costs a namespace one such retry
// however many of its reservations it releases (one event per reservation
// could keep a busy namespace's creates retrying until they fail with
// ErrContention). The message id makes concurrent sweeps of the same
// reservations on several replicas harmless, and releasing a reservation
// twice changes nothing.
func (r *Responder) sweep(ctx context.Context) error {
	expired, err := r.proj.ExpiredReservations(r.cfg.Now(), SweepBatchMax)
	if err != nil {
		return err
	}
	var namespaces []string
	byNamespace := map[string][]projector.Reservation{}
	for _, e := range expired {
		if _, ok := byNamespace[e.Namespace]; !ok {
			namespaces = append(namespaces, e.Namespace)
		}
		byNamespace[e.Namespace] = append(byNamespace[e.Namespace], e)
	}
	for _, ns := range namespaces {
		ev, msgID := expireEvent(ns, byNamespace[ns])
		res, err := r.stream.Append(ctx, ev, ledger.AppendOptions{MsgID: msgID})
		if err != nil {
			return fmt.Errorf("expire %d reservations in %s: %w", len(byNamespace[ns]), ns, err)
		}
		if !res.Duplicate {
			// A duplicate is another replica's sweep of the same
			// reservations, which counted them.
			r.cfg.Metrics.expired(len(byNamespace[ns]))
		}
	}
	return r.sweepDeadlines(ctx)
}

// sweepDeadlines appends a Deadline event for each pod that still counts
// past its deletion deadline, so that the fold, and every replay of the
// log, stops counting it from there. The message id (pod, UID and
// deadline) makes concurrent sweeps on several replicas harmless.
func (r *Responder) sweepDeadlines(ctx context.Context) error {
	overdue, err := r.proj.OverduePods(r.cfg.Now(), SweepBatchMax)
	if err != nil {
		return err
	}
	for _, p := range overdue {
		ev := ledger.Event{Version: ledger.EncodingVersion, Type: ledger.Deadline, Namespace: p.Namespace,
			Resource: "pods", Name: p.Name, UID: p.UID, Source: "deadline sweep"}
		msgID := fmt.Sprintf("deadline/%s/%s/%s/%d", p.Namespace, p.Name, p.UID, p.Deadline.UnixNano())
		if _, err := r.stream.Append(ctx, ev, ledger.AppendOptions{MsgID: msgID}); err != nil {
			return fmt.Errorf("pod %s/%s past its deadline: %w", p.Namespace, p.Name, err)
		}
	}
	return nil
}

// sweepOnce is sweep, with a panic in it (a page of the projection
// damaged while the server runs, a bug) recovered as its error: the next
// tick tries again, and the requests go on being answered.
func (r *Responder) sweepOnce(ctx context.Context) (err error) {
	defer ledger.Survive(r.cfg.Logger, "sweep expired reservations", func(e error) { err = e })
	if r.quorum() != nil {
		return nil // its appends could not land; the other servers sweep
	}
	return r.sweep(ctx)
}

// expireEvent is the Expire event releasing the reservations of namespace
// ns, and its message id: a single reservation names its object, several
// are listed by id.
func expireEvent(ns string, rs []projector.Reservation) (ledger.Event, string) {
	ev := ledger.Event{Version: ledger.EncodingVersion, Type: ledger.Expire, Namespace: ns, Source: "reservation sweep"}
	if len(rs) == 1 {
		ev.Resource, ev.Name, ev.Reservation = rs[0].Resource, rs[0].Name, rs[0].ID
		return ev, "expire/" + rs[0].ID
	}
	h := sha256.New()
	for _, e := range rs {
		ev.Expired = append(ev.Expired, e.ID)
		h.Write([]byte(e.ID))
		h.Write([]byte{0})
	}
	return ev, "expire/" + ns + "/" + hex.EncodeToString(h.Sum(nil)[:16])
}
