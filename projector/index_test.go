package projector

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/quotaledger/quota/ledger"
	"github.com/quotaledger/quota/ledger/quantity"
	"github.com/quotaledger/quota/ledger/quota"
)

func memoryPod(name, memory string) json.RawMessage {
	return json.RawMessage(`{"apiVersion":"v1","kind":"Pod","metadata":{"name":"` + name + `","namespace":"team-a"},` +
		`"spec":{"containers":[{"name":"app","resources":{"requests":{"memory":"` + memory + `","cpu":"100m"}}}]}}`)
}

func upsertEvent(resource, name string, obj json.RawMessage) ledger.Event {
	return ledger.Event{Type: ledger.Upsert, Resource: resource, Namespace: "team-a", Name: name, Object: obj}
}

func deleteEvent(resource, name string) ledger.Event {
	return ledger.Event{Type: ledger.Delete, Resource: resource, Namespace: "team-a", Name: name}
}

var memoryQuota = upsertEvent("resourcequotas", "compute", json.RawMessage(
	`{"apiVersion":"v1","kind":"ResourceQuota","metadata":{"name":"compute","namespace":"team-a"},`+
		`"spec":{"hard":{"requests.memory":"100Gi","requests.cpu":"10"}}}`))

// stepper returns a function that records events of team-a, a second
// apart from the given moment, into *records and applies them to p in
// batches of batch (all of a call's events at once when batch is 0).
func stepper(t testing.TB, p *Projector, records *[]ledger.Record, batch int) func(...ledger.Event) {
	record := teamARecorder(records, time.Date(2026, 11, 22, 3, 0, 0, 0, time.UTC))
	return func(evs ...ledger.Event) {
		t.Helper()
		from := len(*records)
		for _, ev := range evs {
			record(ev)
		}
		b := batch
		if b == 0 {
			b = len(evs)
		}
		applyAll(t, p, (*records)[from:], b)
	}
}

// downgrade closes p after making its file one of an earlier schema that
// lacked bucket, and opens it again.
func downgrade(t testing.TB, p *Projector, path string, bucket []byte, schema uint64) *Projector {
	t.Helper()
	if err := p.db.Update(func(tx *bolt.Tx) error {
		if err := tx.DeleteBucket(bucket); err != nil {
			return err
		}
		return tx.Bucket(bucketMeta).Put(keySchema, seqBytes(schema))
	}); err != nil {
		t.Fatal(err)
	}
	p.Close()
	p, err := Open(Config{Path: path, NoSync: true}, nil)
	if err != nil {
		t.Fatalf("open a schema %d file: %v", schema, err)
	}
	return p
}

