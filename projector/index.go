package projector

import (
	"encoding/binary"
	"fmt"
	"slices"

	bolt "go.etcd.io/bbolt"

	"github.com/quotaledger/quota/ledger/quantity"
	"github.com/quotaledger/quota/ledger/quota"
)

// Where Kubernetes meets a namespace's objects.
//
// Kubernetes reads a namespace's objects from an informer, which lists
// them from a Go map of their keys. Where a map's iteration starts is
// random, but not every order is equally likely: while the map has never
// held more than quota.IndexSlots keys, each key keeps the slot it took,
// the first free one, and iteration starts at a random slot and wraps
// around (see ledger/quota's order.go). Three things depend on that
// order: which quota the admission plugin names when several refuse a
// request; the format in which the quota controller's recount prints a
// sum of charges in several formats, that of its first non-zero term; and
// which of several LimitRanges sets a default that more than one of them
// gives (LimitRanger applies them in turn, each filling only what is
// still unset). The projection keeps the slots of quotas, LimitRanges, pods and
// claims as the informers place them, in the order the objects reach the
// log, so that admission names the likeliest quota and applies the
// likeliest defaults, and a recount prints the likeliest format.

// indexedResources are the resources whose informer slots the projection
// keeps: quotas, LimitRanges, and those whose charges can be binary or
// decimal quantities. Every other charge is a count, which prints the same
// in any order.
var indexedResources = map[string]bool{"resourcequotas": true, "limitranges": true, "pods": true, "persistentvolumeclaims": true}

// informerIndex is a namespace's objects of one resource as Kubernetes'
// informer keeps their keys: the object in each slot ("" for a free one)
// while the map has never held more than quota.IndexSlots keys at once,
// and how many it holds. A map that has grown past its first group places
// keys by their hashes: Grown is set and the slots are not kept. The map
// goes, and with it the growth, when its last key does.
type informerIndex struct {
	Slots [quota.IndexSlots]string
	Count int
	Grown bool
}

func indexKey(namespace, resource string) []byte {
	k := make([]byte, 0, len(namespace)+1+len(resource))
	k = append(k, namespace...)
	k = append(k, 0)
	return append(k, resource...)
}

// slot returns the 1-based slot of name, 0 when the index does not place it.
func (x *informerIndex) slot(name string) int {
	if x == nil || x.Grown {
		return 0
	}
	for i, n := range x.Slots {
		if n == name {
			return i + 1
		}
	}
	return 0
}

// likeliestOrder returns the order in which an iteration of the map most
// likely meets the named keys: from the slot after the longest run of
// slots holding none of them, the lower slot on a tie (which, for keys
// added one after another and none removed, is the order they were
// added). It returns nil when the index does not place every name.
func (x *informerIndex) likeliestOrder(names []string) []int {
	slots := make([]int, len(names))
	for i, n := range names {
		slots[i] = x.slot(n)
	}
	runs := quota.SlotRuns(slots)
	if runs == nil {
		return nil
	}
	order := make([]int, len(names))
	for i := range order {
		order[i] = i
	}
	slices.SortFunc(order, func(a, b int) int { return slots[a] - slots[b] })
	start := 0
	for i, k := range order {
		if runs[k] > runs[order[start]] {
			start = i
		}
	}
	return append(order[start:], order[:start]...)
}

// add places a new key as Go's map does: in the first free slot, or, when
// there is none, in a grown map that no longer keeps slots.
func (x *informerIndex) add(name string) {
	x.Count++
	if x.Grown {
		return
	}
	for i, n := range x.Slots {
		if n == "" {
			x.Slots[i] = name
			return
		}
	}
	x.Slots = [quota.IndexSlots]string{}
	x.Grown = true
}

// remove frees a key's slot.
func (x *informerIndex) remove(name string) {
	x.Count = max(x.Count-1, 0)
	for i, n := range x.Slots {
		if n == name {
			x.Slots[i] = ""
		}
	}
}

// Layout: a flags byte (1 for grown), the count as a uvarint, then each
// slot's name as a uvarint length and its bytes.
func encodeIndex(x *informerIndex) []byte {
	b := make([]byte, 0, 2+binary.MaxVarintLen64+len(x.Slots)*16)
	if x.Grown {
		b = append(b, 1)
	} else {
		b = append(b, 0)
	}
	b = binary.AppendUvarint(b, uint64(x.Count))
	for _, n := range x.Slots {
		b = appendString(b, n)
	}
	return b
}

