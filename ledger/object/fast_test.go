package object

import (
	"bytes"
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/quotaledger/quota/ledger/jsonscan"
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

// typedInputs are objects at the edges of what decodeTyped reads, besides
// fastInputs.
var typedInputs = []string{
	` {"kind":"Pod", "apiVersion" : "v1","metadata":{"name":"p","namespace":"ns","managedFields":[{"apiVersion":"v1","fieldsV1":{"f:kind":{}}}]},"spec":{"containers":[{"name":"c","resources":{"requests":{"cpu":"1"}}}]},"status":{"phase":"Running"}} `,
	`{"apiVersion":"v1","kind":"Pod","metadata":{"name":"p"},"kind":"Service"}`,
	`{"apiVersion":"v1","kind":"Pod","metadata":{"name":"p"},"Kind":"Service"}`,
	`{"apiVersion":"v1","kind":"Pod","metadata":{"name":"p"},"APIVERSION":"v2"}`,
	`{"apiVersion":"v1","k\u0069nd":"Service","kind":"Pod","metadata":{"name":"p"}}`,
	`{"apiVersion":"v1","kind":"P\u006fd","metadata":{"name":"p"}}`,
	`{"apiVersion":"v1","kind":"Pod","metadata":{"name":"p"},"x":"\"}","y":[{"kind":"Service"}]}`,
	`{"apiVersion":"v1","kind":"Pod","metadata":{"name":"p"},"spec":{"containers":"no"}}`,
	`{"apiVersion":"v1","kind":"Pod","metadata":{"name":5}}`,
	`{"apiVersion":"v1","kind":"Pod","metadata":{"namespace":"n"}}`,
	`{"apiVersion":"v1","kind":"Pod","metadata":{"name":"p","deletionTimestamp":"2026-01-01T00:00:00Z","deletionGracePeriodSeconds":0}}`,
	`{"apiVersion":"v1","kind":"Pod","metadata":{"name":"p"},"spec":{"priority":1e3}}`,
	`{"apiVersion":"v1","kind":"Pod","metadata":{"name":"p"},"spec":{}`,
	`{"apiVersion":"v1","kind":"Pod","metadata":{"name":"p"},"spec":{}}}`,
	`{"apiVersion":"v1","kind":"Pod","metadata":{"name":"p"},"spec":{"nodeName":"\ud800"}}`,
	`{"apiVersion":"scheduling.k8s.io/v1","kind":"PriorityClass","metadata":{"name":"high"},"value":1000}`,
	`{"apiVersion":"storage.k8s.io/v1","kind":"StorageClass","metadata":{"name":"fast","annotations":{"storageclass.kubernetes.io/is-default-class":"true"}},"provisioner":"x"}`,
	`{"apiVersion":"v1","kind":"ResourceQuota","metadata":{"name":"q","namespace":"n"},"spec":{"hard":{"pods":"10"}}}`,
	`{"apiVersion":"v1","kind":"PersistentVolumeClaim","metadata":{"name":"c"},"spec":{"resources":{"requests":{"storage":"1Gi"}}}}`,
	`{"apiVersion":"v1","kind":"Pod","metadata":{"name":"p"},"kind":1}`,
	`{"apiVersion":"v1","kind":"Pod","metadata":{"name":"p"},"spec":nul}`,
}

// checkTyped checks that wherever decodeTyped accepts raw, it builds what
// the general path builds.
func checkTyped(t *testing.T, raw []byte) bool {
	t.Helper()
	trimmed := bytes.TrimSpace(raw)
	typed := decodeTyped(trimmed)
	if typed == nil {
		return false
	}
	general, err := decodeGeneral(trimmed)
	if err != nil {
		t.Fatalf("decodeTyped accepts what the general path refuses (%v):\n%s", err, raw)
	}
	if !reflect.DeepEqual(typed, general) {
		t.Fatalf("decodeTyped and the general path differ on\n%s\n got %#v\nwant %#v", raw, typed, general)
	}
	return true
}

func TestDecodeTypedMatchesGeneral(t *testing.T) {
	accepted := 0
	for _, in := range append(append([]string{}, fastInputs...), typedInputs...) {
		if checkTyped(t, []byte(in)) {
			accepted++
		}
	}
	for _, raw := range sampleObjects(t) {
		if !checkTyped(t, raw) {
			if o, err := decodeGeneral(bytes.TrimSpace(raw)); err == nil && o.Value != nil {
				t.Errorf("decodeTyped declines a recorded %s %s", o.Kind, o.Name)
			}
			continue
		}
		accepted++
	}
	if accepted < 20 {
		t.Fatalf("decodeTyped accepted only %d inputs; the differential check is too weak", accepted)
	}
}

func FuzzDecodeTyped(f *testing.F) {
	for _, in := range append(append([]string{}, fastInputs...), typedInputs...) {
		f.Add([]byte(in))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		checkTyped(t, raw)
	})
}

