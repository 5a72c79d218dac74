package object

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	nodev1 "k8s.io/api/node/v1"
	resourcev1 "k8s.io/api/resource/v1"
)

// sampleObjects returns every object of every watch event in the recorded
// samples of testdata.
func sampleObjects(t testing.TB) [][]byte {
	t.Helper()
	files, _ := filepath.Glob("../../testdata/samples/*/events.jsonl")
	more, _ := filepath.Glob("../../testdata/samples/*/cluster.jsonl")
	files = append(files, more...)
	if len(files) == 0 {
		t.Fatal("no recorded sample in testdata/samples")
	}
	var out [][]byte
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		sc := bufio.NewScanner(bytes.NewReader(data))
		sc.Buffer(make([]byte, 1<<20), SizeMax)
		for sc.Scan() {
			var ev struct {
				Object json.RawMessage `json:"object"`
			}
			if err := json.Unmarshal(sc.Bytes(), &ev); err != nil {
				t.Fatalf("%s: %v", f, err)
			}
			out = append(out, ev.Object)
		}
	}
	return out
}

func TestDecodeResource(t *testing.T) {
	tests := []struct {
		name, json, resource string
		cluster              bool
		typed                bool
	}{
		{"core kind is plural without group", `{"apiVersion":"v1","kind":"Pod","metadata":{"name":"a"}}`, "pods", false, true},
		{"pvc exact plural", `{"apiVersion":"v1","kind":"PersistentVolumeClaim","metadata":{"name":"a"}}`, "persistentvolumeclaims", false, true},
		{"grouped kind is qualified", `{"apiVersion":"batch/v1","kind":"Job","metadata":{"name":"a"}}`, "jobs.batch", false, false},
		{"apps deployment", `{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"a"}}`, "deployments.apps", false, false},
		{"custom kind is guessed lowercase plural", `{"apiVersion":"example.com/v1","kind":"Widget","metadata":{"name":"a"}}`, "widgets.example.com", false, false},
		{"custom kind ending in s gets es", `{"apiVersion":"example.com/v1","kind":"Class","metadata":{"name":"a"}}`, "classes.example.com", false, false},
		{"custom kind ending in y gets ies", `{"apiVersion":"example.com/v1","kind":"Policy","metadata":{"name":"a"}}`, "policies.example.com", false, false},
		{"ingress exact plural", `{"apiVersion":"networking.k8s.io/v1","kind":"Ingress","metadata":{"name":"a"}}`, "ingresses.networking.k8s.io", false, false},
		{"runtime class is cluster scoped", `{"apiVersion":"node.k8s.io/v1","kind":"RuntimeClass","metadata":{"name":"a","namespace":"x"},"handler":"h"}`, "runtimeclasses.node.k8s.io", true, true},
		{"priority class is cluster scoped", `{"apiVersion":"scheduling.k8s.io/v1","kind":"PriorityClass","metadata":{"name":"a"},"value":5}`, "priorityclasses.scheduling.k8s.io", true, true},
		{"storage class is cluster scoped", `{"apiVersion":"storage.k8s.io/v1","kind":"StorageClass","metadata":{"name":"a"},"provisioner":"p"}`, "storageclasses.storage.k8s.io", true, true},
		{"namespace is cluster scoped", `{"apiVersion":"v1","kind":"Namespace","metadata":{"name":"a"}}`, "namespaces", true, false},
		{"generateName stands for name", `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"generateName":"a-"}}`, "configmaps", false, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o, err := Decode([]byte(tt.json))
			if err != nil {
				t.Fatal(err)
			}
			if o.Resource != tt.resource {
				t.Errorf("Resource: got %q, want %q", o.Resource, tt.resource)
			}
			if o.ClusterScoped() != tt.cluster {
				t.Errorf("ClusterScoped: got %v, want %v", o.ClusterScoped(), tt.cluster)
			}
			if tt.cluster && o.Namespace != "" {
				t.Errorf("Namespace: got %q, want empty for a cluster-scoped kind", o.Namespace)
			}
			if (o.Value != nil) != tt.typed {
				t.Errorf("Value: got %T, want typed=%v", o.Value, tt.typed)
			}
		})
	}
}