func decodeIndex(b []byte) (*informerIndex, error) {
	if len(b) < 2 || b[0] > 1 {
		return nil, fmt.Errorf("informer index: bad header")
	}
	x := &informerIndex{Grown: b[0] == 1}
	count, k := binary.Uvarint(b[1:])
	if k <= 0 {
		return nil, errShortRecord
	}
	x.Count = int(count)
	b = b[1+k:]
	for i := range x.Slots {
		n, k := binary.Uvarint(b)
		if k <= 0 || uint64(len(b)-k) < n {
			return nil, errShortRecord
		}
		x.Slots[i] = string(b[k : k+int(n)])
		b = b[k+int(n):]
	}
	return x, nil
}

// getIndex reads the informer index of a namespace's resource; nil when
// the namespace holds no such object.
func getIndex(tx *bolt.Tx, namespace, resource string) (*informerIndex, error) {
	v := tx.Bucket(bucketIndexes).Get(indexKey(namespace, resource))
	if v == nil {
		return nil, nil
	}
	x, err := decodeIndex(v)
	if err != nil {
		return nil, fmt.Errorf("%s/%s: %w", namespace, resource, err)
	}
	return x, nil
}

func putIndex(tx *bolt.Tx, namespace, resource string, x *informerIndex) error {
	key := indexKey(namespace, resource)
	if x.Count <= 0 {
		return tx.Bucket(bucketIndexes).Delete(key)
	}
	return tx.Bucket(bucketIndexes).Put(key, encodeIndex(x))
}

// indexed records that an object the cluster reported enters (in) or
// leaves its informer's index. Reservations are not in it: Kubernetes'
// informer sees an object only once it is stored.
func (f *fold) indexed(namespace, resource, name string, in bool) error {
	if !indexedResources[resource] {
		return nil
	}
	x, err := getIndex(f.tx, namespace, resource)
	if err != nil {
		return err
	}
	if x == nil {
		if !in {
			// Only a projection changed behind its back lacks it; a
			// resync of the resource mends the index (reconcileIndex).
			return nil
		}
		x = &informerIndex{}
	}
	if in {
		x.add(name)
	} else {
		x.remove(name)
	}
	return putIndex(f.tx, namespace, resource, x)
}

// reconcileIndex makes a namespace's informer index hold the objects the
// projection holds as reported, no more and no fewer. A resync calls it
// once it has deleted what the cluster no longer lists, before it stores
// what it lists: what it corrects may have been lost before the log saw
// it, and a rebuild from the log frees such an object's slot at that
// point. A name the index lacks takes the first free slot, in name order;
// one the projection no longer holds frees its slot.
func (f *fold) reconcileIndex(namespace, resource string) error {
	if !indexedResources[resource] {
		return nil
	}
	var held []string
	err := forEachObjectOf(f.tx, namespace, resource, func(r *objectRecord) error {
		if r.Reservation == "" {
			held = append(held, r.Name)
		}
		return nil
	})
	if err != nil {
		return err
	}
	x, err := getIndex(f.tx, namespace, resource)
	if err != nil || x == nil {
		x = &informerIndex{}
	}
	if !x.Grown {
		for i, n := range x.Slots {
			if n != "" && !slices.Contains(held, n) {
				x.Slots[i] = ""
			}
		}
		for _, n := range held {
			if x.slot(n) == 0 {
				x.add(n)
			}
		}
	}
	x.Count = len(held)
	return putIndex(f.tx, namespace, resource, x)
}

// term is one non-zero charge in a fresh sum.
type term struct {
	resource, name string
	reserved       bool
	format         quantity.Format
}

// likeliestFormat returns the format of the term Kubernetes' recount most
// likely meets first (see above), and false when the projection cannot
// tell: a term is only reserved, or its informer has grown past its slots.
// Ties go to the format of the lower slot.
func likeliestFormat(tx *bolt.Tx, namespace string, terms []term) (quantity.Format, bool, error) {
	if len(terms) == 0 {
		return 0, false, nil
	}
	resource := terms[0].resource
	x, err := getIndex(tx, namespace, resource)
	if err != nil {
		return 0, false, err
	}
	slots := make([]int, len(terms))
	for i, t := range terms {
		if t.reserved || t.resource != resource {
			return 0, false, nil
		}
		slots[i] = x.slot(t.name)
	}
	runs := quota.SlotRuns(slots)
	if runs == nil {
		return 0, false, nil
	}
	var odds [formatCount]int
	for i, t := range terms {
		odds[t.format] += runs[i]
	}
	best, first := -1, 0
	for i, t := range terms {
		f := int(t.format)
		if best < 0 || odds[f] > odds[best] || odds[f] == odds[best] && slots[i] < first {
			best, first = f, slots[i]
		}
	}
	return quantity.Format(best), true, nil
}
