package export

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/runtime/serializer/protobuf"
	"k8s.io/apimachinery/pkg/runtime/serializer/streaming"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes/scheme"
	restwatch "k8s.io/client-go/rest/watch"

	"github.com/quotaledger/quota/ledger/object"
)

// protoMessage is what the k8s.io/api types and PartialObjectMetadata
// implement: their protobuf encoding, as the API server writes it.
type protoMessage interface {
	runtime.Object
	Marshal() ([]byte, error)
	Unmarshal([]byte) error
}

// overProtobuf is obj as the exporter gets it over protobuf: encoded and
// decoded into a new value of its type.
func overProtobuf(t *testing.T, obj protoMessage) runtime.Object {
	t.Helper()
	b, err := obj.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	back := reflect.New(reflect.TypeOf(obj).Elem()).Interface().(protoMessage)
	if err := back.Unmarshal(b); err != nil {
		t.Fatal(err)
	}
	return back
}

// recordedObjects are the objects of every event and cluster file
// recorded from real API servers (testdata/recorded, testdata/samples).
func recordedObjects(t *testing.T) []json.RawMessage {
	t.Helper()
	var files []string
	for _, pattern := range []string{"../../testdata/recorded/*/*.jsonl", "../../testdata/samples/*/*.jsonl"} {
		m, err := filepath.Glob(pattern)
		if err != nil {
			t.Fatal(err)
		}
		files = append(files, m...)
	}
	var out []json.RawMessage
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		sc := bufio.NewScanner(bytes.NewReader(b))
		sc.Buffer(nil, object.SizeMax)
		for sc.Scan() {
			var ev struct {
				Object json.RawMessage `json:"object"`
			}
			if json.Unmarshal(sc.Bytes(), &ev) != nil {
				continue
			}
			if ev.Object == nil {
				ev.Object = bytes.Clone(sc.Bytes())
			}
			out = append(out, ev.Object)
		}
		if err := sc.Err(); err != nil {
			t.Fatalf("%s: %v", f, err)
		}
	}
	return out
}

// TestTrimTypedAgrees reads every object recorded from real API servers
// the ways the exporter may receive it, and wants the same bytes from
// each, which the ledger keys and compares objects by: a kind read whole
// as JSON (trim) and as protobuf into its k8s.io/api type (trimTyped);
// any other built-in kind, read as metadata only, as JSON and as
// protobuf PartialObjectMetadata.
func TestTrimTypedAgrees(t *testing.T) {
	whole, meta := map[string]int{}, 0
	for _, raw := range recordedObjects(t) {
		obj, gvk, err := scheme.Codecs.UniversalDeserializer().Decode(raw, nil, nil)
		if err != nil {
			continue // a custom resource, or not an object
		}
		apiVersion, kind := gvk.GroupVersion().String(), gvk.Kind
		if _, ok := protobufKinds[*gvk]; ok {
			want, err := trim(raw, apiVersion, kind)
			if err != nil {
				t.Fatal(err)
			}
			got, err := trimTyped(overProtobuf(t, obj.(protoMessage)), apiVersion, kind)
			if err != nil {
				t.Fatal(err)
			}
			sameItem(t, "whole", got, want)
			whole[kind]++
			continue
		}
		m := obj.(metav1.Object)
		pom := &metav1.PartialObjectMetadata{TypeMeta: metav1.TypeMeta{APIVersion: "meta.k8s.io/v1", Kind: "PartialObjectMetadata"}}
		pom.ObjectMeta = *m.(interface{ GetObjectMeta() metav1.Object }).GetObjectMeta().(*metav1.ObjectMeta)
		pomJSON, err := json.Marshal(pom)
		if err != nil {
			t.Fatal(err)
		}
		want, err := trim(pomJSON, apiVersion, kind)
		if err != nil {
			t.Fatal(err)
		}
		got, err := trimTyped(overProtobuf(t, pom), apiVersion, kind)
		if err != nil {
			t.Fatal(err)
		}
		sameItem(t, "metadata only", got, want)
		meta++
	}
	for gvk, typed := range protobufKinds {
		if typed && whole[gvk.Kind] == 0 {
			t.Errorf("no recorded %s compared", gvk.Kind)
		}
	}
	if whole["Pod"] < 100 || meta < 50 {
		t.Errorf("compared %v objects whole and %d as metadata, want at least 100 pods and 50 others", whole, meta)
	}
	t.Logf("compared %v whole, %d as metadata", whole, meta)
}

