package kubeoracle

import (
	"encoding/json"
	"sort"
)

// minimize shrinks a JSON tree while still fails holds: it removes map
// entries and list elements one at a time, and keeps each removal after
// which the case still fails, until no single removal keeps it failing.
// keep names map keys never removed (apiVersion, kind, name).
func minimize(tree any, fails func(any) bool) any {
	cur := clone(tree)
	for changed := true; changed; {
		changed = false
		for _, path := range paths(cur, nil) {
			cand := clone(cur)
			if !remove(cand, path) {
				continue
			}
			cand = compact(cand)
			if fails(cand) {
				cur = cand
				changed = true
				break
			}
		}
	}
	return cur
}

var keep = map[string]bool{"apiVersion": true, "kind": true, "name": true, "metadata": true, "spec": true}

func clone(v any) any {
	b, _ := json.Marshal(v)
	var out any
	_ = json.Unmarshal(b, &out)
	return out
}

// paths lists every removable place in v, deepest last.
func paths(v any, prefix []any) [][]any {
	var out [][]any
	switch t := v.(type) {
	case map[string]any:
		keys := make([]string, 0, len(t))
		for k := range t {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			c := t[k]
			p := append(append([]any{}, prefix...), k)
			if !keep[k] || len(prefix) > 1 {
				out = append(out, p)
			}
			out = append(out, paths(c, p)...)
		}
	case []any:
		for i, c := range t {
			p := append(append([]any{}, prefix...), i)
			out = append(out, p)
			out = append(out, paths(c, p)...)
		}
	}
	return out
}

func remove(v any, path []any) bool {
	for i, step := range path {
		last := i == len(path)-1
		switch t := v.(type) {
		case map[string]any:
			k := step.(string)
			if last {
				delete(t, k)
				return true
			}
			v = t[k]
		case []any:
			idx := step.(int)
			if last {
				// Lists are replaced in their parent; mark the element.
				t[idx] = removed{}
				return true
			}
			v = t[idx]
		default:
			return false
		}
	}
	return false
}

type removed struct{}

// compact drops elements marked removed from every list of v.
func compact(v any) any {
	switch t := v.(type) {
	case map[string]any:
		for k, c := range t {
			t[k] = compact(c)
		}
	case []any:
		out := []any{}
		for _, c := range t {
			if _, ok := c.(removed); !ok {
				out = append(out, compact(c))
			}
		}
		return out
	}
	return v
}
