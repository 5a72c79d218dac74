package object

import (
	"bytes"
	"reflect"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/api/resource"
)

// edgeInputs are objects at the edges of what decodeTrimmed reads, and
// outside input that encoding/json reads in its own ways: escapes, keys
// in other case, repeated keys, nulls, numbers at their limits, invalid
// JSON.
var edgeInputs = []string{
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
	// Outside input, which only the typed path reads.
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

// checkTrimmed checks that wherever decodeTrimmed accepts raw, it builds
// what the typed path builds, and reports whether it accepted it.
func checkTrimmed(t *testing.T, raw []byte) bool {
	t.Helper()
	trimmed := bytes.TrimSpace(raw)
	got := decodeTrimmed(trimmed)
	if got == nil {
		return false
	}
	want, err := decodeTyped(trimmed)
	if err != nil {
		t.Fatalf("decodeTrimmed accepts what the typed path refuses (%v):\n%s", err, raw)
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("decodeTrimmed and the typed path differ on\n%s\n got %#v\nwant %#v", raw, got, want)
	}
	return true
}

func TestDecodeTrimmedMatchesTyped(t *testing.T) {
	accepted := 0
	for _, in := range edgeInputs {
		if checkTrimmed(t, []byte(in)) {
			accepted++
		}
	}
	if !checkTrimmed(t, []byte(edgeInputs[1])) {
		t.Errorf("decodeTrimmed does not read a trimmed pod with every field it knows")
	}
	if accepted < 5 {
		t.Errorf("decodeTrimmed accepted only %d inputs; the check is too weak", accepted)
	}
}

// TestDecodeTrimmedReadsTrimmedSamples checks that decodeTrimmed takes
// the trimmed form of every pod and identity-only object of the sample
// recordings, and agrees with the typed path on each.
func TestDecodeTrimmedReadsTrimmedSamples(t *testing.T) {
	pods := 0
	for i, raw := range sampleObjects(t) {
		o, err := Decode(raw)
		if err != nil {
			t.Fatalf("object %d: %v", i, err)
		}
		checkTrimmed(t, raw)
		b, err := o.Trimmed()
		if err != nil {
			t.Fatal(err)
		}
		accepted := checkTrimmed(t, b)
		info := knownKinds[groupKind{o.Group, o.Kind}]
		typed := info.decode != nil
		if o.Kind == "Pod" && o.Group == "" {
			typed = false
			pods++
		}
		if !accepted && !typed && !bytes.Contains(b, []byte(`"affinity"`)) && bytes.IndexFunc(b, func(r rune) bool { return r == '\\' || r >= 0x7f }) < 0 {
			t.Errorf("object %d: decodeTrimmed refuses the trimmed\n%s", i, b)
		}
	}
	if pods == 0 {
		t.Errorf("no pods in the samples")
	}
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
