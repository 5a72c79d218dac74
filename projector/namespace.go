package projector

import (
	"fmt"
	"maps"
	"slices"
	"sync"

	"github.com/quotaledger/quota/projector/buckets"
	corev1 "k8s.io/api/core/v1"
	nodev1 "k8s.io/api/node/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/quotaledger/quota/ledger"
	"github.com/quotaledger/quota/ledger/object"
	"github.com/quotaledger/quota/ledger/quota"
)

// Resources the admission decision reads besides quotas.
const (
	resourceLimitRanges     = "limitranges"
	resourceServiceAccounts = "serviceaccounts"
	resourceRuntimeClasses  = "runtimeclasses.node.k8s.io"
	resourcePriorityClasses = "priorityclasses.scheduling.k8s.io"
	resourceStorageClasses  = "storageclasses.storage.k8s.io"
)

// NamespaceState is what an admission decision for one namespace reads,
// taken from one consistent view of the projection.
type NamespaceState struct {
	Namespace string
	// SubjectSeq is the stream sequence of the namespace's last applied
	// event: the expected last subject sequence for a reservation decided
	// on this state.
	SubjectSeq uint64
	// ClusterSeq is the stream sequence of the last applied event of a
	// cluster-scoped object (RuntimeClasses feed the decision too).
	ClusterSeq uint64
	// Applied is the projection's applied sequence at the time of the view.
	Applied uint64
	// Quotas are the namespace's valid quotas, sorted by name.
	Quotas []quota.QuotaState
	// LimitRanges are the namespace's LimitRanges, in name order: where
	// several default one resource, the first sets it.
	LimitRanges []*corev1.LimitRange
	// ServiceAccounts are the names of the namespace's ServiceAccounts
	// (reservations of new ones left out), in name order.
	ServiceAccounts []string
	// RuntimeClasses are the cluster's RuntimeClasses by name.
	RuntimeClasses map[string]*nodev1.RuntimeClass
	// PriorityClasses and StorageClasses are the cluster's, for the default
	// class a raw manifest gets.
	PriorityClasses []*schedulingv1.PriorityClass
	StorageClasses  []*storagev1.StorageClass
}

// Clone returns a copy of st whose usage Reserve may change without
// changing st's.
func (st *NamespaceState) Clone() *NamespaceState {
	out := *st
	out.Quotas = slices.Clone(st.Quotas)
	for i := range out.Quotas {
		out.Quotas[i].Used = maps.Clone(out.Quotas[i].Used)
	}
	return &out
}

// Reserve adds the charge of a newly reserved object to every quota of st
// the charge matches, with the arithmetic the fold uses: st becomes what
// the projection will read once it has applied the reservation, provided
// the object was not in the namespace already (a reservation of an
// existing object charges nothing; see Holds). It changes st's usage in
// place, so st must not share it with a state others read: it is for a
// Clone.
func (st *NamespaceState) Reserve(c quota.Charge) {
	for i := range st.Quotas {
		s := &st.Quotas[i]
		if s.Quota == nil || !s.Quota.Matches(c) {
			continue
		}
		for name, n := range c.Usage {
			if _, tracked := s.Quota.Hard[name]; !tracked || n.Sign() <= 0 {
				// A zero part changes nothing in the fold either, and a
				// reservation's charge has no negative part (quota.Admit
				// refuses negative usage).
				continue
			}
			if s.Used == nil {
				s.Used = quota.ResourceList{}
			}
			prev := s.Used[name]
			s.Used[name] = settle(prev.Add(n))
		}
	}
}

// Hold changes st's usage as the fold does when it applies an
// update's reservation of charge c (the updated object's) on the object
// held: each quota is charged, per resource, the larger of the object's
// figure (with its holds) and c's (see hold). It returns the object as the
// fold leaves it, for a further update of it decided on st, and whether
// the fold applies the reservation at all: not when the projection does
// not hold the object, or charges it as much as c already (Stored.Adds); st
// is then left as it is. The fold also skips a reservation whose id it
// holds already (Objects.Reserved). Like Reserve, it changes st in place
// and is for a Clone.
func (st *NamespaceState) Hold(held Stored, c quota.Charge) (Stored, bool) {
	if !held.Adds(c) {
		return held, false
	}
	next := *held.rec
	next.Holds = append(slices.Clip(next.Holds), hold{Charge: c})
	for i := range st.Quotas {
		s := &st.Quotas[i]
		if s.Quota == nil || !s.Quota.Matches(c) {
			continue
		}
		before := part(s.Quota, held.rec, nil)
		for name, n := range part(s.Quota, &next, nil) {
			if _, tracked := s.Quota.Hard[name]; !tracked || n.Cmp(before[name]) <= 0 {
				continue
			}
			if s.Used == nil {
				s.Used = quota.ResourceList{}
			}
			prev := s.Used[name]
			s.Used[name] = settle(prev.Add(n.Sub(before[name])))
		}
	}
	return Stored{rec: &next}, true
}

