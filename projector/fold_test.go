package projector

import (
	"bufio"
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/quotaledger/quota/projector/buckets"
	corev1 "k8s.io/api/core/v1"

	"github.com/quotaledger/quota/ledger"
	"github.com/quotaledger/quota/ledger/object"
	"github.com/quotaledger/quota/ledger/quantity"
	"github.com/quotaledger/quota/ledger/quota"
)

var samplesDir = filepath.Join("..", "testdata", "samples")

// watchRecords turns watch-event lines into stream records the way ingest
// does, numbering them from seq and stamping them a second apart.
func watchRecords(t testing.TB, seq uint64, files ...string) []ledger.Record {
	t.Helper()
	var lines [][]byte
	for _, file := range files {
		lines = append(lines, readLines(t, file)...)
	}
	return watchLineRecords(t, time.Date(2026, 11, 22, 2, 45, 0, 0, time.UTC), seq, lines)
}

// watchLineRecords turns watch-event lines into stream records the way
// ingest does, numbering them from seq and stamping them a second apart
// from base.
func watchLineRecords(t testing.TB, base time.Time, seq uint64, lines [][]byte) []ledger.Record {
	t.Helper()
	records := make([]ledger.Record, 0, len(lines))
	for i, line := range lines {
		var w struct {
			Type   string          `json:"type"`
			Object json.RawMessage `json:"object"`
		}
		if err := json.Unmarshal(line, &w); err != nil {
			t.Fatalf("event %d: %v", i+1, err)
		}
		o, err := object.Decode(w.Object)
		if err != nil {
			t.Fatalf("event %d: decode: %v", i+1, err)
		}
		ev := ledger.Event{Version: ledger.EncodingVersion, Type: ledger.Upsert, Resource: o.Resource,
			Namespace: o.Namespace, Name: o.Name, UID: o.UID, ResourceVersion: o.ResourceVersion}
		if w.Type == "DELETED" {
			ev.Type = ledger.Delete
		} else if ev.Object, err = o.Trimmed(); err != nil {
			t.Fatalf("event %d: trim: %v", i+1, err)
		}
		seq++
		records = append(records, ledger.Record{Seq: seq, Subject: ledger.Subject(o.Namespace), Namespace: o.Namespace,
			Time: base.Add(time.Duration(seq) * time.Second), Event: ev})
	}
	return records
}

// readLines returns the non-blank lines of a JSON-lines file.
func readLines(t testing.TB, path string) [][]byte {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var lines [][]byte
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 16<<20)
	for sc.Scan() {
		if line := bytes.TrimSpace(sc.Bytes()); len(line) > 0 {
			lines = append(lines, bytes.Clone(line))
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return lines
}

// openTemp opens a fresh projection file in a temp dir, closed with the test.
func openTemp(t testing.TB) *Projector {
	t.Helper()
	p, err := Open(Config{Path: filepath.Join(t.TempDir(), "projection.db"), NoSync: true}, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		checkConsistent(t, p)
		p.Close()
	})
	return p
}

func applyAll(t testing.TB, p *Projector, records []ledger.Record, batch int) {
	t.Helper()
	for len(records) > 0 {
		n := min(batch, len(records))
		if err := p.Apply(t.Context(), records[:n]); err != nil {
			t.Fatal(err)
		}
		records = records[n:]
	}
}

// checkConsistent recounts every valid quota from the objects it matches
// and compares the value with the stored Used: the whole-state check that
// runs after every test touching a projection.
func checkConsistent(t testing.TB, p *Projector) {
	t.Helper()
	err := p.read(func(tx *buckets.Set) error {
		return forEachQuota(tx, "", true, func(r *quotaRecord) error {
			if r.Invalid != "" {
				return nil
			}
			o, err := object.Decode(r.Object)
			if err != nil {
				t.Errorf("quota %s/%s: %v", r.Namespace, r.Name, err)
				return nil
			}
			q, err := quota.FromObject(o)
			if err != nil {
				t.Errorf("quota %s/%s: %v", r.Namespace, r.Name, err)
				return nil
			}
			sum := quota.ResourceList{}
			for name := range q.Hard {
				sum[name] = quantity.Quantity{}
			}
			_ = forEachObject(tx, r.Namespace, func(or *objectRecord) error {
				// An object charges, per resource, the most of its own
				// charge and its update holds' that the quota matches.
				most := quota.ResourceList{}
				for _, c := range append([]quota.Charge{or.Charge}, holdCharges(or)...) {
					if !q.Matches(c) {
						continue
					}
					for name, v := range q.Mask(c.Usage) {
						if v.Cmp(most[name]) > 0 {
							most[name] = v
						}
					}
				}
				for name, v := range most {
					sum[name] = sum[name].Add(v)
				}
				return nil
			})
			// Compare exact values, not prints: a fresh sum may print in
			// another format than the running total.
			for name, v := range r.Used {
				if v.Cmp(sum[name]) != 0 {
					t.Errorf("quota %s/%s %s: stored used %s, the charges sum to %s", r.Namespace, r.Name, name, v, sum[name])
				}
			}
			if len(r.Used) != len(sum) {
				t.Errorf("quota %s/%s: used has %d resources, hard has %d", r.Namespace, r.Name, len(r.Used), len(sum))
			}
			return nil
		})
	})
	if err != nil {
		t.Fatal(err)
	}
	checkReservationIndex(t, p)
}

