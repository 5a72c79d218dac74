package workload

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"strconv"
	"testing"

	"github.com/quotaledger/quota/ledger/object"
)

// Pod objects must be as large as real ones: 2 to 6 KiB.
const (
	podBytesMin = 2 << 10
	podBytesMax = 6 << 10
)

func generate(t *testing.T, cfg Config) ([]byte, Stats) {
	t.Helper()
	var buf bytes.Buffer
	st, err := Write(&buf, cfg)
	if err != nil {
		t.Fatalf("write: %v", err)
	}
	return buf.Bytes(), st
}

func TestSameSeedSameBytes(t *testing.T) {
	cfg := Config{Seed: 7, Namespaces: 13, Events: 3000, LiveObjectsMax: 200}
	a, _ := generate(t, cfg)
	b, _ := generate(t, cfg)
	if !bytes.Equal(a, b) {
		t.Fatalf("two runs of %+v differ: sha256 %x and %x", cfg, sha256.Sum256(a), sha256.Sum256(b))
	}
	cfg.Seed = 8
	c, _ := generate(t, cfg)
	if bytes.Equal(a, c) {
		t.Fatalf("seeds 7 and 8 gave the same %d bytes", len(a))
	}
}

func TestNextMatchesWrite(t *testing.T) {
	cfg := Config{Seed: 3, Events: 500}
	want, _ := generate(t, cfg)
	g, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	var got, line []byte
	for {
		var ok bool
		line, ok = g.Next(line[:0])
		if !ok {
			break
		}
		got = append(append(got, line...), '\n')
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("Next yielded %d bytes, Write wrote %d, and they differ", len(got), len(want))
	}
}

// watchEvent is the Kubernetes watch framing.
type watchEvent struct {
	Type   string          `json:"type"`
	Object json.RawMessage `json:"object"`
}