func TestDecodeRejects(t *testing.T) {
	tests := []struct {
		name, json string
		want       error
	}{
		{"array is not an object", `[1,2]`, ErrNotObject},
		{"string is not an object", `"pod"`, ErrNotObject},
		{"empty input is not an object", ``, ErrNotObject},
		{"broken JSON is malformed", `{"kind":`, ErrMalformed},
		{"kind is required", `{"apiVersion":"v1","metadata":{"name":"a"}}`, ErrMissingKind},
		{"apiVersion is required", `{"kind":"Pod","metadata":{"name":"a"}}`, ErrMissingAPIVersion},
		{"name or generateName is required", `{"apiVersion":"v1","kind":"Pod","metadata":{}}`, ErrMissingName},
		{"typed field of wrong type is malformed", `{"apiVersion":"v1","kind":"Pod","metadata":{"name":"a"},"spec":{"containers":"x"}}`, ErrMalformed},
		{"bad quantity is malformed", `{"apiVersion":"v1","kind":"Pod","metadata":{"name":"a"},"spec":{"containers":[{"name":"c","resources":{"limits":{"cpu":"lots"}}}]}}`, ErrMalformed},
		{"bad apiVersion is malformed", `{"apiVersion":"a/b/c","kind":"Pod","metadata":{"name":"a"}}`, ErrMalformed},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Decode([]byte(tt.json))
			if !errors.Is(err, tt.want) {
				t.Fatalf("got %v, want %v", err, tt.want)
			}
		})
	}
}

// TestDecodeQuantityErrorInAPIServerWords: an object whose quantity does
// not parse is refused as the API server refuses it (400), in its words
// after the ledger's (recorded: testdata/recorded/rec-qty-2, probe 02).
func TestDecodeQuantityErrorInAPIServerWords(t *testing.T) {
	_, err := Decode([]byte(`{"apiVersion":"v1","kind":"Pod","metadata":{"name":"a"},"spec":{"containers":[{"name":"c","resources":{"requests":{"cpu":"7e2m"}}}]}}`))
	want := `decode Pod "a": malformed object: Pod in version "v1" cannot be handled as a Pod: quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'`
	if err == nil || err.Error() != want {
		t.Fatalf("got %v\nwant %s", err, want)
	}
}

func TestDecodeNamespaceOptional(t *testing.T) {
	o, err := Decode([]byte(`{"apiVersion":"v1","kind":"Pod","metadata":{"name":"a"},"spec":{"containers":[{"name":"c"}]}}`))
	if err != nil {
		t.Fatal(err)
	}
	if o.Namespace != "" {
		t.Fatalf("got namespace %q, want empty", o.Namespace)
	}
	o.SetNamespace("team")
	if got := o.Value.(*corev1.Pod).Namespace; got != "team" || o.Namespace != "team" {
		t.Fatalf("got %q/%q, want team", o.Namespace, got)
	}
	if got, want := o.Key(), "pods/team/a"; got != want {
		t.Fatalf("Key: got %q, want %q", got, want)
	}
}

func TestSetNamespaceIgnoresClusterScoped(t *testing.T) {
	o, err := Decode([]byte(`{"apiVersion":"node.k8s.io/v1","kind":"RuntimeClass","metadata":{"name":"kata"},"handler":"kata"}`))
	if err != nil {
		t.Fatal(err)
	}
	o.SetNamespace("team")
	if o.Namespace != "" {
		t.Fatalf("got %q, want empty", o.Namespace)
	}
}

// TestTrimmedRuntimeClassKeepsItsNodeSelector: the RuntimeClass plugin
// refuses a pod whose node selector contradicts its class's, so the
// trimmed class keeps the selector (and not its tolerations).
func TestTrimmedRuntimeClassKeepsItsNodeSelector(t *testing.T) {
	o, err := Decode([]byte(`{"apiVersion":"node.k8s.io/v1","kind":"RuntimeClass","metadata":{"name":"zoned","labels":{"a":"b"}},"handler":"runsc","scheduling":{"nodeSelector":{"zone":"b","tier":"x"},"tolerations":[{"key":"k","operator":"Exists"}]}}`))
	if err != nil {
		t.Fatal(err)
	}
	b, err := o.Trimmed()
	if err != nil {
		t.Fatal(err)
	}
	want := `{"apiVersion":"node.k8s.io/v1","kind":"RuntimeClass","metadata":{"name":"zoned"},"handler":"runsc","scheduling":{"nodeSelector":{"tier":"x","zone":"b"}}}`
	if string(b) != want {
		t.Fatalf("trimmed:\n got %s\nwant %s", b, want)
	}
	back, err := Decode(b)
	if err != nil {
		t.Fatal(err)
	}
	rc := back.Value.(*nodev1.RuntimeClass)
	if rc.Scheduling == nil || rc.Scheduling.NodeSelector["zone"] != "b" || rc.Scheduling.NodeSelector["tier"] != "x" {
		t.Fatalf("decoded scheduling: %#v", rc.Scheduling)
	}
	plain, err := Decode([]byte(`{"apiVersion":"node.k8s.io/v1","kind":"RuntimeClass","metadata":{"name":"runc"},"handler":"runc","scheduling":{"tolerations":[{"key":"k","operator":"Exists"}]}}`))
	if err != nil {
		t.Fatal(err)
	}
	if b, _ := plain.Trimmed(); strings.Contains(string(b), "scheduling") {
		t.Fatalf("a class selecting no nodes keeps its scheduling: %s", b)
	}
}

