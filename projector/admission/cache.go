package admission

import (
	"sync"

	"github.com/quotaledger/quota/projector"
)

// NamespaceCacheMax bounds the namespace states kept decoded; when full the
// cache starts over, so a cluster with more namespaces only loses hits.
const NamespaceCacheMax = 4096

// stateCache keeps each namespace's decoded state with the sequences of
// the last applied events of the namespace and of the cluster-scoped
// objects. While the projection has applied nothing newer to either, the
// state is exactly what a fresh read would return (events of other
// namespaces cannot change it), so decisions skip decoding the namespace's
// quotas, LimitRanges and RuntimeClasses again. Decisions only read a state, never change it, so
// one entry serves concurrent requests.
type stateCache struct {
	proj *projector.Projector
	mu   sync.Mutex
	m    map[string]*projector.NamespaceState
}

func newStateCache(p *projector.Projector) *stateCache {
	return &stateCache{proj: p, m: map[string]*projector.NamespaceState{}}
}

// get returns the namespace's state as of the projection at the call or
// later.
func (c *stateCache) get(namespace string) (*projector.NamespaceState, error) {
	nsSeq, clusterSeq, err := c.proj.SubjectSeqs(namespace)
	if err != nil {
		return nil, err
	}
	c.mu.Lock()
	st, ok := c.m[namespace]
	c.mu.Unlock()
	if ok && st.SubjectSeq == nsSeq && st.ClusterSeq == clusterSeq {
		return st, nil
	}
	st, err = c.proj.Namespace(namespace)
	if err != nil {
		return nil, err
	}
	c.mu.Lock()
	if len(c.m) >= NamespaceCacheMax {
		clear(c.m)
	}
	if old, ok := c.m[namespace]; !ok || old.Applied < st.Applied {
		c.m[namespace] = st
	}
	c.mu.Unlock()
	return st, nil
}