// walkInputs are pods at the edges of what walkQuotaPod reads.
var walkInputs = []string{
	`{"apiVersion":"v1","kind":"Pod","metadata":{"name":"p","managedFields":[{"manager":"m","fieldsV1":{"f:spec":{"f:containers":{"k:{\"name\":\"c\"}":{}}}}}],"labels":{"a":"b\"c"}},"spec":{"containers":[{"name":"c","image":"i","env":[{"name":"X","value":"\\\""}],"resources":{"requests":{"cpu":"1"}}}],"volumes":[{"name":"v","emptyDir":{}}]},"status":{"phase":"Running","containerStatuses":[{"name":"c","state":{"running":{}},"allocatedResources":{"cpu":"1"}}]}}`,
	`{"apiVersion":"v1","kind":"Pod","metadata":{"name":"p"},"spec":{"containers":[]},"status":null}`,
	`{"apiVersion":"v1","kind":"Pod","metadata":{"name":"p"},"spec":{"containers":null,"initContainers":[]}}`,
	`{"apiVersion":"v1","kind":"Pod","metadata":{"name":"p"},"spec":{"containers":[null]}}`,
	`{"apiVersion":"v1","kind":"Pod","metadata":{"name":"p\u0041","namespace":"n\u00e9"},"spec":{"containers":[{"name":"c\"d"}]}}`,
	`{"apiVersion":"v1","kind":"Pod","metadata":{"name":"p","Name":"q"}}`,
	`{"apiVersion":"v1","kind":"Pod","metadata":{"name":"p"},"spec":{"containers":[{"name":"a","NAME":"b"}]}}`,
	`{"apiVersion":"v1","kind":"Pod","metadata":{"name":"p"},"spec":{"containers":[{"name":"a","resources":{"requests":{"cpu":"1"}},"resources":{"limits":{"cpu":"2"}}}]}}`,
	`{"apiVersion":"v1","kind":"Pod","metadata":{"name":"p"},"spec":{"priority":7,"priorityClassName":"high","runtimeClassName":null,"activeDeadlineSeconds":30,"overhead":{"cpu":"10m"},"affinity":{"podAffinity":{"requiredDuringSchedulingIgnoredDuringExecution":[{"namespaces":["a"],"topologyKey":"k"}]}}}}`,
	`{"apiVersion":"v1","kind":"Pod","metadata":{"name":"p","deletionTimestamp":"2026-01-01T00:00:00Z","deletionGracePeriodSeconds":5,"uid":"u"},"spec":{"containers":[{"name":"c"}]},"status":{"conditions":[{"type":"PodResizePending","status":"True"}],"qosClass":"BestEffort"}}`,
	`{"apiVersion":"v1","kind":"Pod","metadata":{"name":"p"},"spec":{"containers":[{"name":"c","restartPolicy":"Always"}]},"status":{"phase":5}}`,
	`{"apiVersion":"v1","kind":"Pod","metadata":"x"}`,
	`{"apiVersion":"v1","kind":"Pod","metadata":null,"spec":null}`,
	` {"apiVersion" : "v1" , "kind" : "Pod" , "metadata" : { "name" : "p" } , "spec" : { "containers" : [ { "name" : "c" , "resources" : { } } ] } } `,
	// Resource lists at their edges.
	`{"apiVersion":"v1","kind":"Pod","metadata":{"name":"p"},"spec":{"containers":[{"name":"c","resources":{"requests":{"cpu":" 250m ","memory":"1Gi","cpu":"1"},"limits":null,"claims":[{"name":"x"}]}}],"overhead":{}}}`,
	`{"apiVersion":"v1","kind":"Pod","metadata":{"name":"p"},"spec":{"containers":[{"name":"c","resources":{"requests":{"cpu":2,"memory":"1e3"}}}]}}`,
	`{"apiVersion":"v1","kind":"Pod","metadata":{"name":"p"},"spec":{"containers":[{"name":"c","resources":{"requests":{"c\u0070u":"1"},"Limits":{"cpu":"1"}}}]}}`,
	`{"apiVersion":"v1","kind":"Pod","metadata":{"name":"p"},"spec":{"containers":[{"name":"c","resources":{"requests":{"cpu":"lots"}}}]}}`,
	`{"apiVersion":"v1","kind":"Pod","metadata":{"name":"p"},"spec":{"containers":[{"name":"c","resources":{"requests":{"cpu":null}}}]}}`,
	`{"apiVersion":"v1","kind":"Pod","metadata":{"name":"p"},"spec":{"containers":[{"name":"c","resources":null}],"overhead":null}}`,
	`{"apiVersion":"v1","kind":"Pod","metadata":{"name":"p"},"spec":{"containers":[{"name":"c","resources":{"requests":[]}}]}}`,
	`{"apiVersion":"v1","kind":"Pod","metadata":{"name":"p","uid":"0b7c\u002d1"},"spec":{},"status":{"containerStatuses":[{"name":"c","allocatedResources":{"cpu":"500m"},"resources":{"requests":{"cpu":"500m"}}}]}}`,
	// Integers at their edges.
	`{"apiVersion":"v1","kind":"Pod","metadata":{"name":"p","deletionGracePeriodSeconds":-0},"spec":{"priority":-2147483648,"activeDeadlineSeconds":9223372036854775807}}`,
	`{"apiVersion":"v1","kind":"Pod","metadata":{"name":"p","deletionGracePeriodSeconds":null},"spec":{"priority":null,"activeDeadlineSeconds":null}}`,
	`{"apiVersion":"v1","kind":"Pod","metadata":{"name":"p"},"spec":{"priority":2147483648}}`,
	`{"apiVersion":"v1","kind":"Pod","metadata":{"name":"p"},"spec":{"priority":1.5}}`,
	`{"apiVersion":"v1","kind":"Pod","metadata":{"name":"p"},"spec":{"priority":1e3}}`,
	`{"apiVersion":"v1","kind":"Pod","metadata":{"name":"p"},"spec":{"priority":"7"}}`,
	// Preemption policies: the known values, another, null, an escape.
	`{"apiVersion":"v1","kind":"Pod","metadata":{"name":"p"},"spec":{"preemptionPolicy":"PreemptLowerPriority"}}`,
	`{"apiVersion":"v1","kind":"Pod","metadata":{"name":"p"},"spec":{"preemptionPolicy":"Never"}}`,
	`{"apiVersion":"v1","kind":"Pod","metadata":{"name":"p"},"spec":{"preemptionPolicy":"Sometimes"}}`,
	`{"apiVersion":"v1","kind":"Pod","metadata":{"name":"p"},"spec":{"preemptionPolicy":null}}`,
	`{"apiVersion":"v1","kind":"Pod","metadata":{"name":"p"},"spec":{"preemptionPolicy":"N\u0065ver"}}`,
	`{"apiVersion":"v1","kind":"Pod","metadata":{"name":"p"},"spec":{"preemptionPolicy":7}}`,
	`{"apiVersion":"v1","kind":"Pod","metadata":{"name":"p"},"spec":{"serviceAccountName":"builder","serviceAccount":"old"}}`,
	`{"apiVersion":"v1","kind":"Pod","metadata":{"name":"p"},"spec":{"serviceAccount":"old"}}`,
	`{"apiVersion":"v1","kind":"Pod","metadata":{"name":"p"},"spec":{"serviceAccountName":"b\u0075ilder"}}`,
	`{"apiVersion":"v1","kind":"Pod","metadata":{"name":"p"},"spec":{"serviceAccountName":null,"serviceAccount":7}}`,
	`{"apiVersion":"v1","kind":"Pod","metadata":{"name":"p"},"status":{"phase":"Pend\u0069ng","qosClass":7}}`,
	// Node selectors, which admission reads for the RuntimeClass plugin.
	`{"apiVersion":"v1","kind":"Pod","metadata":{"name":"p"},"spec":{"nodeSelector":{"zone":"a","disk":"ss\u0064"},"containers":[{"name":"c"}]}}`,
	`{"apiVersion":"v1","kind":"Pod","metadata":{"name":"p"},"spec":{"nodeSelector":{},"runtimeClassName":""}}`,
	`{"apiVersion":"v1","kind":"Pod","metadata":{"name":"p"},"spec":{"nodeSelector":null}}`,
	`{"apiVersion":"v1","kind":"Pod","metadata":{"name":"p"},"spec":{"nodeSelector":{"zone":7}}}`,
	// Not valid JSON, in what the walk skips or after the pod.
	`{"apiVersion":"v1","kind":"Pod","metadata":{"name":"p"},"spec":{"volumes":[01]}}`,
	`{"apiVersion":"v1","kind":"Pod","metadata":{"name":"p","labels":{"a":"b\q"}}}`,
	`{"apiVersion":"v1","kind":"Pod","metadata":{"name":"p"},"spec":{"containers":[{"name":"c","image":tru}]}}`,
	`{"apiVersion":"v1","kind":"Pod","metadata":{"name":"p"}} {}`,
	`{"apiVersion":"v1","kind":"Pod","metadata":{"name":"p"}}}`,
	// Other kinds, which the walk gives up on.
	`{"apiVersion":"v1","kind":"Service","metadata":{"name":"s"},"spec":{"containers":[{"name":"c"}]}}`,
	`{"kind":"PersistentVolumeClaim","apiVersion":"v1","metadata":{"name":"c"},"spec":{"resources":{"requests":{"storage":"1Gi"}}}}`,
}