// Stored is an object as the projection has it, with its holds, read to
// decide a hold on it (Objects.ForUpdate).
type Stored struct {
	rec *objectRecord
}

// Found reports whether the projection has the object.
func (h Stored) Found() bool { return h.rec != nil }

// Adds reports whether a hold of charge c changes what the object
// charges, as the fold decides it: the projection has the
// object, and the object's own charge does not cover c. The fold applies
// the reservation of an object it does not hold as nothing.
func (h Stored) Adds(c quota.Charge) bool {
	return h.rec != nil && !covers(h.rec.Charge, c)
}

// Objects reads the projection's objects and reservations for several
// questions (Has, ForUpdate, Reserved) from one view (the state after one
// applied batch), until Close.
type Objects struct {
	tx *buckets.Set
}

// Objects starts a read of the projection's objects.
func (p *Projector) Objects() (*Objects, error) {
	return &Objects{tx: p.view.Load()}, nil
}

// Has reports whether the projection has an object, or a reservation,
// of that resource and name in namespace.
func (o *Objects) Has(namespace, resource, name string) bool {
	return o.tx.Bucket(bucketObjects).Has(objectKey(namespace, resource, name))
}

// ForUpdate reads an object of namespace to decide a hold on it.
func (o *Objects) ForUpdate(namespace, resource, name string) (Stored, error) {
	return Stored{rec: getObject(o.tx, objectKey(namespace, resource, name))}, nil
}

// Reserved reports whether the projection has a reservation of that id:
// a create's or a hold.
func (o *Objects) Reserved(id string) bool {
	return o.tx.Bucket(bucketReserved).Get([]byte(id)) != nil
}

// Close ends the read.
func (o *Objects) Close() {}

// Namespace reads the state an admission decision in namespace needs.
func (p *Projector) Namespace(namespace string) (*NamespaceState, error) {
	var st *NamespaceState
	err := p.read(func(tx *buckets.Set) error {
		var err error
		st, err = namespaceState(tx, namespace)
		return err
	})
	return st, err
}

// SubjectSeqs returns the stream sequences of the last applied events of a
// namespace and of the cluster-scoped objects: a NamespaceState read with
// both equal is still exactly what a fresh read would return. It answers
// from memory (see subjectSeqs), reading the file only for a subject it
// has not seen yet.
func (p *Projector) SubjectSeqs(namespace string) (namespaceSeq, clusterSeq uint64, err error) {
	if ns, cluster, ok := p.subjects.get(namespace); ok {
		return ns, cluster, nil
	}
	err = p.read(func(tx *buckets.Set) error {
		namespaceSeq, clusterSeq = subjectSeq(tx, namespace), subjectSeq(tx, "")
		return nil
	})
	if err != nil {
		return 0, 0, err
	}
	p.subjects.learn(namespace, namespaceSeq)
	p.subjects.learn("", clusterSeq)
	return namespaceSeq, clusterSeq, nil
}

// subjectSeqs keeps each subject's last applied sequence in memory, so
// that SubjectSeqs, asked on every admission, needs no read transaction.
// Apply notes the subjects of each batch once it is committed and before
// it is published as applied, so a caller that has seen a sequence applied
// sees the subjects' sequences of it too. Subjects are learnt from the
// file on their first read; a namespace with no event yet (sequence 0) is
// not kept, so requests naming made-up namespaces cannot grow the map (the
// cluster subject is kept from its first read).
type subjectSeqs struct {
	mu   sync.RWMutex
	seqs map[string]uint64
}

func (s *subjectSeqs) get(namespace string) (namespaceSeq, clusterSeq uint64, ok bool) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	namespaceSeq, okNS := s.seqs[namespace]
	clusterSeq, okCluster := s.seqs[""]
	return namespaceSeq, clusterSeq, okNS && okCluster
}