func TestTrimmedSamplesRoundTrip(t *testing.T) {
	for i, raw := range sampleObjects(t) {
		o, err := Decode(raw)
		if err != nil {
			t.Fatalf("object %d: %v", i, err)
		}
		b1, err := o.Trimmed()
		if err != nil {
			t.Fatalf("object %d: %v", i, err)
		}
		o2, err := Decode(b1)
		if err != nil {
			t.Fatalf("object %d: decode trimmed %s: %v", i, b1, err)
		}
		b2, err := o2.Trimmed()
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(b1, b2) {
			t.Errorf("object %d: trimming is not idempotent:\n got %s\nwant %s", i, b2, b1)
		}
		if o2.Key() != o.Key() || o2.UID != o.UID || o2.ResourceVersion != "" {
			t.Errorf("object %d: identity changed: got %+v, want %+v", i, o2, o)
		}
		if len(b1) > len(raw) {
			t.Errorf("object %d: trimmed is larger than the original: %d > %d", i, len(b1), len(raw))
		}
	}
}

const churnPod = `{"apiVersion":"v1","kind":"Pod","metadata":{"name":"web","namespace":"ns","uid":"u1","resourceVersion":"7",
 "labels":{"app":"web"},"creationTimestamp":"2026-01-01T00:00:00Z"},
 "spec":{"nodeName":"n1","containers":[{"name":"c","image":"img","resources":{"requests":{"cpu":"100m"},"limits":{"cpu":"200m"}}}]},
 "status":{"phase":"Running","qosClass":"Burstable","podIP":"10.0.0.1","startTime":"2026-01-01T00:00:01Z",
  "conditions":[{"type":"Ready","status":"True"}],
  "containerStatuses":[{"name":"c","ready":true,"restartCount":0,"image":"img","imageID":"x","state":{"running":{}}}]}}`

func TestTrimmedIgnoresStatusChurn(t *testing.T) {
	var base map[string]any
	if err := json.Unmarshal([]byte(churnPod), &base); err != nil {
		t.Fatal(err)
	}
	mutations := map[string]func(m map[string]any){
		"pod IP changes": func(m map[string]any) { status(m)["podIP"] = "10.9.9.9" },
		"resource version changes": func(m map[string]any) {
			m["metadata"].(map[string]any)["resourceVersion"] = "8"
		},
		"start time changes": func(m map[string]any) { status(m)["startTime"] = "2026-02-02T00:00:00Z" },
		"conditions change": func(m map[string]any) {
			status(m)["conditions"] = []any{map[string]any{"type": "Ready", "status": "False"}}
		},
		"restart count changes": func(m map[string]any) { status(m)["containerStatuses"].([]any)[0].(map[string]any)["restartCount"] = 3 },
		"labels change":         func(m map[string]any) { m["metadata"].(map[string]any)["labels"] = map[string]any{"app": "other"} },
		"managed fields are added": func(m map[string]any) {
			m["metadata"].(map[string]any)["managedFields"] = []any{map[string]any{"manager": "x"}}
		},
		"node name changes": func(m map[string]any) { m["spec"].(map[string]any)["nodeName"] = "n2" },
		"container image changes": func(m map[string]any) {
			m["spec"].(map[string]any)["containers"].([]any)[0].(map[string]any)["image"] = "img:2"
		},
		"host IP appears in status": func(m map[string]any) { status(m)["hostIP"] = "192.0.2.1" },
	}
	want := trimJSON(t, base)
	for name, mutate := range mutations {
		t.Run(name, func(t *testing.T) {
			var m map[string]any
			_ = json.Unmarshal([]byte(churnPod), &m)
			mutate(m)
			if got := trimJSON(t, m); !bytes.Equal(got, want) {
				t.Fatalf("got %s\nwant %s", got, want)
			}
		})
	}
}