// indexOf prints the informer index of team-a's pods.
func indexOf(t testing.TB, p *Projector) string {
	t.Helper()
	var out string
	err := p.db.View(func(tx *bolt.Tx) error {
		x, err := getIndex(tx, "team-a", "pods")
		if x == nil || err != nil {
			out = fmt.Sprint("none ", err)
			return nil
		}
		out = indexValue(encodeIndex(x))
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// TestInformerIndex follows the slots the fold gives pods: a reservation
// takes none, the object's own event does; a deletion frees a slot for the
// next pod; a ninth pod grows the map past its slots, until the last pod
// goes; a resync mends an index that missed a deletion.
func TestInformerIndex(t *testing.T) {
	var records []ledger.Record
	p := openTemp(t)
	step := stepper(t, p, &records, 0)
	step(memoryQuota, upsertEvent("pods", "b", memoryPod("b", "1Gi")), upsertEvent("pods", "a", memoryPod("a", "1Gi")))
	step(ledger.Event{Type: ledger.Reserve, Resource: "pods", Namespace: "team-a", Name: "c", Object: memoryPod("c", "1Gi"),
		Reservation: "r-c", ReservationTTL: time.Minute})
	if got, want := indexOf(t, p), "b a - - - - - -"; got != want {
		t.Errorf("with c reserved: %s, want %s", got, want)
	}
	step(deleteEvent("pods", "b"), upsertEvent("pods", "c", memoryPod("c", "1Gi")))
	if got, want := indexOf(t, p), "c a - - - - - -"; got != want {
		t.Errorf("after c's event: %s, want %s", got, want)
	}
	var nine []ledger.Event
	for i := range 7 {
		nine = append(nine, upsertEvent("pods", fmt.Sprint("n", i), memoryPod(fmt.Sprint("n", i), "1Gi")))
	}
	step(nine...)
	if got, want := indexOf(t, p), "9 objects, past the slots"; got != want {
		t.Errorf("with nine pods: %s, want %s", got, want)
	}
	step(deleteEvent("pods", "n0"), deleteEvent("pods", "n1"))
	if got, want := indexOf(t, p), "7 objects, past the slots"; got != want {
		t.Errorf("back to seven pods: %s, want %s", got, want)
	}
	var all []ledger.Event
	for _, n := range []string{"a", "c", "n2", "n3", "n4", "n5", "n6"} {
		all = append(all, deleteEvent("pods", n))
	}
	all = append(all, upsertEvent("pods", "z", memoryPod("z", "1Gi")))
	step(all...)
	if got, want := indexOf(t, p), "z - - - - - - -"; got != want {
		t.Errorf("after the last pod went and another came: %s, want %s", got, want)
	}

	// A deletion lost before the log saw it: the object goes from the
	// projection behind its back, and a resync listing y alone mends the
	// index.
	step(upsertEvent("pods", "y", memoryPod("y", "1Gi")))
	if err := p.db.Update(func(tx *bolt.Tx) error {
		return tx.Bucket(bucketObjects).Delete(objectKey("team-a", "pods", "z"))
	}); err != nil {
		t.Fatal(err)
	}
	step(ledger.Event{Type: ledger.Resync, Resource: "pods", Namespace: "team-a", Items: []json.RawMessage{memoryPod("y", "1Gi"), memoryPod("x", "1Gi")}})
	if got, want := indexOf(t, p), "x y - - - - - -"; got != want {
		t.Errorf("after the resync: %s, want %s", got, want)
	}
}

// TestRecountPrintsInTheLikeliestFormat: when a release makes Kubernetes
// recount a quota whose terms mix binary and decimal quantities, the sum
// prints in the format of the term its informer most likely meets first.
func TestRecountPrintsInTheLikeliestFormat(t *testing.T) {
	tests := []struct {
		name string
		pods [][2]string // created in this order
		gone []string    // then deleted
		want string
	}{
		// Slots zz, aa, gone: zz is met first from 7 of the 8 places.
		{"the first created, binary", [][2]string{{"zz", "2000Mi"}, {"aa", "2G"}, {"gone", "100Mi"}}, []string{"gone"}, "4001125Ki"},
		{"the first created, decimal", [][2]string{{"zz", "2G"}, {"aa", "2000Mi"}, {"gone", "100Mi"}}, []string{"gone"}, "4097152k"},
		// Slots d1, b1, gone, b2: d1 is met first from 5 places, b1
		// from 1 and b2 from 2.
		{"the longest run", [][2]string{{"d1", "2G"}, {"b1", "1000Mi"}, {"gone", "100Mi"}, {"b2", "1000Mi"}}, []string{"gone"}, "4097152k"},
		// Slots d1, -, -, b1, -, d2, d3, -: b1 is met first from 3
		// places, more than any other term, but the decimal terms from
		// 2 + 2 + 1.
		{"the likeliest format, over all its terms", [][2]string{{"d1", "2G"}, {"x2", "1Mi"}, {"x3", "1Mi"}, {"b1", "2000Mi"},
			{"x5", "1Mi"}, {"d2", "2G"}, {"d3", "2G"}, {"x8", "1Mi"}}, []string{"x2", "x3", "x5", "x8"}, "8097152k"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var records []ledger.Record
			record := teamARecorder(&records, time.Date(2026, 11, 22, 3, 0, 0, 0, time.UTC))
			record(memoryQuota)
			for _, pd := range tt.pods {
				record(upsertEvent("pods", pd[0], memoryPod(pd[0], pd[1])))
			}
			for _, name := range tt.gone {
				record(deleteEvent("pods", name))
			}
			p := openTemp(t)
			applyAll(t, p, records, 1)
			if got := usedIn(t, p, "compute", "requests.memory"); got != tt.want {
				t.Errorf("requests.memory %s, want %s", got, tt.want)
			}
			q := openTemp(t)
			applyAll(t, q, records, len(records))
			if got := usedIn(t, q, "compute", "requests.memory"); got != tt.want {
				t.Errorf("in one batch: requests.memory %s, want %s", got, tt.want)
			}
		})
	}
}

// TestRecountRewritesFiguresItLeaves: a release that lowers one figure
// makes Kubernetes write the whole status afresh, so a figure of mixed
// terms that the release leaves takes its likeliest format too.
func TestRecountRewritesFiguresItLeaves(t *testing.T) {
	var records []ledger.Record
	record := teamARecorder(&records, time.Date(2026, 11, 22, 3, 0, 0, 0, time.UTC))
	record(memoryQuota)
	// Admissions add in the format of the first: aa's decimal.
	record(upsertEvent("pods", "aa", memoryPod("aa", "2G")))
	record(upsertEvent("pods", "zz", memoryPod("zz", "2000Mi")))
	cpuOnly := json.RawMessage(`{"apiVersion":"v1","kind":"Pod","metadata":{"name":"cpu","namespace":"team-a"},` +
		`"spec":{"containers":[{"name":"app","resources":{"requests":{"cpu":"1"}}}]}}`)
	record(upsertEvent("pods", "cpu", cpuOnly))
	p := openTemp(t)
	applyAll(t, p, records, 1)
	if got, want := usedIn(t, p, "compute", "requests.memory"), "4097152k"; got != want {
		t.Fatalf("before the release: %s, want %s", got, want)
	}
	// Slots aa, zz, cpu; the release frees cpu's. aa is met first from
	// 7 places of 8: its decimal stays. Now with zz first:
	records = records[:0]
	record(memoryQuota)
	record(upsertEvent("pods", "zz", memoryPod("zz", "2000Mi")))
	record(upsertEvent("pods", "aa", memoryPod("aa", "2G")))
	record(upsertEvent("pods", "cpu", cpuOnly))
	// An admission made the sum in binary; a cluster whose informer
	// learnt the pods in another order than they were admitted (the
	// decimal one first) prints the recount in decimal.
	p = openTemp(t)
	applyAll(t, p, records, 1)
	if err := p.db.Update(func(tx *bolt.Tx) error {
		x, err := getIndex(tx, "team-a", "pods")
		if err != nil {
			return err
		}
		x.Slots[0], x.Slots[1] = x.Slots[1], x.Slots[0]
		return putIndex(tx, "team-a", "pods", x)
	}); err != nil {
		t.Fatal(err)
	}
	if got, want := usedIn(t, p, "compute", "requests.memory"), "4001125Ki"; got != want {
		t.Fatalf("before the release: %s, want %s", got, want)
	}
	record(deleteEvent("pods", "cpu"))
	applyAll(t, p, records[len(records)-1:], 1)
	if got, want := usedIn(t, p, "compute", "requests.memory"), "4097152k"; got != want {
		t.Errorf("after releasing the cpu-only pod: %s, want %s", got, want)
	}
	if got, want := usedIn(t, p, "compute", "requests.cpu"), "200m"; got != want {
		t.Errorf("requests.cpu %s, want %s", got, want)
	}
}

// TestLikeliestFormatNeedsEveryTermPlaced: a reserved term, or a term of
// a grown index, leaves the format to the sum's key order.
func TestLikeliestFormatNeedsEveryTermPlaced(t *testing.T) {
	p := openTemp(t)
	err := p.db.Update(func(tx *bolt.Tx) error {
		x := &informerIndex{}
		x.add("a")
		x.add("b")
		if err := putIndex(tx, "team-a", "pods", x); err != nil {
			return err
		}
		placed := []term{{resource: "pods", name: "a", format: quantity.BinarySI}, {resource: "pods", name: "b", format: quantity.DecimalSI}}
		if f, ok, err := likeliestFormat(tx, "team-a", placed); err != nil || !ok || f != quantity.BinarySI {
			t.Errorf("placed: %v %v %v, want BinarySI", f, ok, err)
		}
		reserved := append(placed[:1:1], term{resource: "pods", name: "b", reserved: true, format: quantity.DecimalSI})
		if _, ok, _ := likeliestFormat(tx, "team-a", reserved); ok {
			t.Error("a reserved term: format known")
		}
		unplaced := append(placed[:1:1], term{resource: "pods", name: "c", format: quantity.DecimalSI})
		if _, ok, _ := likeliestFormat(tx, "team-a", unplaced); ok {
			t.Error("a term the index lacks: format known")
		}
		for i := range quota.IndexSlots {
			x.add(fmt.Sprint("n", i))
		}
		if err := putIndex(tx, "team-a", "pods", x); err != nil {
			return err
		}
		if _, ok, _ := likeliestFormat(tx, "team-a", placed); ok {
			t.Error("a grown index: format known")
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// TestIndexesMigrate: a schema 3 file, which kept no informer indexes, has
// its pods placed in name order.
func TestIndexesMigrate(t *testing.T) {
	var records []ledger.Record
	record := teamARecorder(&records, time.Date(2026, 11, 22, 3, 0, 0, 0, time.UTC))
	record(memoryQuota)
	for _, n := range []string{"c", "a", "b"} {
		record(upsertEvent("pods", n, memoryPod(n, "1Gi")))
	}
	path := filepath.Join(t.TempDir(), "projection.db")
	p, err := Open(Config{Path: path, NoSync: true}, nil)
	if err != nil {
		t.Fatal(err)
	}
	applyAll(t, p, records, 1)
	if got, want := indexOf(t, p), "c a b - - - - -"; got != want {
		t.Errorf("index: %s, want %s", got, want)
	}
	p = downgrade(t, p, path, bucketIndexes, 3)
	defer p.Close()
	if got, want := indexOf(t, p), "a b c - - - - -"; got != want {
		t.Errorf("index after migrating: %s, want %s", got, want)
	}
	checkConsistent(t, p)
}

func TestLikeliestOrder(t *testing.T) {
	x := &informerIndex{}
	for _, n := range []string{"a", "b", "c", "d", "e", "f", "g"} {
		x.add(n)
	}
	x.remove("b")
	x.remove("c")
	x.remove("d")
	x.remove("e")
	x.remove("f")
	tests := []struct {
		names []string
		want  []int
	}{
		{[]string{"a"}, []int{0}},
		// Slots 1 and 7: 7 is met first from the six places 2 to 7.
		{[]string{"a", "g"}, []int{1, 0}},
		{[]string{"g", "a"}, []int{0, 1}},
		{[]string{"a", "nowhere"}, nil},
	}
	for _, tt := range tests {
		if got := x.likeliestOrder(tt.names); !slices.Equal(got, tt.want) {
			t.Errorf("likeliestOrder(%v) = %v, want %v", tt.names, got, tt.want)
		}
	}
	y := &informerIndex{}
	for _, n := range []string{"c", "a", "b"} {
		y.add(n)
	}
	if got, want := y.likeliestOrder([]string{"a", "b", "c"}), []int{2, 0, 1}; !slices.Equal(got, want) {
		t.Errorf("keys added c, a, b: %v, want %v", got, want)
	}
}

// TestLimitRangesInInformerOrder: the namespace state lists LimitRanges in
// the order LimitRanger most likely meets them, the order they were
// created, not by name.
func TestLimitRangesInInformerOrder(t *testing.T) {
	var records []ledger.Record
	p := openTemp(t)
	step := stepper(t, p, &records, 0)
	lr := func(name, cpu string) ledger.Event {
		return upsertEvent("limitranges", name, json.RawMessage(`{"apiVersion":"v1","kind":"LimitRange","metadata":{"name":"`+name+
			`","namespace":"team-a"},"spec":{"limits":[{"type":"Container","defaultRequest":{"cpu":"`+cpu+`"}}]}}`))
	}
	step(lr("z-first", "200m"), lr("a-second", "300m"), lr("m-third", "400m"))
	st, err := p.Namespace("team-a")
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, l := range st.LimitRanges {
		names = append(names, l.Name)
	}
	if got, want := strings.Join(names, " "), "z-first a-second m-third"; got != want {
		t.Errorf("LimitRanges %s, want %s", got, want)
	}
}

// TestLimitRangeIndexMigrates: a schema 5 file, whose indexes held no
// LimitRanges, has them placed in name order, its pods left where they
// were.
func TestLimitRangeIndexMigrates(t *testing.T) {
	path := filepath.Join(t.TempDir(), "projection.db")
	p, err := Open(Config{Path: path, NoSync: true}, nil)
	if err != nil {
		t.Fatal(err)
	}
	var records []ledger.Record
	step := stepper(t, p, &records, 0)
	lr := func(name string) ledger.Event {
		return upsertEvent("limitranges", name, json.RawMessage(`{"apiVersion":"v1","kind":"LimitRange","metadata":{"name":"`+name+
			`","namespace":"team-a"},"spec":{"limits":[{"type":"Container","defaultRequest":{"cpu":"100m"}}]}}`))
	}
	step(lr("z"), lr("a"), upsertEvent("pods", "c", memoryPod("c", "1Gi")), upsertEvent("pods", "b", memoryPod("b", "1Gi")))
	if err := p.db.Update(func(tx *bolt.Tx) error {
		if err := tx.Bucket(bucketIndexes).Delete(indexKey("team-a", "limitranges")); err != nil {
			return err
		}
		return tx.Bucket(bucketMeta).Put(keySchema, seqBytes(5))
	}); err != nil {
		t.Fatal(err)
	}
	p.Close()
	if p, err = Open(Config{Path: path, NoSync: true}, nil); err != nil {
		t.Fatalf("open a schema 5 file: %v", err)
	}
	defer p.Close()
	st, err := p.Namespace("team-a")
	if err != nil {
		t.Fatal(err)
	}
	if got := st.LimitRanges[0].Name + " " + st.LimitRanges[1].Name; got != "a z" {
		t.Errorf("LimitRanges after migrating: %s, want a z", got)
	}
	if got, want := indexOf(t, p), "c b - - - - - -"; got != want {
		t.Errorf("pods after migrating: %s, want %s", got, want)
	}
}