func sameItem(t *testing.T, how string, got, want *item) {
	t.Helper()
	if !bytes.Equal(got.trimmed, want.trimmed) {
		t.Errorf("%s %s/%s: over protobuf\n%s\nover JSON\n%s", how, want.Namespace, want.Name, got.trimmed, want.trimmed)
	}
	if got.ObjectMeta.String() != want.ObjectMeta.String() || !got.written.Equal(want.written) {
		t.Errorf("%s %s/%s: identity over protobuf %v written %v, over JSON %v written %v", how, want.Namespace, want.Name,
			got.ObjectMeta, got.written, want.ObjectMeta, want.written)
	}
}

// TestTrimTypedEdges covers what the recorded objects may not: a pod
// being deleted, and an object without a name, which goes to ingest as
// it came so that ingest rejects it with its reason.
func TestTrimTypedEdges(t *testing.T) {
	deleting := []byte(`{"apiVersion":"v1","kind":"Pod","metadata":{"generateName":"web-","namespace":"a","uid":"u1","resourceVersion":"7",` +
		`"deletionTimestamp":"2026-11-28T10:00:00Z","deletionGracePeriodSeconds":30,"creationTimestamp":"2026-11-28T09:00:00Z"},` +
		`"spec":{"activeDeadlineSeconds":60,"containers":[{"name":"c","image":"x","resources":{"requests":{"cpu":"1500m"}}}]},` +
		`"status":{"phase":"Running","qosClass":"Burstable"}}`)
	var pod corev1.Pod
	if err := json.Unmarshal(deleting, &pod); err != nil {
		t.Fatal(err)
	}
	want, err := trim(deleting, "v1", "Pod")
	if err != nil {
		t.Fatal(err)
	}
	got, err := trimTyped(overProtobuf(t, &pod), "v1", "Pod")
	if err != nil {
		t.Fatal(err)
	}
	sameItem(t, "deleting", got, want)

	pod.Name, pod.GenerateName = "", ""
	got, err = trimTyped(&pod, "v1", "Pod")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := object.Decode(got.trimmed); !errors.Is(err, object.ErrMissingName) {
		t.Errorf("a pod without a name: %s decodes with %v, want ErrMissingName", got.trimmed, err)
	}
}

// TestProtobufKinds checks the table against ledger/object: a kind it
// marks typed decodes into a typed value of the type the API server's
// protobuf gives, and one it does not decodes into none.
func TestProtobufKinds(t *testing.T) {
	for gvk, typed := range protobufKinds {
		raw := `{"apiVersion":"` + gvk.GroupVersion().String() + `","kind":"` + gvk.Kind + `","metadata":{"name":"x","namespace":"a"}}`
		o, err := object.Decode([]byte(raw))
		if err != nil {
			t.Fatalf("%s: %v", gvk, err)
		}
		want, err := scheme.Scheme.New(gvk)
		if err != nil {
			t.Fatalf("%s: not in client-go's scheme: %v", gvk, err)
		}
		switch {
		case typed && reflect.TypeOf(o.Value) != reflect.TypeOf(want):
			t.Errorf("%s: ledger/object keeps a %T, protobuf gives a %T", gvk, o.Value, want)
		case !typed && o.Value != nil:
			t.Errorf("%s: ledger/object keeps a %T, the table says it keeps none", gvk, o.Value)
		}
	}
}