// checkForQuota checks that wherever Decode succeeds, DecodeForQuota does
// too, with the same identity and the same trimmed bytes. It reports
// whether the pod shortcut took the input.
func checkForQuota(t *testing.T, raw []byte) bool {
	t.Helper()
	full, err := Decode(raw)
	if err != nil {
		return false
	}
	quick, err := DecodeForQuota(raw)
	if err != nil {
		t.Fatalf("DecodeForQuota refuses what Decode reads (%v):\n%s", err, raw)
	}
	fb, ferr := full.Trimmed()
	qb, qerr := quick.Trimmed()
	if (ferr == nil) != (qerr == nil) || !bytes.Equal(fb, qb) {
		t.Fatalf("trimmed differ on\n%s\n DecodeForQuota: %s (%v)\n Decode:         %s (%v)", raw, qb, qerr, fb, ferr)
	}
	fv, qv := full.Value, quick.Value
	full.Value, quick.Value = nil, nil
	if !reflect.DeepEqual(full, quick) {
		t.Fatalf("identities differ on\n%s\n got %#v\nwant %#v", raw, quick, full)
	}
	full.Value, quick.Value = fv, qv
	checkWalk(t, bytes.TrimSpace(raw))
	trimmed := bytes.TrimSpace(raw)
	apiVersion, kind, ok := typeMeta(trimmed)
	return ok && apiVersion == "v1" && kind == "Pod" && decodeQuotaPod(trimmed) != nil
}