// learn records seq as subject's last applied sequence unless it knows a
// later one. Sequences only grow, so a read from the file racing with a
// commit never moves a subject back.
func (s *subjectSeqs) learn(subject string, seq uint64) {
	if seq == 0 && subject != "" {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.learnLocked(subject, seq)
}

func (s *subjectSeqs) learnLocked(subject string, seq uint64) {
	if s.seqs == nil {
		s.seqs = map[string]uint64{}
	}
	if old, ok := s.seqs[subject]; !ok || seq > old {
		s.seqs[subject] = seq
	}
}

// applied notes the subjects of a committed batch, as the fold stored
// them: every record's namespace (the cluster subject's being "") at its
// sequence.
func (s *subjectSeqs) applied(records []ledger.Record) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for i := range records {
		s.learnLocked(records[i].Namespace, records[i].Seq)
	}
}

func namespaceState(tx *buckets.Set, namespace string) (*NamespaceState, error) {
	st := &NamespaceState{
		Namespace:      namespace,
		SubjectSeq:     subjectSeq(tx, namespace),
		ClusterSeq:     subjectSeq(tx, ""),
		Applied:        appliedSeq(tx),
		RuntimeClasses: map[string]*nodev1.RuntimeClass{},
	}
	err := forEachQuota(tx, namespace, false, func(r *quotaRecord) error {
		if r.parsed != nil {
			st.Quotas = append(st.Quotas, quota.QuotaState{Quota: r.parsed, Used: r.Used})
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	// In name order: where several LimitRanges default one resource, the
	// first by name sets it (Kubernetes' LimitRanger takes them in its
	// informer's order, a draw).
	if st.LimitRanges, err = storedValues[*corev1.LimitRange](tx, namespace, resourceLimitRanges); err != nil {
		return nil, err
	}
	if st.ServiceAccounts, err = storedNames(tx, namespace, resourceServiceAccounts); err != nil {
		return nil, err
	}
	runtimeClasses, err := storedValues[*nodev1.RuntimeClass](tx, "", resourceRuntimeClasses)
	if err != nil {
		return nil, err
	}
	for _, rc := range runtimeClasses {
		st.RuntimeClasses[rc.Name] = rc
	}
	if st.PriorityClasses, err = storedValues[*schedulingv1.PriorityClass](tx, "", resourcePriorityClasses); err != nil {
		return nil, err
	}
	if st.StorageClasses, err = storedValues[*storagev1.StorageClass](tx, "", resourceStorageClasses); err != nil {
		return nil, err
	}
	return st, nil
}

// decodeQuota reads the validated quota of a stored record.
func decodeQuota(r *quotaRecord) (*quota.Quota, error) {
	o, err := object.Decode(r.Object)
	if err != nil {
		return nil, fmt.Errorf("%w: stored quota %s/%s: %v", ErrInvariant, r.Namespace, r.Name, err)
	}
	q, err := quota.FromObject(o)
	if err != nil {
		return nil, fmt.Errorf("%w: stored quota %s/%s: %v", ErrInvariant, r.Namespace, r.Name, err)
	}
	return q, nil
}

// storedNames returns the names of one resource's objects in a namespace,
// reservations left out, in name order. It reads each record's charge
// only, not its object.
func storedNames(tx *buckets.Set, namespace, resource string) ([]string, error) {
	var out []string
	err := forEachObjectOf(tx, namespace, resource, func(r *objectRecord) error {
		if r.Reservation == "" {
			out = append(out, r.Name)
		}
		return nil
	})
	return out, err
}

// storedValues decodes the typed values of one resource's objects in a
// namespace ("" for cluster-scoped ones), reservations left out.
func storedValues[T runtime.Object](tx *buckets.Set, namespace, resource string) ([]T, error) {
	var out []T
	err := forEachObjectOf(tx, namespace, resource, func(r *objectRecord) error {
		if r.Reservation != "" {
			return nil
		}
		o, err := object.Decode(r.Object)
		if err != nil {
			return fmt.Errorf("%w: stored %s %s: %v", ErrInvariant, resource, r.Name, err)
		}
		v, ok := o.Value.(T)
		if !ok {
			return fmt.Errorf("%w: stored %s %s is a %T", ErrInvariant, resource, r.Name, o.Value)
		}
		out = append(out, v)
		return nil
	})
	return out, err
}