// TestResourceFormat: built-in kinds are read as protobuf, the others as
// JSON.
func TestResourceFormat(t *testing.T) {
	for _, tc := range []struct {
		res  resource
		want int
	}{
		{resource{GVR: schema.GroupVersionResource{Version: "v1", Resource: "pods"}, Kind: "Pod"}, readTyped},
		{resource{GVR: schema.GroupVersionResource{Group: "resource.k8s.io", Version: "v1beta2", Resource: "resourceclaims"}, Kind: "ResourceClaim"}, readJSON},
		{resource{GVR: schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}, Kind: "ConfigMap", MetadataOnly: true}, readMetadata},
		{resource{GVR: schema.GroupVersionResource{Group: "coordination.k8s.io", Version: "v1", Resource: "leases"}, Kind: "Lease", MetadataOnly: true}, readMetadata},
		{resource{GVR: schema.GroupVersionResource{Group: "example.com", Version: "v1", Resource: "widgets"}, Kind: "Widget", MetadataOnly: true}, readJSON},
	} {
		if got := tc.res.format(); got != tc.want {
			t.Errorf("%s: format %d, want %d", tc.res.Name(), got, tc.want)
		}
	}
}

// TestTypedWatch decodes a protobuf watch response as client-go does (a
// length-delimited stream of WatchEvents) and hands its events to
// typedWatch: an object trimmed into an item, a bookmark carrying its
// resourceVersion, and a 410 Gone that ends the watch and is reported as
// expired.
func TestTypedWatch(t *testing.T) {
	pb := protobuf.NewSerializer(scheme.Scheme, scheme.Scheme)
	raw := protobuf.NewRawSerializer(scheme.Scheme, scheme.Scheme)
	var body bytes.Buffer
	enc := restwatch.NewEncoder(streaming.NewEncoder(protobuf.LengthDelimitedFramer.NewFrameWriter(&body), raw), pb)
	pod := &corev1.Pod{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Pod"},
		ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "a", UID: "u1", ResourceVersion: "10"},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "c"}}}}
	bookmark := &corev1.Pod{TypeMeta: pod.TypeMeta, ObjectMeta: metav1.ObjectMeta{ResourceVersion: "12"}}
	gone := &metav1.Status{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Status"}, Status: metav1.StatusFailure, Reason: metav1.StatusReasonExpired, Code: 410}
	for _, ev := range []watch.Event{{Type: watch.Added, Object: pod}, {Type: watch.Bookmark, Object: bookmark}, {Type: watch.Error, Object: gone}, {Type: watch.Added, Object: pod}} {
		if err := enc.Encode(&ev); err != nil {
			t.Fatal(err)
		}
	}
	frames := protobuf.LengthDelimitedFramer.NewFrameReader(io.NopCloser(&body))
	in := watch.NewStreamWatcher(restwatch.NewDecoder(streaming.NewDecoder(frames, raw), pb), nil)
	rec := &recorder{}
	lw := &listWatch{res: resource{GVR: schema.GroupVersionResource{Version: "v1", Resource: "pods"}, Kind: "Pod", Namespaced: true}, events: rec}
	w := newTypedWatch(lw, in)
	var got []watch.Event
	for ev := range w.ResultChan() {
		got = append(got, ev)
	}
	if len(got) != 3 {
		t.Fatalf("%d events, want 3 (the watch ends at its error): %v", len(got), got)
	}
	if it, ok := got[0].Object.(*item); !ok || got[0].Type != watch.Added || it.Name != "p" || it.ResourceVersion != "10" ||
		!bytes.Contains(it.trimmed, []byte(`"kind":"Pod"`)) || !bytes.Contains(it.trimmed, []byte(`"resourceVersion":"10"`)) {
		t.Errorf("first event = %v %+v, want ADDED of Pod a/p at 10", got[0].Type, got[0].Object)
	}
	if it, ok := got[1].Object.(*item); !ok || got[1].Type != watch.Bookmark || it.ResourceVersion != "12" {
		t.Errorf("second event = %v %+v, want a BOOKMARK at 12", got[1].Type, got[1].Object)
	}
	if got[2].Type != watch.Error {
		t.Fatalf("third event = %v, want ERROR", got[2].Type)
	}
	if len(rec.errors) != 1 || !isGone(rec.errors[0]) {
		t.Errorf("reported errors %+v, want one 410 Gone", rec.errors)
	}
	w.Stop()
}
