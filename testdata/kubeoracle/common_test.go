// Package kubeoracle compares the ledger's quota accounting with
// Kubernetes' own code (k8s.io/kubernetes v1.36.3) on randomly generated
// objects. Every comparison is seeded: a mismatch prints the seed, the case
// number and the generated object, and ORACLE_SEED and ORACLE_CASES
// reproduce or widen a run.
package kubeoracle

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/quotaledger/quota/ledger/object"
	"github.com/quotaledger/quota/ledger/quota"
)

// now is the clock both sides read: pods' deletion grace periods are
// measured against it.
var now = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

// baseSeed is the seed of a run: ORACLE_SEED, or a fixed default so that
// plain `go test` is reproducible.
func baseSeed(t *testing.T) uint64 {
	t.Helper()
	if s := os.Getenv("ORACLE_SEED"); s != "" {
		v, err := strconv.ParseUint(s, 10, 64)
		if err != nil {
			t.Fatalf("ORACLE_SEED: %v", err)
		}
		return v
	}
	return 20260301
}

// cases is how many random cases a comparison runs: ORACLE_CASES, or n.
func cases(t *testing.T, n int) int {
	t.Helper()
	if s := os.Getenv("ORACLE_CASES"); s != "" {
		v, err := strconv.Atoi(s)
		if err != nil {
			t.Fatalf("ORACLE_CASES: %v", err)
		}
		return v
	}
	if testing.Short() {
		return n / 10
	}
	return n
}

// caseRand is the generator of case i of a comparison named name.
func caseRand(seed uint64, name string, i int) *rand.Rand {
	h := uint64(14695981039346656037)
	for _, c := range []byte(name) {
		h = (h ^ uint64(c)) * 1099511628211
	}
	return rand.New(rand.NewPCG(seed^h, uint64(i)))
}

// mismatches collects the cases where the two sides disagree, printing the
// first few in full and counting the rest, so that one run shows every
// kind of difference.
type mismatches struct {
	t      *testing.T
	name   string
	seed   uint64
	passed int
	failed int
	kinds  map[string]int
}

func newMismatches(t *testing.T, name string) *mismatches {
	return &mismatches{t: t, name: name, seed: baseSeed(t), kinds: map[string]int{}}
}

// outcome is one side-by-side comparison of a generated tree: skip when
// the input is outside what Kubernetes would ever hand the code under
// comparison, otherwise the kind of difference ("" when both agree) and
// its detail.
type outcome struct {
	skip   bool
	kind   string
	detail string
}

// compare runs check on case i's tree; a difference is reported with the
// tree shrunk to the smallest one that still shows the same kind.
func (m *mismatches) compare(i int, tree any, check func(any) outcome) outcome {
	m.t.Helper()
	out := check(tree)
	switch {
	case out.skip:
	case out.kind == "":
		m.pass()
	default:
		m.failed++
		m.kinds[out.kind]++
		if m.kinds[out.kind] > 2 {
			return out
		}
		small := minimize(tree, func(c any) bool {
			o := check(c)
			return !o.skip && o.kind == out.kind
		})
		detail := check(small).detail
		m.t.Errorf("%s: seed %d case %d: %s\n%s\nsmallest input showing it:\n%s", m.name, m.seed, i, out.kind, detail, string(mustJSON(small)))
	}
	return out
}

func (m *mismatches) pass() { m.passed++ }

func (m *mismatches) done() {
	m.t.Helper()
	m.t.Logf("%s: seed %d: %d agreed, %d differed", m.name, m.seed, m.passed, m.failed)
	if m.failed > 0 {
		var ks []string
		for k, n := range m.kinds {
			ks = append(ks, fmt.Sprintf("%6d  %s", n, k))
		}
		sort.Strings(ks)
		m.t.Errorf("%s: %d of %d cases differed, by kind:\n%s", m.name, m.failed, m.failed+m.passed, strings.Join(ks, "\n"))
	}
}

func mustJSON(v any) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return b
}

// decodeLedger reads raw as the ledger does, in the namespace "ns".
func decodeLedger(raw []byte) (*object.Object, error) {
	o, err := object.Decode(raw)
	if err != nil {
		return nil, err
	}
	if o.Namespace == "" {
		o.SetNamespace("ns")
	}
	return o, nil
}

// listDiff compares Kubernetes' resource list with the ledger's, by name
// and by printed quantity (value and format). It returns "" when they agree.
func listDiff(kube corev1.ResourceList, ledger quota.ResourceList) string {
	names := map[string]bool{}
	for k := range kube {
		names[string(k)] = true
	}
	for k := range ledger {
		names[k] = true
	}
	var sorted []string
	for k := range names {
		sorted = append(sorted, k)
	}
	sort.Strings(sorted)
	var lines []string
	for _, k := range sorted {
		kq, kok := kube[corev1.ResourceName(k)]
		lq, lok := ledger[k]
		ks, ls := "(absent)", "(absent)"
		if kok {
			ks = kq.String()
		}
		if lok {
			ls = lq.String()
		}
		if ks != ls {
			lines = append(lines, fmt.Sprintf("  %s: kubernetes %s, ledger %s", k, ks, ls))
		}
	}
	return strings.Join(lines, "\n")
}

// diffKind names a list difference coarsely (which side lacks a name,
// values, formats), so that reports group alike cases; names outside the
// usual compute resources are spelled out.
func diffKind(kube corev1.ResourceList, ledger quota.ResourceList) string {
	var parts []string
	for k, kq := range kube {
		lq, ok := ledger[string(k)]
		switch {
		case !ok:
			parts = append(parts, "only kubernetes has "+genericName(string(k)))
		case kq.String() != lq.String():
			if kq.Cmp(mustParse(lq.String())) == 0 {
				parts = append(parts, "format differs")
			} else {
				parts = append(parts, "value differs")
			}
		}
	}
	for k := range ledger {
		if _, ok := kube[corev1.ResourceName(k)]; !ok {
			parts = append(parts, "only the ledger has "+genericName(k))
		}
	}
	sort.Strings(parts)
	return strings.Join(dedupe(parts), "; ")
}

func genericName(n string) string {
	switch {
	case strings.Contains(n, ".storageclass.storage.k8s.io/"):
		return "<class>.storageclass.storage.k8s.io/" + n[strings.Index(n, "/")+1:]
	case strings.Contains(n, "deviceclass"), strings.Contains(n, "/"):
		return n
	}
	return "a compute resource"
}

func dedupe(s []string) []string {
	out := s[:0]
	for i, v := range s {
		if i == 0 || v != s[i-1] {
			out = append(out, v)
		}
	}
	return out
}

func mustParse(s string) resource.Quantity {
	q, err := resource.ParseQuantity(s)
	if err != nil {
		return resource.Quantity{}
	}
	return q
}
