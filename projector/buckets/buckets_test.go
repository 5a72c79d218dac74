package buckets

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"reflect"
	"sort"
	"strings"
	"sync"
	"testing"
)

// TestSnapshotsNeverChange writes a bucket from one goroutine while others
// read snapshots taken along the way: each snapshot reads exactly the keys
// written before it, in order, however the set changes after it.
func TestSnapshotsNeverChange(t *testing.T) {
	s := New()
	b, err := s.CreateBucketIfNotExists([]byte("objects"))
	if err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(1, 2))
	want := map[string]string{}
	var wg sync.WaitGroup
	errs := make(chan error, 64)
	for round := range 64 {
		for range 200 {
			k := fmt.Sprintf("k%05d", rng.IntN(5000))
			if rng.IntN(4) == 0 {
				delete(want, k)
				if err := b.Delete([]byte(k)); err != nil {
					t.Fatal(err)
				}
				continue
			}
			v := fmt.Sprintf("v%d", round)
			want[k] = v
			if err := b.Put([]byte(k), []byte(v)); err != nil {
				t.Fatal(err)
			}
		}
		snap := s.Snapshot()
		expect := make(map[string]string, len(want))
		for k, v := range want {
			expect[k] = v
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs <- checkSnapshot(snap, expect)
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
}

// checkSnapshot reads snap's bucket twice, by cursor and by Get, against
// want.
func checkSnapshot(snap *Set, want map[string]string) error {
	b := snap.Bucket([]byte("objects"))
	keys := make([]string, 0, len(want))
	for k := range want {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	c := b.Cursor()
	i := 0
	for k, v := c.First(); k != nil; k, v = c.Next() {
		if i >= len(keys) || string(k) != keys[i] || string(v) != want[keys[i]] {
			return fmt.Errorf("key %d: got %s=%s", i, k, v)
		}
		i++
	}
	if i != len(keys) || b.Len() != len(keys) {
		return fmt.Errorf("got %d keys (Len %d), want %d", i, b.Len(), len(keys))
	}
	for _, k := range keys {
		if got := b.Get([]byte(k)); string(got) != want[k] {
			return fmt.Errorf("Get %s: got %q, want %q", k, got, want[k])
		}
	}
	if err := b.Put([]byte("x"), nil); !errors.Is(err, ErrReadOnly) {
		return fmt.Errorf("a write to a snapshot: got %v, want ErrReadOnly", err)
	}
	return nil
}

// TestCursorSeeksAsBbolt checks the cursor's moves at and past the ends.
func TestCursorSeeksAsBbolt(t *testing.T) {
	s := New()
	b, _ := s.CreateBucketIfNotExists([]byte("b"))
	for _, k := range []string{"a\x00x", "a\x00y", "b\x00x"} {
		if err := b.Put([]byte(k), []byte(k)); err != nil {
			t.Fatal(err)
		}
	}
	c := b.Cursor()
	if k, _ := c.Seek([]byte("a\x00")); string(k) != "a\x00x" {
		t.Errorf("Seek a\\0: %q", k)
	}
	if k, _ := c.Seek([]byte("a\x01")); string(k) != "b\x00x" {
		t.Errorf("Seek a\\1: %q", k)
	}
	if k, _ := c.Next(); k != nil {
		t.Errorf("Next past the end: %q", k)
	}
	if k, _ := c.Seek([]byte("c")); k != nil {
		t.Errorf("Seek past the end: %q", k)
	}
	if k, _ := c.Last(); string(k) != "b\x00x" {
		t.Errorf("Last: %q", k)
	}
	if k, _ := c.Prev(); string(k) != "a\x00y" {
		t.Errorf("Prev: %q", k)
	}
	if s.Bucket([]byte("none")) != nil {
		t.Error("a bucket that was never made exists")
	}
	if err := b.Delete([]byte("zz")); err != nil {
		t.Errorf("deleting a missing key: %v", err)
	}
}

// upper is a codec whose decoded values are the upper-case strings of
// their bytes, and whose encoding is the lower case: a codec bucket
// visibly holds the decoded form.
var upper = &Codec{
	Encode: func(v any) []byte { return []byte(strings.ToLower(v.(string))) },
	Decode: func(b []byte) (any, error) {
		if len(b) == 0 {
			return nil, errors.New("empty")
		}
		return strings.ToUpper(string(b)), nil
	},
}

// TestCodecBucketKeepsValuesDecoded: Put decodes, Value and AscendValues
// give the decoded values, Get, ForEach and cursors their encoding; a
// value that does not decode is refused and leaves the bucket as it was;
// copies of the set keep the codec; a bucket without one refuses
// PutValue.
func TestCodecBucketKeepsValuesDecoded(t *testing.T) {
	s := New()
	s.SetCodec([]byte("objects"), upper)
	b, err := s.CreateBucketIfNotExists([]byte("objects"))
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"a", "b", "c"} {
		if err := b.Put([]byte(k), []byte("v"+k)); err != nil {
			t.Fatal(err)
		}
	}
	if err := b.Put([]byte("d"), nil); err == nil || !strings.Contains(err.Error(), `"d"`) {
		t.Fatalf("Put of a value that does not decode: %v, want an error naming the key", err)
	}
	if b.Has([]byte("d")) || b.Len() != 3 {
		t.Fatalf("a refused Put changed the bucket: %d keys", b.Len())
	}
	if err := b.PutValue([]byte("b"), "NEW"); err != nil {
		t.Fatal(err)
	}
	snap := s.Snapshot()
	if err := b.PutValue([]byte("b"), "NEWER"); err != nil {
		t.Fatal(err)
	}
	sb := snap.Bucket([]byte("objects"))
	if v := sb.Value([]byte("b")); v != "NEW" {
		t.Fatalf("snapshot's value %v, want NEW", v)
	}
	if got := string(sb.Get([]byte("a"))); got != "va" {
		t.Fatalf("Get %q, want the encoding va", got)
	}
	var seen []string
	err = sb.AscendValues([]byte("b"), func(k []byte, v any) (bool, error) {
		seen = append(seen, string(k)+"="+v.(string))
		return true, nil
	})
	if err != nil || strings.Join(seen, ",") != "b=NEW,c=VC" {
		t.Fatalf("AscendValues from b: %v %v", seen, err)
	}
	seen = seen[:0]
	if err := sb.ForEach(func(k, v []byte) error { seen = append(seen, string(k)+"="+string(v)); return nil }); err != nil {
		t.Fatal(err)
	}
	if k, v := sb.Cursor().Last(); strings.Join(seen, ",") != "a=va,b=new,c=vc" || string(k) != "c" || string(v) != "vc" {
		t.Fatalf("ForEach %v, cursor's last %q=%q", seen, k, v)
	}
	plain, err := s.CreateBucketIfNotExists([]byte("meta"))
	if err != nil {
		t.Fatal(err)
	}
	if err := plain.PutValue([]byte("k"), "V"); !errors.Is(err, ErrNoCodec) {
		t.Fatalf("PutValue without a codec: %v, want ErrNoCodec", err)
	}
	if err := b.PutValue([]byte("k"), nil); !errors.Is(err, ErrNilValue) {
		t.Fatalf("PutValue of nil: %v, want ErrNilValue", err)
	}
}

// TestChangesNameWhatWasWritten checks that a set tracking its changes
// names each key written or deleted (in buckets with and without a codec)
// once, leaves out a delete of a key it did not hold, and starts afresh
// after TakeChanges.
func TestChangesNameWhatWasWritten(t *testing.T) {
	s := New()
	s.SetCodec([]byte("decoded"), &Codec{
		Encode: func(v any) []byte { return []byte(v.(string)) },
		Decode: func(b []byte) (any, error) { return string(b), nil },
	})
	raw, err := s.CreateBucketIfNotExists([]byte("raw"))
	if err != nil {
		t.Fatal(err)
	}
	if err := raw.Put([]byte("kept"), []byte("1")); err != nil {
		t.Fatal(err)
	}
	if got := s.TakeChanges(); got != nil {
		t.Fatalf("a set not tracking changes gave %v", got)
	}
	s.TrackChanges()
	dec, err := s.CreateBucketIfNotExists([]byte("decoded"))
	if err != nil {
		t.Fatal(err)
	}
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(s.Bucket([]byte("raw")).Put([]byte("a"), []byte("1")))
	must(s.Bucket([]byte("raw")).Put([]byte("a"), []byte("2")))
	must(s.Bucket([]byte("raw")).Delete([]byte("kept")))
	must(s.Bucket([]byte("raw")).Delete([]byte("never")))
	must(dec.PutValue([]byte("b"), "x"))
	must(dec.Put([]byte("c"), []byte("y")))
	got := s.TakeChanges()
	want := Changes{"raw": {"a": {}, "kept": {}}, "decoded": {"b": {}, "c": {}}}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("changes %v, want %v", got, want)
	}
	if got.Len() != 4 {
		t.Errorf("Len %d, want 4", got.Len())
	}
	must(s.Bucket([]byte("decoded")).Delete([]byte("b")))
	next := s.TakeChanges()
	if want := (Changes{"decoded": {"b": {}}}); !reflect.DeepEqual(next, want) {
		t.Fatalf("after TakeChanges: %v, want %v", next, want)
	}
	got.Add(next)
	if got.Len() != 4 || len(got["decoded"]) != 2 {
		t.Errorf("Add gave %v", got)
	}
}