// TestEveryLineIsAWatchEvent decodes every line as the ledger's ingest
// would, and checks the properties a watch stream has: known types, object
// identity, resourceVersion strictly increasing, a deleted object never
// seen again, and real object sizes.
func TestEveryLineIsAWatchEvent(t *testing.T) {
	cfg := Config{Seed: 42, Namespaces: 20, Events: 8_000}
	data, st := generate(t, cfg)
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	var (
		lines   int
		lastRV  uint64
		deleted = map[string]bool{}
		exists  = map[string]bool{}
		kinds   = map[string]int{}
		types   = map[string]int{}
		phases  = map[string]int{}
	)
	for sc.Scan() {
		lines++
		var ev watchEvent
		dec := json.NewDecoder(bytes.NewReader(sc.Bytes()))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&ev); err != nil {
			t.Fatalf("line %d: not a watch event: %v", lines, err)
		}
		switch ev.Type {
		case Added, Modified, Deleted:
		default:
			t.Fatalf("line %d: type %q", lines, ev.Type)
		}
		types[ev.Type]++
		o, err := object.Decode(ev.Object)
		if err != nil {
			t.Fatalf("line %d: object.Decode: %v", lines, err)
		}
		if _, err := o.Trimmed(); err != nil {
			t.Fatalf("line %d: Trimmed: %v", lines, err)
		}
		if o.UID == "" || o.Name == "" {
			t.Fatalf("line %d: %s without uid or name", lines, o.Kind)
		}
		if o.Namespace == "" && !o.ClusterScoped() {
			t.Fatalf("line %d: namespaced %s %s without namespace", lines, o.Kind, o.Name)
		}
		var meta struct {
			Metadata struct {
				CreationTimestamp string `json:"creationTimestamp"`
			} `json:"metadata"`
			Status struct {
				Phase string `json:"phase"`
			} `json:"status"`
		}
		if err := json.Unmarshal(ev.Object, &meta); err != nil {
			t.Fatal(err)
		}
		if meta.Metadata.CreationTimestamp == "" {
			t.Fatalf("line %d: no creationTimestamp", lines)
		}
		rv, err := strconv.ParseUint(o.ResourceVersion, 10, 64)
		if err != nil || rv <= lastRV {
			t.Fatalf("line %d: resourceVersion %q after %d, want increasing", lines, o.ResourceVersion, lastRV)
		}
		lastRV = rv
		key := o.Key()
		if deleted[key] {
			t.Fatalf("line %d: %s %s after its deletion", lines, ev.Type, key)
		}
		switch ev.Type {
		case Added:
			if exists[key] {
				t.Fatalf("line %d: ADDED %s twice", lines, key)
			}
			exists[key] = true
		case Modified, Deleted:
			if !exists[key] {
				t.Fatalf("line %d: %s of %s before ADDED", lines, ev.Type, key)
			}
		}
		if ev.Type == Deleted {
			deleted[key] = true
			delete(exists, key)
		}
		kinds[o.Kind]++
		if o.Kind == "Pod" {
			phases[meta.Status.Phase]++
			if n := len(ev.Object); n < podBytesMin || n > podBytesMax {
				t.Errorf("line %d: pod of %d bytes, want %d..%d", lines, n, podBytesMin, podBytesMax)
			}
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	if lines != cfg.Events || st.Events != cfg.Events {
		t.Fatalf("got %d lines (stats %d), want %d", lines, st.Events, cfg.Events)
	}
	for _, k := range []string{"PriorityClass", "StorageClass", "ResourceQuota", "Pod", "PersistentVolumeClaim", "Service"} {
		if kinds[k] == 0 {
			t.Errorf("no %s in the stream", k)
		}
	}
	for _, p := range []string{"Pending", "Running", "Succeeded", "Failed"} {
		if phases[p] == 0 {
			t.Errorf("no pod event in phase %s", p)
		}
	}
	for _, typ := range []string{Added, Modified, Deleted} {
		if types[typ] == 0 {
			t.Errorf("no %s event", typ)
		}
	}
	if kinds["ResourceQuota"] != cfg.Namespaces*QuotasPerNamespace {
		t.Errorf("got %d quotas, want %d", kinds["ResourceQuota"], cfg.Namespaces*QuotasPerNamespace)
	}
	if st.PodBytesMin < podBytesMin || st.PodBytesMax > podBytesMax {
		t.Errorf("pod sizes %d..%d, want within %d..%d", st.PodBytesMin, st.PodBytesMax, podBytesMin, podBytesMax)
	}
}

func TestStreamOpensWithQuotas(t *testing.T) {
	cfg := Config{Namespaces: 3, Events: 40}
	data, _ := generate(t, cfg)
	lines := bytes.Split(bytes.TrimSpace(data), []byte("\n"))
	opening := clusterObjects + cfg.Namespaces*QuotasPerNamespace
	for i, l := range lines[:opening] {
		var ev watchEvent
		if err := json.Unmarshal(l, &ev); err != nil {
			t.Fatal(err)
		}
		o, err := object.Decode(ev.Object)
		if err != nil {
			t.Fatal(err)
		}
		want := "ResourceQuota"
		if i < clusterObjects {
			want = [...]string{"PriorityClass", "PriorityClass", "StorageClass", "StorageClass"}[i]
		}
		if o.Kind != want || ev.Type != Added {
			t.Errorf("line %d: %s %s, want ADDED %s", i+1, ev.Type, o.Kind, want)
		}
	}
}

func TestLiveObjectsMaxBoundsTheLiveSet(t *testing.T) {
	cfg := Config{Seed: 1, Namespaces: 5, Events: 30_000, LiveObjectsMax: 500}
	g, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	var line []byte
	for ok := true; ok; line, ok = g.Next(line[:0]) {
	}
	st := g.Stats()
	if st.LiveMax != cfg.LiveObjectsMax {
		t.Errorf("got at most %d live objects, want to reach the bound %d", st.LiveMax, cfg.LiveObjectsMax)
	}
	if st.Live > cfg.LiveObjectsMax {
		t.Errorf("got %d live objects at the end, want at most %d", st.Live, cfg.LiveObjectsMax)
	}
}

func TestConfigValidate(t *testing.T) {
	tests := []struct {
		name string
		cfg  Config
		ok   bool
	}{
		{"zero value takes defaults", Config{}, true},
		{"namespaces above the limit", Config{Namespaces: NamespacesMax + 1}, false},
		{"negative events", Config{Events: -1}, false},
		{"negative live bound", Config{LiveObjectsMax: -1}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.cfg.Validate()
			if got := err == nil; got != tt.ok {
				t.Fatalf("Validate() = %v, want ok=%v", err, tt.ok)
			}
			if err != nil && !errors.Is(err, ErrInvalidConfig) {
				t.Fatalf("got %v, want ErrInvalidConfig", err)
			}
		})
	}
}

// BenchmarkGenerate measures the generator alone, so that harness figures
// can be read knowing what producing the input costs.
func BenchmarkGenerate(b *testing.B) {
	g, err := New(Config{Seed: 1, Namespaces: 100, Events: EventsMax})
	if err != nil {
		b.Fatal(err)
	}
	var line []byte
	var n int64
	b.ReportAllocs()
	for b.Loop() {
		line, _ = g.Next(line[:0])
		n += int64(len(line))
	}
	b.SetBytes(n / int64(max(b.N, 1)))
}