func holdCharges(r *objectRecord) []quota.Charge {
	var out []quota.Charge
	for _, h := range r.Holds {
		out = append(out, h.Charge)
	}
	return out
}

// checkReservationIndex checks that the reservation and expiry buckets
// index exactly the reservations the objects hold: creates' and updates'.
func checkReservationIndex(t testing.TB, p *Projector) {
	t.Helper()
	err := p.read(func(tx *buckets.Set) error {
		want := map[string]string{} // expiry key → object key
		c := tx.Bucket(bucketObjects).Cursor()
		for k, v := c.First(); k != nil; k, v = c.Next() {
			r, err := decodeObjectRecord(v)
			if err != nil {
				return err
			}
			if r.Reservation != "" {
				want[string(expiryKey(r.ExpiresAt, r.Reservation))] = string(k)
			}
			for _, h := range r.Holds {
				want[string(expiryKey(h.ExpiresAt, h.ID))] = string(k)
			}
		}
		reserved := tx.Bucket(bucketReserved)
		if n := reserved.Len(); n != len(want) {
			t.Errorf("the reservation bucket holds %d ids, the objects %d reservations", n, len(want))
		}
		got := 0
		err := tx.Bucket(bucketExpiry).ForEach(func(k, v []byte) error {
			got++
			if want[string(k)] != string(v) {
				t.Errorf("expiry entry %q points at %q; the objects say %q", k, v, want[string(k)])
			}
			if key := reserved.Get(k[8:]); string(key) != string(v) {
				t.Errorf("reservation %s points at %q, its expiry entry at %q", k[8:], key, v)
			}
			return nil
		})
		if got != len(want) {
			t.Errorf("the expiry bucket holds %d entries, the objects %d reservations", got, len(want))
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
}

func readExpected(t testing.TB, dir string) corev1.ResourceQuotaList {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, "expected.json"))
	if err != nil {
		t.Fatal(err)
	}
	var list corev1.ResourceQuotaList
	if err := json.Unmarshal(b, &list); err != nil {
		t.Fatal(err)
	}
	return list
}

func sampleRecords(t testing.TB, dir string) []ledger.Record {
	files := []string{}
	if _, err := os.Stat(filepath.Join(dir, "cluster.jsonl")); err == nil {
		files = append(files, filepath.Join(dir, "cluster.jsonl"))
	}
	return watchRecords(t, 0, append(files, filepath.Join(dir, "events.jsonl"))...)
}

// TestFoldMatchesKubernetes folds each recorded sample and compares the
// usage with what the real API server reported, string for string, and the
// describe text with kubectl's.
func TestFoldMatchesKubernetes(t *testing.T) {
	dirs, _ := filepath.Glob(filepath.Join(samplesDir, "sample-*"))
	if len(dirs) == 0 {
		t.Fatal("no samples found")
	}
	for _, dir := range dirs {
		t.Run(filepath.Base(dir), func(t *testing.T) {
			for _, batch := range []int{1, 3, 1000} {
				p := openTemp(t)
				applyAll(t, p, sampleRecords(t, dir), batch)
				want := readExpected(t, dir)
				ns := want.Items[0].Namespace
				got, err := p.Quotas(ns, "", false)
				if err != nil {
					t.Fatal(err)
				}
				if len(got.Items) != len(want.Items) {
					t.Fatalf("batch %d: got %d quotas, want %d", batch, len(got.Items), len(want.Items))
				}
				for i := range want.Items {
					g, w := got.Items[i], want.Items[i]
					if g.Name != w.Name {
						t.Errorf("quota %d: name %q, want %q", i, g.Name, w.Name)
					}
					if gs, ws := resourceStrings(g.Status.Used), resourceStrings(w.Status.Used); gs != ws {
						t.Errorf("batch %d: %s used:\n got %s\nwant %s", batch, w.Name, gs, ws)
					}
					if gs, ws := resourceStrings(g.Status.Hard), resourceStrings(w.Status.Hard); gs != ws {
						t.Errorf("batch %d: %s hard:\n got %s\nwant %s", batch, w.Name, gs, ws)
					}
				}
				var buf bytes.Buffer
				if err := WriteDescribe(&buf, got); err != nil {
					t.Fatal(err)
				}
				wantText, err := os.ReadFile(filepath.Join(dir, "describe.txt"))
				if err != nil {
					t.Fatal(err)
				}
				if buf.String() != string(wantText) {
					t.Errorf("batch %d: describe:\n got:\n%s\nwant:\n%s", batch, buf.String(), wantText)
				}
			}
		})
	}
}

func resourceStrings(l corev1.ResourceList) string {
	var parts []string
	for k, v := range l {
		parts = append(parts, string(k)+"="+v.String())
	}
	sortStrings(parts)
	return strings.Join(parts, ",")
}

// TestFoldBatchingGivesSameBytes checks that how records are split into
// transactions does not change the projection's bytes.
func TestFoldBatchingGivesSameBytes(t *testing.T) {
	dir := filepath.Join(samplesDir, "sample-team-a")
	records := sampleRecords(t, dir)
	var dumps []string
	for _, batch := range []int{1, 2, 7, len(records)} {
		p := openTemp(t)
		applyAll(t, p, records, batch)
		dumps = append(dumps, dump(t, p))
	}
	for i := 1; i < len(dumps); i++ {
		if dumps[i] != dumps[0] {
			t.Errorf("projection differs between batchings 0 and %d:\n%s\n---\n%s", i, dumps[0], dumps[i])
		}
	}
}

// dump prints every bucket's keys and values.
func dump(t testing.TB, p *Projector) string {
	t.Helper()
	var buf strings.Builder
	err := p.read(func(tx *buckets.Set) error {
		for _, name := range allBuckets {
			buf.WriteString("[" + string(name) + "]\n")
			err := tx.Bucket(name).ForEach(func(k, v []byte) error {
				buf.WriteString(strings.ReplaceAll(string(k), "\x00", "/") + " = " + string(v) + "\n")
				return nil
			})
			if err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return buf.String()
}

// TestFoldRefusesReappliedSeq checks the exactly-once guard: a record at or
// below the applied sequence is a bug and is refused.
func TestFoldRefusesReappliedSeq(t *testing.T) {
	p := openTemp(t)
	records := sampleRecords(t, filepath.Join(samplesDir, "sample-team-a"))
	applyAll(t, p, records[:5], 5)
	err := p.Apply(t.Context(), records[4:6])
	if err == nil {
		t.Fatal("re-applying seq 5 was accepted")
	}
	if got := p.Applied(); got != 5 {
		t.Errorf("applied = %d after a refused batch, want 5", got)
	}
}

// TestFoldSkipsBadRecords checks that a record that does not decode is noted
// and passed over, and counted, and the records after it still apply.
func TestFoldSkipsBadRecords(t *testing.T) {
	p := openTemp(t)
	records := sampleRecords(t, filepath.Join(samplesDir, "sample-team-a"))
	bad := records[3]
	bad.Event.Object = json.RawMessage(`{"kind":"Pod"}`)
	records[3] = bad
	records[5].Err = errBadBytes
	applyAll(t, p, records, 4)
	if got, want := p.Applied(), records[len(records)-1].Seq; got != want {
		t.Fatalf("applied = %d, want %d", got, want)
	}
	skipped := p.skippedSeqs(t)
	if len(skipped) != 2 || skipped[0] != records[3].Seq || skipped[1] != records[5].Seq {
		t.Errorf("skipped = %v, want [%d %d]", skipped, records[3].Seq, records[5].Seq)
	}
	if got := p.Skipped(); got != 2 {
		t.Errorf("Skipped() = %d, want 2", got)
	}
}

// TestFoldSurvivesAPanicOnARecord makes the evaluation of one pod panic,
// as a bug reading some record would: that record is skipped with the
// panic as its reason, and the records after it still apply.
func TestFoldSurvivesAPanicOnARecord(t *testing.T) {
	p := openTemp(t)
	records := sampleRecords(t, filepath.Join(samplesDir, "sample-team-a"))
	victim := -1
	for i, rec := range records {
		if rec.Event.Type == ledger.Upsert && rec.Event.Resource == "pods" {
			victim = i
			break
		}
	}
	if victim < 0 {
		t.Fatal("the sample holds no pod upsert")
	}
	var panicked atomic.Bool
	testHookEvaluate = func(o *object.Object) {
		if o.Name == records[victim].Event.Name && !panicked.Swap(true) {
			panic("a bug")
		}
	}
	t.Cleanup(func() { testHookEvaluate = nil })
	applyAll(t, p, records, 4)
	if got, want := p.Applied(), records[len(records)-1].Seq; got != want {
		t.Fatalf("applied = %d, want %d", got, want)
	}
	if skipped := p.skippedSeqs(t); len(skipped) != 1 || skipped[0] != records[victim].Seq {
		t.Fatalf("skipped = %v, want [%d]", skipped, records[victim].Seq)
	}
	var reason string
	if err := p.read(func(tx *buckets.Set) error {
		reason = string(tx.Bucket(bucketSkipped).Get(seqBytes(records[victim].Seq)))
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(reason, "internal error: decode and evaluate an object: panic: a bug") {
		t.Errorf("the skipped record says %s; want the panic", reason)
	}
}

// skippedSeqs lists the sequences the fold recorded as skipped.
func (p *Projector) skippedSeqs(t testing.TB) []uint64 {
	t.Helper()
	var skipped []uint64
	err := p.read(func(tx *buckets.Set) error {
		return tx.Bucket(bucketSkipped).ForEach(func(k, _ []byte) error {
			skipped = append(skipped, seqFromBytes(k))
			return nil
		})
	})
	if err != nil {
		t.Fatal(err)
	}
	return skipped
}
