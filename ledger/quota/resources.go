package quota

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"sort"
	"strings"

	"github.com/quotaledger/quota/ledger/quantity"
)

// ResourceList maps resource names (requests.cpu, pods, count/jobs.batch) to
// quantities.
type ResourceList map[string]quantity.Quantity

// MarshalJSON writes each quantity in quantity's exact form, so that the
// print format survives a round trip (a binary-SI 512 stays binary SI).
func (l ResourceList) MarshalJSON() ([]byte, error) {
	if l == nil {
		return []byte("null"), nil
	}
	m := make(map[string]string, len(l))
	for k, v := range l {
		m[k] = v.Exact()
	}
	return json.Marshal(m)
}

// UnmarshalJSON reads what MarshalJSON writes.
func (l *ResourceList) UnmarshalJSON(b []byte) error {
	var m map[string]string
	if err := json.Unmarshal(b, &m); err != nil {
		return fmt.Errorf("resource list: %w", err)
	}
	if m == nil {
		*l = nil
		return nil
	}
	out := make(ResourceList, len(m))
	for k, s := range m {
		q, err := quantity.ParseExact(s)
		if err != nil {
			return fmt.Errorf("resource list %s: %w", k, err)
		}
		out[k] = q
	}
	*l = out
	return nil
}

// Names returns the resource names of l, sorted.
func (l ResourceList) Names() []string { return slices.Sorted(maps.Keys(l)) }

// String prints l as the quota admission plugin does in its messages:
// name=quantity pairs sorted by name, joined by commas.
func (l ResourceList) String() string {
	parts := make([]string, 0, len(l))
	for _, k := range l.Names() {
		parts = append(parts, k+"="+l[k].String())
	}
	return strings.Join(parts, ",")
}

// SubtractNonNegative returns a-b clamped at zero for every resource in
// either list, as an update is charged only for what grows.
func SubtractNonNegative(a, b ResourceList) ResourceList {
	zero := quantity.NewInt(0)
	out := make(ResourceList, len(a)+len(b))
	for k, v := range a {
		if w, ok := b[k]; ok {
			v = v.Sub(w)
		}
		if v.Sign() > 0 {
			out[k] = v
		} else {
			out[k] = zero
		}
	}
	for k := range b {
		if _, ok := out[k]; !ok {
			out[k] = zero
		}
	}
	return out
}

// Equal reports whether a and b name the same resources with equal values.
// Formats are not compared, as Kubernetes' quota.Equals does not.
func Equal(a, b ResourceList) bool {
	return maps.EqualFunc(a, b, func(v, w quantity.Quantity) bool { return v.Cmp(w) == 0 })
}

// maskNames returns the part of l whose names are in names.
func maskNames(l ResourceList, names []string) ResourceList {
	out := make(ResourceList, len(names))
	for _, n := range names {
		if v, ok := l[n]; ok {
			out[n] = v
		}
	}
	return out
}

// removeZeros returns l without its zero quantities: l itself when it has
// none, so the result is only read.
func removeZeros(l ResourceList) ResourceList {
	zeros := 0
	for _, v := range l {
		if v.IsZero() {
			zeros++
		}
	}
	if zeros == 0 {
		return l
	}
	out := make(ResourceList, len(l)-zeros)
	for k, v := range l {
		if !v.IsZero() {
			out[k] = v
		}
	}
	return out
}

// negativeNames returns the sorted names of negative quantities in l.
func negativeNames(l ResourceList) []string {
	var out []string
	for k, v := range l {
		if v.Sign() < 0 {
			out = append(out, k)
		}
	}
	sort.Strings(out)
	return out
}