func TestTrimmedKeepsAccountingFields(t *testing.T) {
	var base map[string]any
	_ = json.Unmarshal([]byte(churnPod), &base)
	before := trimJSON(t, base)
	mutations := map[string]func(m map[string]any){
		"phase": func(m map[string]any) { status(m)["phase"] = "Succeeded" },
		"cpu request": func(m map[string]any) {
			container(m)["resources"] = map[string]any{"requests": map[string]any{"cpu": "1"}}
		},
		"qos class": func(m map[string]any) { status(m)["qosClass"] = "BestEffort" },
		"priority":  func(m map[string]any) { m["spec"].(map[string]any)["priorityClassName"] = "high" },
		"deadline":  func(m map[string]any) { m["spec"].(map[string]any)["activeDeadlineSeconds"] = 5 },
		"deletion":  func(m map[string]any) { m["metadata"].(map[string]any)["deletionTimestamp"] = "2026-01-01T00:00:09Z" },
		"allocated resources": func(m map[string]any) {
			status(m)["containerStatuses"].([]any)[0].(map[string]any)["allocatedResources"] = map[string]any{"cpu": "300m"}
		},
		"resize infeasible": func(m map[string]any) {
			status(m)["conditions"] = []any{map[string]any{"type": "PodResizePending", "status": "True", "reason": "Infeasible"}}
		},
	}
	for name, mutate := range mutations {
		t.Run(name, func(t *testing.T) {
			var m map[string]any
			_ = json.Unmarshal([]byte(churnPod), &m)
			mutate(m)
			if got := trimJSON(t, m); bytes.Equal(got, before) {
				t.Fatalf("change lost by trimming: %s", got)
			}
		})
	}
}

func status(m map[string]any) map[string]any { return m["status"].(map[string]any) }
func container(m map[string]any) map[string]any {
	return m["spec"].(map[string]any)["containers"].([]any)[0].(map[string]any)
}

func trimJSON(t *testing.T, m map[string]any) []byte {
	t.Helper()
	raw, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	o, err := Decode(raw)
	if err != nil {
		t.Fatal(err)
	}
	b, err := o.Trimmed()
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// checkIdentity checks that the identity Decode gives raw, whichever way
// it read it, is what encoding/json reads into the header.
func checkIdentity(t *testing.T, raw []byte) {
	t.Helper()
	o, err := Decode(raw)
	if err != nil {
		return
	}
	var h header
	if err := json.Unmarshal(raw, &h); err != nil {
		t.Fatalf("Decode reads what encoding/json refuses (%v):\n%s", err, raw)
	}
	want, _, err := identify(&h)
	if err != nil {
		t.Fatalf("Decode reads what identify refuses (%v):\n%s", err, raw)
	}
	got := *o
	got.Value = nil
	if !reflect.DeepEqual(&got, want) {
		t.Fatalf("identities differ on\n%s\n got %#v\nwant %#v", raw, &got, want)
	}
}

func TestDecodeIdentityIsTheHeaders(t *testing.T) {
	for _, in := range edgeInputs {
		checkIdentity(t, []byte(in))
	}
	for _, raw := range sampleObjects(t) {
		checkIdentity(t, raw)
	}
}

func FuzzDecode(f *testing.F) {
	f.Add([]byte(churnPod))
	f.Add([]byte(`{"apiVersion":"v1","kind":"PersistentVolumeClaim","metadata":{"name":"a","annotations":{"volume.beta.kubernetes.io/storage-class":"gold"}},"spec":{"resources":{"requests":{"storage":"1Gi"}}}}`))
	f.Add([]byte(`{"apiVersion":"v1","kind":"Service","metadata":{"name":"a"},"spec":{"type":"NodePort","ports":[{"port":80}]}}`))
	f.Add([]byte(`{"apiVersion":"example.com/v1","kind":"Widget","metadata":{"generateName":"w-"}}`))
	f.Add([]byte(`[]`))
	f.Add([]byte(benchPod))
	for _, in := range edgeInputs {
		f.Add([]byte(in))
	}
	for _, in := range headInputs {
		f.Add([]byte(in))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		checkTrimmed(t, raw)
		checkIdentity(t, raw)
		checkHeadFirst(t, raw)
		o, err := Decode(raw)
		if err != nil {
			return
		}
		b, err := o.Trimmed()
		if err != nil {
			t.Fatalf("Trimmed of a decoded object failed: %v", err)
		}
		checkTrimmed(t, b)
		o2, err := Decode(b)
		if err != nil {
			t.Fatalf("trimmed bytes do not decode: %v\n%s", err, b)
		}
		b2, err := o2.Trimmed()
		if err != nil || !bytes.Equal(b, b2) {
			t.Fatalf("trimming is not idempotent: %v\n%s\n%s", err, b, b2)
		}
	})
}

