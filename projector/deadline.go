package projector

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/quotaledger/quota/ledger/object"
	"github.com/quotaledger/quota/ledger/quota"
)

// Pods stuck terminating.
//
// A pod deleted with a grace period keeps counting until its DELETED event
// (judgedAt). Without a kubelet to finish it, that event may never come,
// and Kubernetes' quota controller drops the pod at its first recount after
// deletionTimestamp plus the grace period (QuotaV1Pod reads the clock):
// the recount that the deletion or end of another pod of the namespace
// sets off, for one. The projection keeps, per namespace, the deadline of
// every such pod and the latest moment the cluster is known to have
// reached: the latest deletion request seen (deletionTimestamp less the
// grace period; a pod deleted at once reports one) or write of a pod or a
// quota (the time of its last write, Object.Written: a pod's end and a
// quota's change are such writes). The moment is a lower bound of the
// cluster's clock at a recount, read from the objects rather than from
// when the events were ingested, so a recording ingested late gives the
// figures the cluster gave; a pod Kubernetes dropped at a recount that
// nothing dates is kept until its DELETED event.
//
// Kubernetes recounts a quota whole, so every recount drops the pods whose
// deadline that moment has passed, but only from the quotas it recounts.
// A pod event that sets one off recounts every quota of the namespace's
// pods: the pods are dropped for good (dropOverdue). The change of a quota
// recounts that quota alone, and the deletion of a service, say, the
// quotas tracking services: those leave the pods out of the quotas they
// recount (fold.recompute) and keep their charges for the others. So
// does a recount the fold learns of from the quota controller's write of
// a quota's status (Object.Recounted), such as its periodic full one.
//
// Keys of the deadlines bucket: namespace, a zero byte, and a pod's name,
// holding its deadline; the namespace and the zero byte alone hold the
// namespace's clock. Both are Unix nanoseconds, big-endian.

func deadlineKey(namespace, name string) []byte {
	k := make([]byte, 0, len(namespace)+1+len(name))
	k = append(k, namespace...)
	k = append(k, 0)
	return append(k, name...)
}

func timeBytes(t time.Time) []byte {
	return binary.BigEndian.AppendUint64(nil, uint64(t.UnixNano()))
}

func bytesTime(v []byte) (time.Time, error) {
	if len(v) != 8 {
		return time.Time{}, fmt.Errorf("%w: deadline of %d bytes", ErrInvariant, len(v))
	}
	return time.Unix(0, int64(binary.BigEndian.Uint64(v))).UTC(), nil
}

// notePod records what a pod's reported state says of its deletion: the
// moment the deletion was requested advances the namespace's clock, and a
// pod that still counts while being deleted has a deadline.
func (f *fold) notePod(o *object.Object, charge quota.Charge) error {
	return notePodIn(f.tx.Bucket(bucketDeadlines), o, charge)
}

func notePodIn(b *bolt.Bucket, o *object.Object, charge quota.Charge) error {
	deleting := o.DeletionTimestamp != nil && o.DeletionGracePeriodSeconds != nil
	var grace time.Duration
	seen := o.Written
	if deleting {
		grace = time.Duration(*o.DeletionGracePeriodSeconds) * time.Second
		if requested := o.DeletionTimestamp.Add(-grace); seen == nil || requested.After(*seen) {
			seen = &requested
		}
	}
	if seen != nil {
		if err := advanceClock(b, o.Namespace, *seen); err != nil {
			return err
		}
	}
	key := deadlineKey(o.Namespace, o.Name)
	if !deleting || !counts(charge) {
		return b.Delete(key)
	}
	return b.Put(key, timeBytes(o.DeletionTimestamp.Add(grace)))
}

// advanceClock moves the namespace's clock to t unless it is past t.
func advanceClock(b *bolt.Bucket, namespace string, t time.Time) error {
	clockKey := deadlineKey(namespace, "")
	if v := b.Get(clockKey); v != nil {
		clock, err := bytesTime(v)
		if err != nil {
			return err
		}
		if !t.After(clock) {
			return nil
		}
	}
	return b.Put(clockKey, timeBytes(t))
}

// forgetPod drops a deleted pod's deadline.
func (f *fold) forgetPod(namespace, name string) error {
	return f.tx.Bucket(bucketDeadlines).Delete(deadlineKey(namespace, name))
}

