package object

import (
	"bytes"
	"reflect"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/api/resource"
)

// fastInputs are objects at the edges of what decodeFast reads.
var fastInputs = []string{
	`{"apiVersion":"v1","kind":"Pod","metadata":{"name":"p","namespace":"ns","uid":"u"},"spec":{"containers":[]}}`,
	`{"apiVersion":"v1","kind":"Pod","metadata":{"name":"p","namespace":"ns","uid":"u","deletionTimestamp":"2026-01-01T00:00:00Z","deletionGracePeriodSeconds":30},"spec":{"initContainers":[{"name":"i","resources":{"requests":{"cpu":"1"}},"restartPolicy":"Always"}],"containers":[{"name":"c","resources":{"requests":{"cpu":"100m","memory":"1Gi"},"limits":{"cpu":"1.5","memory":" 2Gi "}}}],"activeDeadlineSeconds":-1,"priorityClassName":"high","runtimeClassName":"kata","overhead":{"cpu":"10m"},"resources":{"requests":{"cpu":"2"}}},"status":{"phase":"Running","qosClass":"Burstable","conditions":[{"type":"PodResizePending","status":"True","reason":"Infeasible"}],"initContainerStatuses":[{"name":"i","allocatedResources":{"cpu":"1"}}],"containerStatuses":[{"name":"c","allocatedResources":{"cpu":"100m"},"resources":{"requests":{"cpu":"100m"},"limits":{}}}]}}`,
	`{"apiVersion":"v1","kind":"Pod","metadata":{"generateName":"p-","annotations":{"a":"b"},"resourceVersion":"7"},"spec":{"containers":[{"name":"c"}]},"status":{}}`,
	`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"c","namespace":"ns","uid":"u"}}`,
	`{"apiVersion":"batch/v1","kind":"Job","metadata":{"name":"j","namespace":"ns"}}`,
	`{"apiVersion":"example.com/v1","kind":"Widget","metadata":{"name":"w"}}`,
	`{"apiVersion":"v1","kind":"Namespace","metadata":{"name":"n","namespace":"x"}}`,
	// Outside the subset: the general path decides.
	`{"apiVersion":"v1","kind":"Pod","metadata":{"name":"p"},"spec":{"containers":[{"name":"c","resources":{"requests":{"cpu":"1","cpu":"2"}}}]}}`,
	`{"apiVersion":"v1","kind":"Pod","metadata":{"name":"p"},"spec":{"containers":[{"name":"c","resources":{"requests":{"cpu":"x"}}}]}}`,
	`{"apiVersion":"v1","kind":"Pod","metadata":{"name":"p"},"spec":{"containers":[{"name":"c","resources":{"requests":{"cpu":1}}}]}}`,
	`{"apiVersion":"v1","kind":"Pod","metadata":{"name":"p"},"spec":{"containers":null}}`,
	`{"apiVersion":"v1","kind":"Pod","metadata":{"name":"p"},"spec":{"containers":[],"activeDeadlineSeconds":1.5}}`,
	`{"apiVersion":"v1","kind":"Pod","metadata":{"name":"p"},"spec":{"containers":[],"activeDeadlineSeconds":99999999999999999999}}`,
	`{"apiVersion":"v1","kind":"Pod","metadata":{"name":"p"},"Spec":{"containers":[]}}`,
	`{"apiVersion":"v1","kind":"Pod","metadata":{"name":"p\u0041"}}`,
	`{"apiVersion":"v1","kind":"Pod","metadata":{"name":"p","deletionTimestamp":"yesterday"}}`,
	`{"apiVersion":"v1","kind":"Pod","metadata":{"name":"p"},"metadata":{"name":"q"}}`,
	`{"apiVersion":"v1","kind":"Pod","metadata":{"name":"p"}} `,
	`{"apiVersion":"v1","kind":"Pod","metadata":{"name":"p"}}x`,
	`{"apiVersion":"v1","kind":"","metadata":{"name":"p"}}`,
	`{"apiVersion":"","kind":"Pod","metadata":{"name":"p"}}`,
	`{"apiVersion":"a/b/c","kind":"Pod","metadata":{"name":"p"}}`,
	`{"apiVersion":"v1","kind":"Pod","metadata":{}}`,
	`{"apiVersion":"v1","kind":"Service","metadata":{"name":"s"}}`,
	`{"kind":"Pod","apiVersion":"v1","metadata":{"name":"p"}}`,
}

