package quota

import (
	"slices"
	"strings"
)

// Which quota a refusal names.
//
// The ResourceQuota admission plugin reads a namespace's quotas from its
// informer's namespace index, a Go map of keys per namespace, and stops at
// the first quota that refuses the request: first at a quota whose
// constraints the object fails ("failed quota") or whose status lacks a
// figure, then at a quota the request would take past its hard limit
// ("exceeded quota"). Go starts each iteration of a map at a random place,
// so when several quotas refuse, the one Kubernetes names can differ from
// one request to the next. It does not differ evenly. A map of up to
// IndexSlots keys is a single group of that many slots; a new key takes the
// first free slot, and iteration visits the slots in order from a random
// one, wrapping around. Each refusing quota is therefore met first with a
// probability proportional to the run of slots before it back to the
// previous refusing quota. With quotas created one after another and none
// deleted, the first created is the likeliest by far: 5 times in 8 or more
// for two quotas among up to four.
//
// The projection keeps each quota's slot as the informer would have placed
// it, in the order the quotas reached the log (QuotaState.Slot), and Admit
// names the likeliest refusal. A namespace that has had more than IndexSlots
// quotas at once has grown its map beyond a single group, where the order
// follows the keys' hashes; its quotas have no slot (0), and the ledger
// names the first refusing quota by name, which is no likelier than
// another.

// IndexSlots is the number of keys a Go map holds in its first group.
const IndexSlots = 8

// SlotRuns returns, for keys held in the given slots of a map's first
// group (1 to IndexSlots, distinct, in any order), the number of the
// group's IndexSlots starting places from which an iteration meets each
// key first: the run of slots after the previous key's, wrapping around,
// up to its own. They sum to IndexSlots. It returns nil when a slot is
// outside the group.
func SlotRuns(slots []int) []int {
	sorted := slices.Clone(slots)
	slices.Sort(sorted)
	runs := make([]int, len(slots))
	for i, s := range slots {
		if s < 1 || s > IndexSlots {
			return nil
		}
		j, _ := slices.BinarySearch(sorted, s)
		prev := sorted[(j+len(sorted)-1)%len(sorted)]
		runs[i] = (s-prev+IndexSlots-1)%IndexSlots + 1
	}
	return runs
}

// refusal is a quota that refuses a request, with the message naming it.
type refusal struct {
	state   int
	message string
}

// likeliest returns the message of the refusal Kubernetes most likely
// reports among several (see above); ties go to the lower slot. Without
// every slot known, it names the first by slot and name.
func likeliest(states []QuotaState, refusals []refusal) string {
	if len(refusals) == 1 {
		return refusals[0].message
	}
	slot := func(r refusal) int { return states[r.state].Slot }
	sorted := slices.Clone(refusals)
	slices.SortStableFunc(sorted, func(a, b refusal) int {
		if d := slot(a) - slot(b); d != 0 {
			return d
		}
		return strings.Compare(states[a.state].Quota.Name, states[b.state].Quota.Name)
	})
	slots := make([]int, len(sorted))
	for i, r := range sorted {
		slots[i] = slot(r)
	}
	runs := SlotRuns(slots)
	if runs == nil {
		return sorted[0].message
	}
	best := 0
	for i, run := range runs {
		if run > runs[best] {
			best = i
		}
	}
	return sorted[best].message
}
