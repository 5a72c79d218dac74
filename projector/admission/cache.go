package admission

import (
	"context"
	"fmt"
	"reflect"
	"slices"
	"sync"
	"time"

	"golang.org/x/sync/singleflight"

	"github.com/quotaledger/quota/ledger/quota"
	"github.com/quotaledger/quota/projector"
)

// NamespaceCacheMax bounds the namespace views kept; when full the cache
// starts over, so a cluster with more namespaces only loses hits.
const NamespaceCacheMax = 4096

// ViewReservationsMax bounds the reservations a view keeps on top of its
// read; past it the view is read again from the projection.
const ViewReservationsMax = 4096

// view is a namespace's state as this responder knows it: a state read
// from the projection, plus the reservations this responder appended
// since, which the projection may not have applied yet. SubjectSeq is the
// namespace subject's last sequence the view accounts for: the expected
// last subject sequence of the next reservation decided on it.
//
// A view's state and defaults never change once made: a round charges a
// copy of the state (draft.own), and its reservations make a new view.
// What a view says of its own reservations (reserved, has) is read from
// the keys its chain of views shares (pending): it answers only for the
// keys reserved up to its own SubjectSeq, and forgets a key once the
// projection has applied the key's last reservation, when the projection
// answers for the key instead (has).
type view struct {
	*projector.NamespaceState
	// env holds the namespace's defaults (LimitRanges, classes) for
	// quota.Default. A read from the projection makes a new one and
	// reservations keep it, so creates prepared against env can be
	// decided on any view with the same env.
	env *quota.Environment
	// read says the view is the projection's own, with no reservation on
	// top.
	read bool
	// pending holds the object keys (see objectKey) of the reservations
	// on top of the read that the projection may not hold yet, creates'
	// and updates'; nil for a read.
	pending *pending
}

// reserved reports whether the view holds a reservation of the object
// key on top of its read that the projection may not have applied.
func (v *view) reserved(key string) bool {
	return v.pending != nil && v.pending.has(key, v.SubjectSeq)
}

// reservations returns how many object keys the view's chain holds on
// top of its read.
func (v *view) reservations() int {
	if v.pending == nil {
		return 0
	}
	v.pending.mu.Lock()
	defer v.pending.mu.Unlock()
	return len(v.pending.marks)
}

// has reports whether the namespace has an object or reservation of
// that resource and name in the view, reading the projection through
// objs for one the view did not reserve: a reservation of it charges
// nothing.
func (v *view) has(objs *projector.Objects, resource, name string) bool {
	return v.reserved(objectKey(resource, name)) || objs.Has(v.Namespace, resource, name)
}

// withReservations returns the view after this responder's reservations
// of the given object keys, appended at sequence seq, with st their
// state. Keys reserved at or before applied, the namespace's last
// sequence the projection has applied, are in the projection and are
// dropped.
func (v *view) withReservations(st *projector.NamespaceState, keys []string, seq, applied uint64) *view {
	// st may be v's own state (when no reservation charged): the copy
	// keeps v unchanged for the decisions still reading it.
	state := *st
	state.SubjectSeq = seq
	p := v.pending
	if p == nil {
		p = &pending{marks: map[string]mark{}}
	}
	p.add(keys, seq, applied)
	return &view{NamespaceState: &state, env: v.env, pending: p}
}

// pending is what the views made from one read by withReservations
// reserved on top of it. They share it: each round adds its keys, where
// copying them into a view of its own would cost every round as much as
// the reservations the projection has not applied yet, hundreds while it
// gathers a commit. A view reads only the keys first reserved up to its
// own SubjectSeq, and a key dropped once the projection has applied it is
// found in the projection instead. Only the last view of a chain is
// extended, by the namespace's one round at a time; a round decided on an
// earlier one would fail its compare-and-swap.
type pending struct {
	mu    sync.Mutex
	marks map[string]mark
	// order holds the keys as they were reserved, oldest first from head,
	// for dropping those the projection has applied.
	order []reservedKey
	head  int
}

// mark is an object key's first and last reservation in a chain.
type mark struct {
	first, last uint64
}

type reservedKey struct {
	key string
	seq uint64
}

