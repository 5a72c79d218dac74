package object

import (
	"reflect"
	"testing"
)

// headInputs are objects whose leading keys do not tell their kind, or
// tell another one than encoding/json reads: the keys repeated, in
// another case, escaped, after the rest, or an object that does not
// decode as the kind its head names.
var headInputs = []string{
	`{"kind":"Pod","apiVersion":"v1","metadata":{"name":"p","namespace":"ns"},"spec":{"containers":[{"name":"c","resources":{"requests":{"cpu":"1"}}}]}}`,
	`{"metadata":{"name":"p","namespace":"ns"},"spec":{"containers":[]},"kind":"Pod","apiVersion":"v1"}`,
	`{"kind":"Pod","apiVersion":"v1","metadata":{"name":"s","namespace":"ns"},"spec":{"type":"NodePort"},"kind":"Service"}`,
	`{"kind":"Pod","apiVersion":"v1","metadata":{"name":"p","namespace":"ns"},"Kind":"Pod"}`,
	`{"kind":"Pod","apiVersion":"v1","metadata":{"name":"p","namespace":"ns"},"KIND":"Service","spec":{"type":"ClusterIP"}}`,
	`{"kind":"Pod","apiVersion":"v1","metadata":{"name":"p","namespace":"ns"},"apiVersion":"v2"}`,
	`{"kind":"Pod","apiVersion":"v1","metadata":{"name":"p","namespace":"ns"},"apiVersion":"v1"}`,
	`{"kind":"Pod","\u0061piVersion":"v1","metadata":{"name":"p","namespace":"ns"}}`,
	`{"kind":"Pod","apiVersion":"v1","metadata":{"name":"p","namespace":"ns"},"spec":{"containers":"none"}}`,
	`{"kind":"Pod","apiVersion":"v1","metadata":{"name":"p","namespace":"ns"},"spec":{"type":"NodePort"},"kind":"Service","spec":{"containers":[]}}`,
	`{"kind":"Service","apiVersion":"v1","metadata":{"name":"p","namespace":"ns"},"spec":{"containers":[]},"kind":"Pod"}`,
	`{"kind":"Pod","apiVersion":"v1","metadata":{"name":"p","namespace":"ns"}} trailing`,
	`{"kind":"Pod","apiVersion":"v1","metadata":{"name":"p","namespace":"ns"},"spec":{"containers":[}`,
	`{"kind":"Pod","apiVersion":"v1","metadata":{"namespace":"ns"}}`,
	`{"kind":"ConfigMap","apiVersion":"v1","metadata":{"name":"c","namespace":"ns"},"kind":"Pod"}`,
	`{"kind":"Pod","apiVersion":"v1","kind":"PersistentVolumeClaim","metadata":{"name":"c","namespace":"ns"},"spec":{"resources":{"requests":{"storage":"1Gi"}}}}`,
	`{"kind":"Pod","apiVersion":"v1","metadata":{"name":"p","namespace":"ns"},"kind":null}`,
	`{"kind":"","apiVersion":"v1","metadata":{"name":"p"}}`,
}

// checkHeadFirst decodes raw the two ways decodeTyped can, from its
// leading keys first and from all of them only, and fails where the
// objects, their typed values or the errors differ.
func checkHeadFirst(t *testing.T, raw []byte) {
	t.Helper()
	defer func() { headFirst = true }()
	headFirst = false
	want, wantErr := decodeTyped(raw)
	headFirst = true
	got, gotErr := decodeTyped(raw)
	if (gotErr == nil) != (wantErr == nil) || gotErr != nil && gotErr.Error() != wantErr.Error() {
		t.Fatalf("decoding from the leading keys errs %v, from all of them %v, on\n%s", gotErr, wantErr, raw)
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("decoding from the leading keys differs on\n%s\n got %#v\nwant %#v", raw, got, want)
	}
}

// TestDecodeFromTheLeadingKeys: decodeTyped reads the same object, typed
// value and error from an object's leading keys as from all of them, on
// the recorded samples, the trimmed readers' edge inputs and objects
// whose head does not tell their kind.
func TestDecodeFromTheLeadingKeys(t *testing.T) {
	inputs := append(append([]string{}, headInputs...), edgeInputs...)
	for _, in := range inputs {
		checkHeadFirst(t, []byte(in))
	}
	for _, raw := range sampleObjects(t) {
		checkHeadFirst(t, raw)
	}
	// The head decides only where the value agrees: a head naming a Pod
	// before a later kind of Service decodes a Service.
	o, err := decodeTyped([]byte(headInputs[2]))
	if err != nil || o.Kind != "Service" || o.Resource != "services" {
		t.Fatalf("a repeated kind: %+v, %v; want the last, Service", o, err)
	}
}