// overdue lists the namespace's pods whose deadline its clock has passed,
// and the moment of a recount that comes then. The recount comes after
// the deletion request or write that set the clock, so the cluster's clock
// is then past it, if only by a moment: a pod whose deadline is the
// clock's very second is overdue. (Kubernetes stores timestamps in whole
// seconds, deadlines included.)
func overdue(b *bolt.Bucket, namespace string) (now time.Time, names []string, err error) {
	prefix := deadlineKey(namespace, "")
	c := b.Cursor()
	k, v := c.Seek(prefix)
	if !bytes.Equal(k, prefix) {
		return time.Time{}, nil, nil // no clock: no pod deleted or written with a time
	}
	clock, err := bytesTime(v)
	if err != nil {
		return time.Time{}, nil, err
	}
	now = clock.Add(time.Nanosecond)
	for k, v = c.Next(); k != nil && bytes.HasPrefix(k, prefix); k, v = c.Next() {
		deadline, err := bytesTime(v)
		if err != nil {
			return time.Time{}, nil, err
		}
		if now.After(deadline) {
			names = append(names, string(k[len(prefix):]))
		}
	}
	return now, names, nil
}

// overduePod is a pod past its deadline: its stored record, and the same
// record charged as a recount at the namespace's clock charges it (its
// object count only).
type overduePod struct {
	stored, recounted *objectRecord
}

// recountedAt reads a stored pod that a recount at now finds past its
// deadline; ok is false when there is no charge to lower (the pod is gone,
// reserved only, or no longer counting).
func recountedAt(tx *bolt.Tx, namespace, name string, now time.Time) (p overduePod, ok bool, err error) {
	old, err := getObject(tx, objectKey(namespace, "pods", name))
	if err != nil {
		return overduePod{}, false, err
	}
	if old == nil || old.Reservation != "" || len(old.Object) == 0 || !counts(old.Charge) {
		return overduePod{}, false, nil
	}
	o, err := object.Decode(old.Object)
	if err != nil {
		return overduePod{}, false, fmt.Errorf("%w: stored pod %s/%s: %v", ErrInvariant, namespace, name, err)
	}
	charge, err := quota.Evaluate(o, now)
	if err != nil {
		return overduePod{}, false, fmt.Errorf("%w: stored pod %s/%s: %v", ErrInvariant, namespace, name, err)
	}
	next := *old
	next.Charge = charge
	return overduePod{stored: old, recounted: &next}, true, nil
}

// overduePods returns the namespace's pods that a recount now would find
// past their deadline, by name; nil when there are none.
func overduePods(tx *bolt.Tx, namespace string) (map[string]overduePod, error) {
	now, names, err := overdue(tx.Bucket(bucketDeadlines), namespace)
	if err != nil || len(names) == 0 {
		return nil, err
	}
	var pods map[string]overduePod
	for _, name := range names {
		p, ok, err := recountedAt(tx, namespace, name, now)
		if err != nil {
			return nil, err
		}
		if ok {
			if pods == nil {
				pods = make(map[string]overduePod, len(names))
			}
			pods[name] = p
		}
	}
	return pods, nil
}

// lowers reports whether a recount of q charges the pod less than its
// stored record does.
func (p overduePod) lowers(q *quota.Quota) bool {
	return !quota.Equal(part(q, p.stored, nil), part(q, p.recounted, nil))
}

// dropOverdue is the part of Kubernetes' recount of a namespace's pod
// quotas that reads the clock: each pod whose deadline the namespace's
// clock has passed is charged as Kubernetes charges it then (its object
// count only), and the quotas are recounted without it.
func (f *fold) dropOverdue(namespace string, seq uint64) error {
	b := f.tx.Bucket(bucketDeadlines)
	now, names, err := overdue(b, namespace)
	if err != nil {
		return err
	}
	for _, name := range names {
		if err := b.Delete(deadlineKey(namespace, name)); err != nil {
			return err
		}
		p, ok, err := recountedAt(f.tx, namespace, name, now)
		if err != nil {
			return err
		}
		if !ok {
			continue
		}
		p.recounted.Seq = seq
		if err := putObject(f.tx, p.recounted); err != nil {
			return err
		}
		if err := f.recharge(namespace, p.stored, p.recounted, ledgerStep); err != nil {
			return err
		}
	}
	return nil
}

// noteDeletions fills the deadlines bucket of a file that kept none, from
// the pods it holds.
func noteDeletions(tx *bolt.Tx) error {
	b := tx.Bucket(bucketDeadlines)
	return tx.Bucket(bucketObjects).ForEach(func(_, v []byte) error {
		r, err := decodeObjectRecord(v)
		if err != nil {
			return err
		}
		if r.Resource != "pods" || r.Reservation != "" || len(r.Object) == 0 {
			return nil
		}
		o, err := object.Decode(r.Object)
		if err != nil {
			return fmt.Errorf("stored pod %s/%s: %w", r.Namespace, r.Name, err)
		}
		return notePodIn(b, o, r.Charge)
	})
}
