package projector

import (
	"encoding/binary"
	"fmt"
	"time"

	"github.com/quotaledger/quota/projector/buckets"

	"github.com/quotaledger/quota/ledger"
	"github.com/quotaledger/quota/ledger/object"
	"github.com/quotaledger/quota/ledger/quota"
)

// Pods stuck terminating.
//
// A pod deleted with a grace period keeps counting until its DELETED
// event, or until its deadline (deletionTimestamp plus the grace period)
// passes: Kubernetes' quota evaluator stops counting it then, but for its
// object count. The fold learns of that moment from the log alone: the
// server appends a Deadline event once a pod's deadline has passed (the
// sweep that expires reservations does it, through OverduePods), and the
// fold charges the pod from then on as Kubernetes charges it past its
// deadline, at that event and at every later event of the same deletion.
// Replay reproduces it from the same event.
//
// The deadlines bucket holds, per pod being deleted that counted when its
// deletion was reported, its deadline (Unix nanoseconds, big-endian) and
// a byte that is 1 once a Deadline event has passed it, under its object
// key.

const (
	deadlinePending = 0
	deadlinePassed  = 1
)

func deadlineValue(deadline time.Time, state byte) []byte {
	return append(binary.BigEndian.AppendUint64(nil, uint64(deadline.UnixNano())), state)
}

func readDeadline(k, v []byte) (time.Time, byte, error) {
	if len(v) != 9 || v[8] > deadlinePassed {
		return time.Time{}, 0, fmt.Errorf("%w: deadline of %q holds %d bytes", ErrInvariant, k, len(v))
	}
	return time.Unix(0, int64(binary.BigEndian.Uint64(v))).UTC(), v[8], nil
}

// podDeadline is when a pod being deleted stops counting, as Kubernetes'
// quota evaluator reads it: deletionTimestamp plus the grace period.
func podDeadline(o *object.Object) (time.Time, bool) {
	if o.DeletionTimestamp == nil || o.DeletionGracePeriodSeconds == nil {
		return time.Time{}, false
	}
	return o.DeletionTimestamp.Add(time.Duration(*o.DeletionGracePeriodSeconds) * time.Second), true
}

// deadlineCharge returns what a reported pod o charges, given its charge
// c as evaluated when its deletion was requested, and records its
// deadline: a pod whose deadline a Deadline event has passed is charged
// as past it; one being deleted that still counts waits for that event.
func (f *fold) deadlineCharge(o *object.Object, c quota.Charge) (quota.Charge, error) {
	b := f.tx.Bucket(bucketDeadlines)
	key := objectKey(o.Namespace, o.Resource, o.Name)
	deadline, deleting := podDeadline(o)
	if !deleting {
		return c, b.Delete(key)
	}
	if v := b.Get(key); v != nil {
		at, state, err := readDeadline(key, v)
		if err != nil {
			return c, err
		}
		if state == deadlinePassed && at.Equal(deadline) {
			return pastDeadline(o, deadline, deadline)
		}
	}
	if _, counts := c.Usage[quota.ResourcePods]; !counts {
		return c, b.Delete(key)
	}
	return c, b.Put(key, deadlineValue(deadline, deadlinePending))
}

// pastDeadline evaluates pod o at at, or, if that is not past its
// deadline, at the deadline's next instant.
func pastDeadline(o *object.Object, deadline, at time.Time) (quota.Charge, error) {
	if !at.After(deadline) {
		at = deadline.Add(time.Nanosecond)
	}
	c, err := quota.Evaluate(o, at)
	if err != nil {
		return c, fmt.Errorf("%w: stored pod %s/%s: %v", ErrInvariant, o.Namespace, o.Name, err)
	}
	return c, nil
}

// deadline applies a Deadline event: the pod it names, if the projection
// holds it as reported with that UID and waits for its deadline, is
// charged as Kubernetes charges it past its deadline. The event records
// that the deadline passed: one the stream dated before the deadline (a
// server whose clock is behind the sweep's) counts from the deadline's
// next instant.
func (f *fold) deadline(rec *ledger.Record) error {
	ev := &rec.Event
	key := objectKey(ev.Namespace, ev.Resource, ev.Name)
	v := f.tx.Bucket(bucketDeadlines).Get(key)
	if v == nil {
		return nil // deleted, or no longer being deleted
	}
	deadline, state, err := readDeadline(key, v)
	if err != nil || state == deadlinePassed {
		return err
	}
	old := getObject(f.tx, key)
	if old == nil || ev.UID != "" && old.UID != ev.UID {
		return nil
	}
	o, err := object.Decode(old.Object)
	if err != nil {
		return fmt.Errorf("%w: stored pod %s/%s: %v", ErrInvariant, ev.Namespace, ev.Name, err)
	}
	next := *old
	if next.Charge, err = pastDeadline(o, deadline, rec.Time); err != nil {
		return err
	}
	next.Seq = rec.Seq
	if err := putObject(f.tx, &next); err != nil {
		return err
	}
	if err := f.tx.Bucket(bucketDeadlines).Put(key, deadlineValue(deadline, deadlinePassed)); err != nil {
		return err
	}
	return f.recharge(ev.Namespace, old, &next)
}

// OverduePod is a pod that still counts past its deletion deadline: the
// fold waits for a Deadline event to stop counting it.
type OverduePod struct {
	Namespace, Name, UID string
	Deadline             time.Time
}

// OverduePods returns up to max pods whose deletion deadline is before
// now and that still count. It reads every pod being deleted.
func (p *Projector) OverduePods(now time.Time, max int) ([]OverduePod, error) {
	var out []OverduePod
	err := p.read(func(tx *buckets.Set) error {
		c := tx.Bucket(bucketDeadlines).Cursor()
		for k, v := c.First(); k != nil && len(out) < max; k, v = c.Next() {
			at, state, err := readDeadline(k, v)
			if err != nil {
				return err
			}
			if state == deadlinePassed || !at.Before(now) {
				continue
			}
			r := getObject(tx, k)
			if r == nil {
				return fmt.Errorf("%w: deadline of missing pod %q", ErrInvariant, k)
			}
			out = append(out, OverduePod{Namespace: r.Namespace, Name: r.Name, UID: r.UID, Deadline: at})
		}
		return nil
	})
	return out, err
}
