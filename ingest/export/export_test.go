package export

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/rest"

	"github.com/quotaledger/quota/ledger"
	"github.com/quotaledger/quota/ledger/ledgertest"
	"github.com/quotaledger/quota/ledger/object"
)

// TestCheckpointsRoundTrip writes a resource's checkpoint into the bucket
// of an embedded JetStream and reads it back; a resource without one
// reads as none.
func TestCheckpointsRoundTrip(t *testing.T) {
	_, _, js := ledgertest.StartServer(t)
	ctx := context.Background()
	cp, err := openCheckpoints(ctx, js, DefaultCheckpointBucket, 1)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok, err := cp.get(ctx, "pods"); err != nil || ok {
		t.Fatalf("get before put: ok %v, err %v; want none", ok, err)
	}
	for _, rv := range []string{"100", "250"} {
		if err := cp.put(ctx, "widgets.example.com", rv); err != nil {
			t.Fatal(err)
		}
	}
	got, ok, err := cp.get(ctx, "widgets.example.com")
	if err != nil || !ok {
		t.Fatalf("get: ok %v, err %v", ok, err)
	}
	if got.ResourceVersion != "250" {
		t.Errorf("resourceVersion = %q, want the last put, 250", got.ResourceVersion)
	}
	if err := cp.delete(ctx, "pods"); err != nil {
		t.Errorf("deleting a checkpoint that does not exist: %v", err)
	}
	// A second opening (another replica) sees the same bucket.
	again, err := openCheckpoints(ctx, js, DefaultCheckpointBucket, 1)
	if err != nil {
		t.Fatal(err)
	}
	if got, _, _ := again.get(ctx, "widgets.example.com"); got.ResourceVersion != "250" {
		t.Errorf("another opening reads %q, want 250", got.ResourceVersion)
	}
	if err := again.delete(ctx, "widgets.example.com"); err != nil {
		t.Fatal(err)
	}
	if _, ok, err := cp.get(ctx, "widgets.example.com"); err != nil || ok {
		t.Errorf("get after delete: ok %v, err %v; want none", ok, err)
	}
}

// TestWindowHoldsBack: a full window makes acquire wait until a slot is
// released, and a stop ends the wait with ErrStopped; nothing is dropped.
func TestWindowHoldsBack(t *testing.T) {
	w := newWindow(2, newMetrics())
	ctx := context.Background()
	for range 2 {
		if err := w.acquire(ctx); err != nil {
			t.Fatal(err)
		}
	}
	acquired := make(chan error, 1)
	go func() { acquired <- w.acquire(ctx) }()
	select {
	case err := <-acquired:
		t.Fatalf("acquire on a full window returned %v, want it to wait", err)
	case <-time.After(100 * time.Millisecond):
	}
	w.release(1)
	select {
	case err := <-acquired:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("acquire still waits after a release")
	}
	stop, cancel := context.WithCancel(ctx)
	go func() { acquired <- w.acquire(stop) }()
	cancel()
	if err := <-acquired; !errors.Is(err, ErrStopped) {
		t.Errorf("acquire on a full window, stopped: %v, want ErrStopped", err)
	}
}

// TestTrim: an object as the API server lists it (no apiVersion or kind)
// or as a metadata-only read sends it (a PartialObjectMetadata) becomes
// the ledger's trimmed form of the resource's kind, with its
// resourceVersion, and a Secret's data does not survive.
func TestTrim(t *testing.T) {
	cases := []struct {
		name, raw, apiVersion, kind string
		want                        []string
		absent                      []string
	}{
		{
			name:       "a listed pod",
			raw:        `{"metadata":{"name":"p","namespace":"a","uid":"u1","resourceVersion":"42","labels":{"x":"y"}},"spec":{"containers":[{"name":"c","image":"i","resources":{"requests":{"cpu":"250m"}}}]},"status":{"phase":"Running"}}`,
			apiVersion: "v1", kind: "Pod",
			want:   []string{`"kind":"Pod"`, `"resourceVersion":"42"`, `"cpu":"250m"`},
			absent: []string{`"image"`},
		},
		{
			name:       "a secret read as metadata only",
			raw:        `{"kind":"PartialObjectMetadata","apiVersion":"meta.k8s.io/v1","metadata":{"name":"s","namespace":"a","uid":"u2","resourceVersion":"7","annotations":{"kubectl.kubernetes.io/last-applied-configuration":"{\"data\":{\"password\":\"aHVudGVyMg==\"}}"}}}`,
			apiVersion: "v1", kind: "Secret",
			want:   []string{`"kind":"Secret"`, `"apiVersion":"v1"`, `"resourceVersion":"7"`},
			absent: []string{"PartialObjectMetadata", "last-applied", "aHVudGVyMg"},
		},
		{
			name:       "a custom resource",
			raw:        `{"apiVersion":"example.com/v1","kind":"Widget","metadata":{"name":"w","namespace":"a","uid":"u3","resourceVersion":"9"},"spec":{"size":3}}`,
			apiVersion: "example.com/v1", kind: "Widget",
			want: []string{`"kind":"Widget"`, `"resourceVersion":"9"`},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			it, err := trim([]byte(tc.raw), tc.apiVersion, tc.kind)
			if err != nil {
				t.Fatal(err)
			}
			if !json.Valid(it.trimmed) {
				t.Fatalf("not JSON: %s", it.trimmed)
			}
			for _, w := range tc.want {
				if !strings.Contains(string(it.trimmed), w) {
					t.Errorf("%s lacks %s", it.trimmed, w)
				}
			}
			for _, a := range tc.absent {
				if strings.Contains(string(it.trimmed), a) {
					t.Errorf("%s holds %s", it.trimmed, a)
				}
			}
			o, err := object.Decode(it.trimmed)
			if err != nil {
				t.Fatalf("the ledger cannot read the trimmed form: %v", err)
			}
			if o.ResourceVersion != it.ResourceVersion || o.Name != it.Name || o.Namespace != it.Namespace {
				t.Errorf("decoded %s/%s rv %s, item %s/%s rv %s", o.Namespace, o.Name, o.ResourceVersion, it.Namespace, it.Name, it.ResourceVersion)
			}
		})
	}
}