// checkWalk checks that wherever walkQuotaPod reads a pod, encoding/json
// reads it too (so it is valid JSON), into the same struct.
func checkWalk(t *testing.T, raw []byte) bool {
	t.Helper()
	var walked quotaPod
	if !walkQuotaPod(raw, &walked) {
		return false
	}
	var decoded quotaPod
	if err := json.Unmarshal(raw, &decoded); err != nil {
		t.Fatalf("walkQuotaPod reads what encoding/json refuses (%v):\n%s", err, raw)
	}
	if !reflect.DeepEqual(walked, decoded) {
		t.Fatalf("walkQuotaPod and encoding/json differ on\n%s\n got %#v\nwant %#v", raw, walked, decoded)
	}
	return true
}

// checkForQuotaFrom reads raw as a member of a document with
// DecodeForQuotaFrom and checks that the document scans as it does with
// Raw in its place, the same bytes read for the member, and that whenever
// it returns an object, DecodeForQuota returns the same for those bytes.
// It reports whether it returned an object.
func checkForQuotaFrom(t *testing.T, raw []byte) bool {
	t.Helper()
	doc := append(append([]byte(`{"object": `), raw...), `,"after":7}`...)
	scan := func(read func(s *jsonscan.Scanner) ([]byte, bool)) (member []byte, after string, ok bool) {
		s := jsonscan.New(doc)
		walked := s.Members(func(key []byte, plain bool) bool {
			switch string(key) {
			case "object":
				var ok bool
				member, ok = read(s)
				return ok
			case "after":
				v, ok := s.Raw()
				after = string(v)
				return ok
			}
			return s.Skip()
		})
		return member, after, walked && s.AtEnd()
	}
	var got *Object
	gotRaw, gotAfter, gotOK := scan(func(s *jsonscan.Scanner) ([]byte, bool) {
		o, r, ok := DecodeForQuotaFrom(s)
		got = o
		return r, ok
	})
	wantRaw, wantAfter, wantOK := scan((*jsonscan.Scanner).Raw)
	if gotOK != wantOK || !bytes.Equal(gotRaw, wantRaw) || gotAfter != wantAfter {
		t.Fatalf("DecodeForQuotaFrom read %q, then %q (document read: %v); Raw read %q, then %q (%v):\n%s",
			gotRaw, gotAfter, gotOK, wantRaw, wantAfter, wantOK, doc)
	}
	if !gotOK || got == nil {
		// A reader gives up on a document that does not scan as a whole.
		return false
	}
	want, err := DecodeForQuota(gotRaw)
	if err != nil {
		t.Fatalf("DecodeForQuotaFrom decoded what DecodeForQuota refuses (%v):\n%s", err, raw)
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("DecodeForQuotaFrom and DecodeForQuota differ on\n%s\n got %#v\nwant %#v", raw, got, want)
	}
	return true
}

