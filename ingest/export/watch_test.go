package export

import (
	"io"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"
)

// recorder notes what a listWatch tells its stream.
type recorder struct {
	errors []*metav1.Status
}

func (r *recorder) listing() string                  { return "" }
func (r *recorder) listFailed(error)                 {}
func (r *recorder) watching()                        {}
func (r *recorder) watchError(status *metav1.Status) { r.errors = append(r.errors, status) }

// TestRawWatch decodes a watch response as the API server streams it: an
// object trimmed into an item of the resource's kind, a bookmark carrying
// only its resourceVersion, and a 410 Gone that ends the watch and is
// reported as expired.
func TestRawWatch(t *testing.T) {
	frames := strings.Join([]string{
		`{"type":"ADDED","object":{"kind":"PartialObjectMetadata","apiVersion":"meta.k8s.io/v1","metadata":{"name":"s","namespace":"a","uid":"u1","resourceVersion":"10"}}}`,
		`{"type":"BOOKMARK","object":{"kind":"PartialObjectMetadata","apiVersion":"meta.k8s.io/v1","metadata":{"resourceVersion":"12","annotations":{"k8s.io/initial-events-end":"true"}}}}`,
		`{"type":"ERROR","object":{"kind":"Status","apiVersion":"v1","status":"Failure","message":"too old resource version: 5 (12)","reason":"Expired","code":410}}`,
		`{"type":"ADDED","object":{"metadata":{"name":"never","namespace":"a","resourceVersion":"13"}}}`,
	}, "\n")
	rec := &recorder{}
	lw := &listWatch{res: resource{GVR: schema.GroupVersionResource{Version: "v1", Resource: "secrets"}, Kind: "Secret", Namespaced: true, MetadataOnly: true}, events: rec}
	w := &rawWatch{lw: lw, body: io.NopCloser(strings.NewReader(frames)), result: make(chan watch.Event), stop: make(chan struct{})}
	go w.run()
	var got []watch.Event
	for ev := range w.ResultChan() {
		got = append(got, ev)
	}
	if len(got) != 3 {
		t.Fatalf("%d events, want 3 (the watch ends at its error): %v", len(got), got)
	}
	if it, ok := got[0].Object.(*item); !ok || got[0].Type != watch.Added || it.Name != "s" || it.ResourceVersion != "10" || !strings.Contains(string(it.trimmed), `"kind":"Secret"`) {
		t.Errorf("first event = %v %+v, want ADDED of Secret a/s at 10", got[0].Type, got[0].Object)
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
}