// add notes keys reserved at seq, after dropping the keys whose last
// reservation is at or before applied.
func (p *pending) add(keys []string, seq, applied uint64) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for p.head < len(p.order) && p.order[p.head].seq <= applied {
		k := p.order[p.head]
		if m := p.marks[k.key]; m.last <= applied {
			delete(p.marks, k.key)
		}
		p.order[p.head] = reservedKey{}
		p.head++
	}
	if p.head > len(p.order)/2 {
		// Reuse the dropped half rather than grow.
		n := copy(p.order, p.order[p.head:])
		p.order, p.head = p.order[:n], 0
	}
	for _, k := range keys {
		m, ok := p.marks[k]
		if !ok {
			m.first = seq
		}
		m.last = seq
		p.marks[k] = m
		p.order = append(p.order, reservedKey{k, seq})
	}
}

// has reports whether key was first reserved at or before upTo.
func (p *pending) has(key string, upTo uint64) bool {
	p.mu.Lock()
	m, ok := p.marks[key]
	p.mu.Unlock()
	return ok && m.first <= upTo
}

func objectKey(resource, name string) string { return resource + "/" + name }

// stateCache keeps each namespace's view. The events on a namespace's
// subject up to a view's SubjectSeq are exactly those the view accounts
// for: the projection's up to the read, then this responder's own
// reservations, each appended expecting the previous one to be the
// subject's last, and added to the view with the fold's own arithmetic
// (NamespaceState.Reserve and Hold). So while the projection has applied
// nothing on the subject beyond SubjectSeq and nothing new on the cluster
// subject, the view is the namespace's current state, and decisions skip
// decoding the namespace's quotas, LimitRanges and classes again. A view
// with no quota or no LimitRange is looked up in the log first (get; see
// the package doc).
type stateCache struct {
	proj *projector.Projector
	// last returns the namespace subject's last sequence in the log; nil
	// looks nothing up.
	last func(ctx context.Context, namespace string) (uint64, error)
	mu   sync.Mutex
	m    map[string]*view
	// lookedAt holds when each namespace's subject was last looked up
	// and found applied.
	lookedAt map[string]time.Time
	group    singleflight.Group
}

// LiveLookupTTL is how long a look-up of a namespace's subject in the log
// stands, Kubernetes' own for its live look-ups of quotas and LimitRanges.
const LiveLookupTTL = 30 * time.Second

func newStateCache(p *projector.Projector, last func(ctx context.Context, namespace string) (uint64, error)) *stateCache {
	return &stateCache{proj: p, last: last, m: map[string]*view{}, lookedAt: map[string]time.Time{}}
}

// lacking reports whether v lacks what a decision would otherwise look up
// live: the namespace's quotas or its LimitRanges.
func lacking(v *view) bool {
	return len(v.Quotas) == 0 || len(v.env.LimitRanges) == 0
}

// dueLookUp reports whether the namespace's subject has not been looked
// up within LiveLookupTTL.
func (c *stateCache) dueLookUp(namespace string) bool {
	if c.last == nil {
		return false
	}
	c.mu.Lock()
	at, ok := c.lookedAt[namespace]
	c.mu.Unlock()
	return !ok || time.Since(at) >= LiveLookupTTL
}

// lookUp returns the namespace subject's last sequence in the log, one
// look-up at a time per namespace.
func (c *stateCache) lookUp(ctx context.Context, namespace string) (uint64, error) {
	last, err, _ := c.group.Do(namespace, func() (any, error) {
		return c.last(ctx, namespace)
	})
	if err != nil {
		return 0, fmt.Errorf("look up namespace %s in the log: %w", namespace, err)
	}
	return last.(uint64), nil
}

// looked notes that the projection holds what a look-up of the
// namespace's subject found. Only then: while the projection is behind
// it (a member whose projection lags, or has just started), every
// decision on a view lacking quotas looks up again and waits, rather than
// deciding on a view that misses a quota.
func (c *stateCache) looked(namespace string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.lookedAt) >= NamespaceCacheMax {
		clear(c.lookedAt)
	}
	c.lookedAt[namespace] = time.Now()
}

