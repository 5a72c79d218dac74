package projector

import (
	"fmt"
	"time"

	"github.com/quotaledger/quota/ledger/object"
	"github.com/quotaledger/quota/ledger/quota"
)

// Recharge brings a projection folded under other charging rules
// (Rules() != RulesVersion) to this build's without the log: every
// reported object's charge is evaluated again from the trimmed form the
// projection keeps of it, at the projection's applied time (a pod past its
// deletion deadline stays past it), every quota is read again from its
// stored object and summed afresh in key order, as a resync sums a
// namespace, and the file records this build's rules. Reservations and
// holds keep the charges they were made with: the log holds the objects
// they charge, and they end within their TTL or the feed's timeout. It
// publishes the new state as the projection's view; the next checkpoint
// writes it. A projection of this build's rules is left as it is.
func (p *Projector) Recharge() error {
	if p.rules == RulesVersion {
		return nil
	}
	p.fold.Forget()
	set := p.view.Load().Clone()
	set.TrackChanges()
	_, at := AppliedAt(set)
	f := fold{tx: set, cache: p.fold}
	var objects []*objectRecord
	err := forEachObjectPrefix(set, nil, func(r *objectRecord) error {
		if r.Reservation == "" && len(r.Object) > 0 {
			objects = append(objects, r)
		}
		return nil
	})
	if err != nil {
		return err
	}
	for _, r := range objects {
		if err := f.recharged(r, at); err != nil {
			return fmt.Errorf("recharge %s %s/%s: %w", r.Resource, r.Namespace, r.Name, err)
		}
	}
	if err := f.requota(); err != nil {
		return err
	}
	p.fold.Forget()
	if err := set.Bucket(bucketMeta).Put(keyRules, seqBytes(RulesVersion)); err != nil {
		return err
	}
	p.set, p.rules = set, RulesVersion
	p.publish(set)
	return nil
}

// recharged stores r with its charge under this build's rules.
func (f *fold) recharged(r *objectRecord, at time.Time) error {
	o, err := object.Decode(r.Object)
	if err != nil {
		return fmt.Errorf("%w: stored object: %v", ErrInvariant, err)
	}
	if o.Namespace == "" && !o.ClusterScoped() {
		o.SetNamespace(r.Namespace)
	}
	c, err := quota.Evaluate(o, judgedAt(o, at))
	if err != nil {
		return err
	}
	if o.Resource == "pods" {
		if c, err = f.deadlineCharge(o, c); err != nil {
			return err
		}
	}
	next := *r
	next.Charge = c
	return putObject(f.tx, &next)
}

// requota reads every stored quota again under this build's rules and
// sums the valid ones afresh from the (recharged) objects.
func (f *fold) requota() error {
	var records []*quotaRecord
	if err := forEachQuota(f.tx, "", true, func(r *quotaRecord) error {
		records = append(records, r)
		return nil
	}); err != nil {
		return err
	}
	for _, old := range records {
		o, err := object.Decode(old.Object)
		if err != nil {
			return fmt.Errorf("%w: stored quota %s/%s: %v", ErrInvariant, old.Namespace, old.Name, err)
		}
		o.SetNamespace(old.Namespace)
		q, err := quota.FromObject(o)
		if err != nil {
			return fmt.Errorf("%w: stored quota %s/%s: %v", ErrInvariant, old.Namespace, old.Name, err)
		}
		r := old.clone()
		r.Invalid, r.Used, r.parsed = q.Invalid, nil, nil
		if q.Invalid == "" {
			r.parsed = q
			if err := f.sum(r, q); err != nil {
				return err
			}
		}
		if err := putQuota(f.tx, r); err != nil {
			return err
		}
	}
	return nil
}