func TestDecodeForQuotaTrimsAsDecode(t *testing.T) {
	pods := 0
	inputs := append(append(append([]string{benchPod}, fastInputs...), typedInputs...), walkInputs...)
	walked := 0
	for _, in := range inputs {
		if checkWalk(t, []byte(in)) {
			walked++
		}
		if checkForQuota(t, []byte(in)) {
			pods++
		}
	}
	for _, raw := range sampleObjects(t) {
		if checkWalk(t, raw) {
			walked++
		}
		if checkForQuota(t, raw) {
			pods++
		}
	}
	if walked < 10 {
		t.Fatalf("walkQuotaPod read only %d inputs; the check is too weak", walked)
	}
	from := 0
	for _, in := range inputs {
		if checkForQuotaFrom(t, []byte(in)) {
			from++
		}
	}
	for _, raw := range sampleObjects(t) {
		if checkForQuotaFrom(t, raw) {
			from++
		}
	}
	if from < 10 {
		t.Fatalf("DecodeForQuotaFrom decoded only %d inputs; the check is too weak", from)
	}
	if pods < 10 {
		t.Fatalf("the pod shortcut took only %d inputs; the check is too weak", pods)
	}
}

// TestDecodeForQuotaReadsNodeSelector: a raw pod's node selector, which
// admission checks against its RuntimeClass's, is read by the quick
// decoders as Decode reads it.
func TestDecodeForQuotaReadsNodeSelector(t *testing.T) {
	for _, raw := range []string{
		`{"apiVersion":"v1","kind":"Pod","metadata":{"name":"p"},"spec":{"runtimeClassName":"rc","nodeSelector":{"zone":"a","disk":"ssd"},"containers":[{"name":"c","image":"x"}]}}`,
		`{"apiVersion":"v1","kind":"Pod","metadata":{"name":"p"},"spec":{"nodeSelector":{},"containers":[{"name":"c"}]}}`,
		`{"apiVersion":"v1","kind":"Pod","metadata":{"name":"p"},"spec":{"containers":[{"name":"c"}]}}`,
	} {
		full, err := Decode([]byte(raw))
		if err != nil {
			t.Fatal(err)
		}
		want := full.Value.(*corev1.Pod).Spec.NodeSelector
		quick, err := DecodeForQuota([]byte(raw))
		if err != nil {
			t.Fatal(err)
		}
		if got := quick.Value.(*corev1.Pod).Spec.NodeSelector; !reflect.DeepEqual(got, want) {
			t.Errorf("DecodeForQuota(%s): nodeSelector %#v, want %#v", raw, got, want)
		}
		from, _, ok := DecodeForQuotaFrom(jsonscan.New([]byte(raw)))
		if !ok || from == nil {
			t.Fatalf("DecodeForQuotaFrom(%s) read nothing", raw)
		}
		if got := from.Value.(*corev1.Pod).Spec.NodeSelector; !reflect.DeepEqual(got, want) {
			t.Errorf("DecodeForQuotaFrom(%s): nodeSelector %#v, want %#v", raw, got, want)
		}
	}
}

func FuzzDecodeForQuota(f *testing.F) {
	for _, in := range append(append(append([]string{benchPod}, fastInputs...), typedInputs...), walkInputs...) {
		f.Add([]byte(in))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		checkWalk(t, raw)
		checkForQuota(t, raw)
		checkForQuotaFrom(t, raw)
		if o, err := DecodeForQuota(raw); err == nil {
			checkTrimmedPod(t, o)
		}
	})
}