// TestDecodeClaimWithoutSpec: a ResourceClaim keeps its typed value even
// when its JSON holds nothing the fast decoder skips (no spec at all).
func TestDecodeClaimWithoutSpec(t *testing.T) {
	o, err := Decode([]byte(`{"apiVersion":"resource.k8s.io/v1","kind":"ResourceClaim","metadata":{"name":"c","namespace":"team"}}`))
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := o.Value.(*resourcev1.ResourceClaim); !ok {
		t.Fatalf("value %T, want *v1.ResourceClaim", o.Value)
	}
}

// TestTrimmedDropsManagedFields: no reader keeps an object's
// managedFields, so a write that changes only them (a kubelet's status
// write, the quota controller's recount) trims to the same bytes.
func TestTrimmedDropsManagedFields(t *testing.T) {
	fields := func(at string) string {
		return `"managedFields":[{"manager":"kubectl","operation":"Update","time":"2026-11-23T00:12:11Z","fieldsType":"FieldsV1","fieldsV1":{"f:spec":{}}},` +
			`{"manager":"kubelet","operation":"Update","subresource":"status","time":"` + at + `"},{"manager":"x"}]`
	}
	for _, kind := range []string{
		`"apiVersion":"v1","kind":"Pod","metadata":{"name":"b","namespace":"ns",%s},"spec":{"containers":[{"name":"c","resources":{"requests":{"cpu":"200m"}}}]},"status":{"phase":"Failed"}`,
		`"apiVersion":"v1","kind":"ResourceQuota","metadata":{"name":"q","namespace":"ns",%s},"spec":{"hard":{"pods":"4"}},"status":{"used":{"pods":"1"}}`,
		`"apiVersion":"v1","kind":"Service","metadata":{"name":"s","namespace":"ns",%s},"spec":{"type":"ClusterIP"}`,
	} {
		var trimmed [][]byte
		for _, at := range []string{"2026-11-23T00:12:25Z", "2026-11-23T00:12:26Z"} {
			o, err := Decode([]byte("{" + fmt.Sprintf(kind, fields(at)) + "}"))
			if err != nil {
				t.Fatal(err)
			}
			b, err := o.Trimmed()
			if err != nil {
				t.Fatal(err)
			}
			if bytes.Contains(b, []byte("managedFields")) {
				t.Errorf("trimmed %s keeps managedFields", b)
			}
			trimmed = append(trimmed, b)
		}
		if !bytes.Equal(trimmed[0], trimmed[1]) {
			t.Errorf("a write of managedFields only changed the trimmed form: %s, then %s", trimmed[0], trimmed[1])
		}
	}
}

// TestWithResourceVersion puts the resourceVersion first in metadata,
// whether the metadata is empty or not.
func TestWithResourceVersion(t *testing.T) {
	for in, want := range map[string]string{
		`{"apiVersion":"v1","kind":"X","metadata":{"name":"a"}}`: `{"apiVersion":"v1","kind":"X","metadata":{"resourceVersion":"5","name":"a"}}`,
		`{"apiVersion":"v1","kind":"X","metadata":{}}`:           `{"apiVersion":"v1","kind":"X","metadata":{"resourceVersion":"5"}}`,
	} {
		if got := string(WithResourceVersion([]byte(in), "5")); got != want {
			t.Errorf("WithResourceVersion(%s) = %s, want %s", in, got, want)
		}
	}
}