// checkFast checks that wherever decodeFast accepts raw, it builds what
// the general path builds.
func checkFast(t *testing.T, raw []byte) bool {
	t.Helper()
	trimmed := bytes.TrimSpace(raw)
	fast := decodeFast(trimmed)
	if fast == nil {
		return false
	}
	general, err := decodeGeneral(trimmed)
	if err != nil {
		t.Fatalf("decodeFast accepts what the general path refuses (%v):\n%s", err, raw)
	}
	if !reflect.DeepEqual(fast, general) {
		t.Fatalf("decodeFast and the general path differ on\n%s\n got %#v\nwant %#v", raw, fast, general)
	}
	return true
}

func TestDecodeFastMatchesGeneral(t *testing.T) {
	for _, in := range fastInputs {
		checkFast(t, []byte(in))
	}
	if !checkFast(t, []byte(fastInputs[1])) {
		t.Errorf("decodeFast does not read a trimmed pod with every field it knows")
	}
}

// TestDecodeFastReadsTrimmedSamples checks that the fast path takes every
// trimmed pod and identity-only object of the sample recordings, and
// agrees with the general path on each.
func TestDecodeFastReadsTrimmedSamples(t *testing.T) {
	pods := 0
	for i, raw := range sampleObjects(t) {
		o, err := Decode(raw)
		if err != nil {
			t.Fatalf("object %d: %v", i, err)
		}
		checkFast(t, raw)
		b, err := o.Trimmed()
		if err != nil {
			t.Fatal(err)
		}
		accepted := checkFast(t, b)
		_, typed := knownKinds[groupKind{o.Group, o.Kind}]
		typed = typed && knownKinds[groupKind{o.Group, o.Kind}].newValue != nil
		if o.Kind == "Pod" && o.Group == "" {
			typed = false
			pods++
		}
		if !accepted && !typed && !bytes.Contains(b, []byte(`"affinity"`)) && bytes.IndexFunc(b, func(r rune) bool { return r == '\\' || r >= 0x7f }) < 0 {
			t.Errorf("object %d: the fast path refuses the trimmed\n%s", i, b)
		}
	}
	if pods == 0 {
		t.Errorf("no pods in the samples")
	}
}

// FuzzDecodeFast checks that the fast path never accepts an input on which
// it disagrees with the general path.
func FuzzDecodeFast(f *testing.F) {
	for _, in := range fastInputs {
		f.Add([]byte(in))
	}
	f.Add([]byte(benchPod))
	f.Fuzz(func(t *testing.T, raw []byte) {
		checkFast(t, raw)
		if o, err := Decode(raw); err == nil {
			if b, err := o.Trimmed(); err == nil {
				checkFast(t, b)
			}
		}
	})
}

// TestQuantityCacheableHoldsNoDecimal checks that every text the quantity
// cache keeps parses to a Quantity on Kubernetes' int64 path: two copies of
// it convert to distinct inf.Decs, where a Quantity holding one would hand
// out the one it shares.
func TestQuantityCacheableHoldsNoDecimal(t *testing.T) {
	suffixes := []string{"", "m", "k", "M", "G", "Ki", "Mi", "Gi", "Ti", "n", "E", "e3"}
	cacheable := 0
	for _, suffix := range suffixes {
		for digits := 1; digits <= 14; digits++ {
			for _, lead := range []string{"1", "9"} {
				text := lead + strings.Repeat("9", digits-1) + suffix
				if !quantityCacheable(text) {
					continue
				}
				cacheable++
				q, err := resource.ParseQuantity(text)
				if err != nil {
					t.Fatalf("cacheable %q does not parse: %v", text, err)
				}
				a, b := q, q
				if a.AsDec() == b.AsDec() {
					t.Errorf("cacheable %q parses to a Quantity holding an inf.Dec", text)
				}
			}
		}
	}
	for _, text := range []string{"0", "01", "1.5", "+1", " 1", "1Ti", "123456Gi", "1e3", "1n"} {
		if got, want := quantityCacheable(text), text == "0"; got != want {
			t.Errorf("quantityCacheable(%q) = %v, want %v", text, got, want)
		}
	}
	if cacheable < 50 {
		t.Errorf("only %d texts are cacheable", cacheable)
	}
}