// TestConfigValidate reports every problem at once.
func TestConfigValidate(t *testing.T) {
	err := Config{InFlightMax: -1, BatchSizeMax: 1 << 30, DiscoveryInterval: time.Millisecond, LeaseDuration: time.Second, RenewDeadline: 2 * time.Second}.Validate()
	if !errors.Is(err, ErrInvalidConfig) {
		t.Fatalf("err = %v, want ErrInvalidConfig", err)
	}
	for _, want := range []string{"no Kubernetes config", "no ledger Stream", "no JetStream", "InFlightMax -1", "BatchSizeMax", "DiscoveryInterval", "leader election timings"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("%v lacks %q", err, want)
		}
	}
	_, _, js := ledgertest.StartServer(t)
	ok := Config{Kubernetes: &rest.Config{Host: "https://127.0.0.1:1"}, Stream: ledgertest.OpenStream(t, js), JetStream: js, Identity: "x"}
	if err := ok.Validate(); err != nil {
		t.Errorf("a complete config: %v", err)
	}
}

// TestStreamStore drives a resource's store as the Reflector would, on an
// embedded JetStream: a list becomes a resync of every namespace, watch
// events are appended in order, and the checkpoint moves to a bookmark's
// resourceVersion only once every event before it is in the log.
func TestStreamStore(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	_, s, ledgerStream, cp := configMapStream(t, ctx, Config{InFlightMax: 2})
	go s.appendLoop(ctx)
	cm := func(ns, name, rv string) *item {
		it, err := trim([]byte(`{"metadata":{"name":"`+name+`","namespace":"`+ns+`","uid":"u-`+name+`","resourceVersion":"`+rv+`"}}`), "v1", "ConfigMap")
		if err != nil {
			t.Fatal(err)
		}
		return it
	}
	if err := s.Replace([]any{cm("a", "one", "3"), cm("b", "two", "4")}, "5"); err != nil {
		t.Fatal(err)
	}
	waitCheckpoint(t, cp, "configmaps", "5")
	// More events than the window holds: enqueue waits for appends.
	for i, name := range []string{"three", "four", "five"} {
		if err := s.Add(cm("a", name, fmt.Sprint(6+i))); err != nil {
			t.Fatal(err)
		}
		s.UpdateResourceVersion(fmt.Sprint(6 + i))
	}
	if err := s.Delete(cm("a", "one", "9")); err != nil {
		t.Fatal(err)
	}
	s.UpdateResourceVersion("9")
	if err := s.Bookmark("20"); err != nil {
		t.Fatal(err)
	}
	waitCheckpoint(t, cp, "configmaps", "20")

	var got []string
	for _, r := range ledgertest.ReadAll(t, ledgerStream, 1) {
		got = append(got, fmt.Sprintf("%s %s/%s", r.Event.Type, r.Event.Namespace, r.Event.Name))
	}
	want := []string{"resync a/", "resync b/", "upsert a/three", "upsert a/four", "upsert a/five", "delete a/one"}
	if strings.Join(got, ", ") != strings.Join(want, ", ") {
		t.Errorf("log = %v, want %v", got, want)
	}
}

// configMapStream builds an Exporter of cfg (its JetStream and Stream
// those of a new embedded server) and the stream of its configmaps, as
// the Reflector's store, for tests that drive the store by hand.
func configMapStream(t *testing.T, ctx context.Context, cfg Config) (*Exporter, *stream, *ledger.Stream, *checkpoints) {
	t.Helper()
	_, _, js := ledgertest.StartServer(t)
	ledgerStream := ledgertest.OpenStream(t, js)
	cp, err := openCheckpoints(ctx, js, DefaultCheckpointBucket, 1)
	if err != nil {
		t.Fatal(err)
	}
	cfg.JetStream, cfg.Stream = js, ledgerStream
	cfg = cfg.withDefaults()
	m := newMetrics()
	x := &Exporter{cfg: cfg, log: cfg.Log, stream: ledgerStream, metrics: m, window: newWindow(cfg.InFlightMax, m), checkpoints: cp, streams: map[string]*running{}}
	res := resource{GVR: schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}, Kind: "ConfigMap", Namespaced: true, MetadataOnly: true}
	s, err := newStream(ctx, x, res, "", ReasonInitial)
	if err != nil {
		t.Fatal(err)
	}
	return x, s, ledgerStream, cp
}

// waitCheckpoint polls until resource's checkpoint is rv.
func waitCheckpoint(t *testing.T, cp *checkpoints, resource, rv string) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		got, _, err := cp.get(context.Background(), resource)
		if err == nil && got.ResourceVersion == rv {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("checkpoint of %s = %q (%v), want %s", resource, got.ResourceVersion, err, rv)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