// get returns the namespace's current view: as of the projection at the
// call or later, with this responder's reservations on top. A view that
// lacks quotas or LimitRanges is as of the log at the call, unless the
// namespace was looked up in the log within LiveLookupTTL.
//
// It also returns the namespace's last sequence the projection has applied.
func (c *stateCache) get(ctx context.Context, namespace string) (*view, uint64, error) {
	v, nsSeq, err := c.current(ctx, namespace)
	if err != nil || !lacking(v) || !c.dueLookUp(namespace) {
		return v, nsSeq, err
	}
	last, err := c.lookUp(ctx, namespace)
	if err != nil {
		return nil, 0, err
	}
	if last <= v.SubjectSeq {
		c.looked(namespace)
		return v, nsSeq, nil
	}
	// The log holds events of the namespace the view does not account
	// for: read once the projection has applied them.
	if err := c.proj.WaitApplied(ctx, last); err != nil {
		return nil, 0, err
	}
	c.looked(namespace)
	return c.current(ctx, namespace)
}

// current is get without the look-up in the log.
func (c *stateCache) current(ctx context.Context, namespace string) (*view, uint64, error) {
	for {
		nsSeq, clusterSeq, err := c.proj.SubjectSeqs(namespace)
		if err != nil {
			return nil, 0, err
		}
		c.mu.Lock()
		v, ok := c.m[namespace]
		c.mu.Unlock()
		if ok {
			if v.ClusterSeq == clusterSeq && nsSeq <= v.SubjectSeq && v.reservations() <= ViewReservationsMax {
				return v, nsSeq, nil
			}
			if nsSeq < v.SubjectSeq {
				// Reservations of this responder are still on their way
				// to the projection (and the cluster subject moved, or
				// the view holds too many): a read now would miss them,
				// so read once they are applied.
				if err := c.proj.WaitApplied(ctx, v.SubjectSeq); err != nil {
					return nil, 0, err
				}
				continue
			}
		}
		st, err := c.proj.Namespace(namespace)
		if err != nil {
			return nil, 0, err
		}
		env := &quota.Environment{
			LimitRanges:     st.LimitRanges,
			ServiceAccounts: st.ServiceAccounts,
			RuntimeClasses:  st.RuntimeClasses,
			PriorityClasses: st.PriorityClasses,
			StorageClasses:  st.StorageClasses,
		}
		if ok && v.ClusterSeq == st.ClusterSeq && reflect.DeepEqual(v.env.LimitRanges, st.LimitRanges) && slices.Equal(v.env.ServiceAccounts, st.ServiceAccounts) {
			// The same defaults: keep them, so that creates prepared
			// against them stay prepared.
			env = v.env
		}
		v = &view{NamespaceState: st, read: true, env: env}
		c.put(v)
		return v, st.SubjectSeq, nil
	}
}

// mayWait reports whether get for the namespace would wait for the
// projection to apply this responder's reservations. The answer can be
// stale by the time get runs; it only steers such requests away from a
// goroutine that others queue behind.
func (c *stateCache) mayWait(namespace string) bool {
	nsSeq, clusterSeq, err := c.proj.SubjectSeqs(namespace)
	if err != nil {
		return false
	}
	c.mu.Lock()
	v, ok := c.m[namespace]
	c.mu.Unlock()
	if (!ok || lacking(v)) && c.dueLookUp(namespace) {
		// A look-up in the log is a round trip to the server, and may
		// wait for the projection.
		return true
	}
	return ok && nsSeq < v.SubjectSeq && (v.ClusterSeq != clusterSeq || v.reservations() > ViewReservationsMax)
}

// env returns the defaults of the namespace's cached view, or of a fresh
// one when none is cached: what a create is prepared against before its
// round, which checks that its view has the same.
func (c *stateCache) env(ctx context.Context, namespace string) (*quota.Environment, error) {
	c.mu.Lock()
	v, ok := c.m[namespace]
	c.mu.Unlock()
	if ok {
		return v.env, nil
	}
	v, _, err := c.get(ctx, namespace)
	if err != nil {
		return nil, err
	}
	return v.env, nil
}

// put installs v unless the cache holds a view that accounts for more.
func (c *stateCache) put(v *view) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if old, ok := c.m[v.Namespace]; ok && newer(old, v) {
		return
	}
	if len(c.m) >= NamespaceCacheMax {
		clear(c.m)
	}
	c.m[v.Namespace] = v
}

// newer reports whether a accounts for more of the stream than b.
func newer(a, b *view) bool {
	if a.SubjectSeq != b.SubjectSeq {
		return a.SubjectSeq > b.SubjectSeq
	}
	if a.ClusterSeq != b.ClusterSeq {
		return a.ClusterSeq > b.ClusterSeq
	}
	return a.read && !b.read
}
