package projector

import (
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"testing"
	"time"

	"github.com/quotaledger/quota/ledger"
	"github.com/quotaledger/quota/ledger/object"
)

// benchObject decodes a manifest and returns it with its trimmed JSON,
// what an event carries.
func benchObject(b testing.TB, raw string) (*object.Object, []byte) {
	b.Helper()
	o, err := object.Decode([]byte(raw))
	if err != nil {
		b.Fatal(err)
	}
	trimmed, err := o.Trimmed()
	if err != nil {
		b.Fatal(err)
	}
	return o, trimmed
}

// benchRecords builds a stream of pod creates, updates and deletes over
// namespaces that each hold three quotas.
func benchRecords(b testing.TB, namespaces, pods int) []ledger.Record {
	b.Helper()
	var records []ledger.Record
	seq := uint64(0)
	base := time.Date(2026, 11, 22, 0, 0, 0, 0, time.UTC)
	add := func(typ ledger.EventType, raw string) {
		o, trimmed := benchObject(b, raw)
		seq++
		ev := ledger.Event{Version: ledger.EncodingVersion, Type: typ, Resource: o.Resource, Namespace: o.Namespace, Name: o.Name}
		if typ != ledger.Delete {
			ev.Object = trimmed
		}
		records = append(records, ledger.Record{Seq: seq, Subject: ledger.Subject(o.Namespace), Namespace: o.Namespace, Time: base.Add(time.Duration(seq) * time.Millisecond), Event: ev})
	}
	for n := range namespaces {
		ns := fmt.Sprintf("team-%d", n)
		add(ledger.Upsert, fmt.Sprintf(`{"apiVersion":"v1","kind":"ResourceQuota","metadata":{"name":"compute","namespace":%q},"spec":{"hard":{"requests.cpu":"1000","requests.memory":"1000Gi","limits.cpu":"2000","limits.memory":"2000Gi","pods":"100000"}}}`, ns))
		add(ledger.Upsert, fmt.Sprintf(`{"apiVersion":"v1","kind":"ResourceQuota","metadata":{"name":"counts","namespace":%q},"spec":{"hard":{"count/pods":"100000","services":"100","configmaps":"100"}}}`, ns))
		add(ledger.Upsert, fmt.Sprintf(`{"apiVersion":"v1","kind":"ResourceQuota","metadata":{"name":"best-effort","namespace":%q},"spec":{"hard":{"pods":"10"},"scopes":["BestEffort"]}}`, ns))
	}
	for i := range pods {
		ns := fmt.Sprintf("team-%d", i%namespaces)
		pod := func(phase string) string {
			return fmt.Sprintf(`{"apiVersion":"v1","kind":"Pod","metadata":{"name":"pod-%d","namespace":%q,"uid":"u-%d"},"spec":{"initContainers":[{"name":"init","resources":{"requests":{"cpu":"500m","memory":"256Mi"},"limits":{"cpu":"1","memory":"512Mi"}}}],"containers":[{"name":"app","resources":{"requests":{"cpu":"250m","memory":"512Mi"},"limits":{"cpu":"500m","memory":"1Gi"}}},{"name":"proxy","resources":{"requests":{"cpu":"100m","memory":"64Mi"},"limits":{"cpu":"200m","memory":"128Mi"}}}]},"status":{"phase":%q}}`, i, ns, i, phase)
		}
		add(ledger.Upsert, pod("Pending"))
		add(ledger.Upsert, pod("Running"))
		if i%3 == 0 {
			add(ledger.Upsert, pod("Succeeded"))
			add(ledger.Delete, pod("Succeeded"))
		}
	}
	return records
}

func BenchmarkApply(b *testing.B) {
	records := benchRecords(b, 10, 20000)
	benchApply(b, nil, records, DefaultBatchSizeMax, "events/s")
}

// benchApply applies records to a fresh projection per iteration, in
// batches of batch, after the untimed opening, and reports the records
// applied per second as unit.
func benchApply(b *testing.B, opening, records []ledger.Record, batch int, unit string) {
	b.Helper()
	b.ResetTimer()
	for range b.N {
		b.StopTimer()
		p, err := Open(Config{Path: filepath.Join(b.TempDir(), "p.db"), NoSync: true}, nil)
		if err != nil {
			b.Fatal(err)
		}
		if len(opening) > 0 {
			if err := p.Apply(b.Context(), opening); err != nil {
				b.Fatal(err)
			}
		}
		b.StartTimer()
		for i := 0; i < len(records); i += batch {
			if err := p.Apply(b.Context(), records[i:min(i+batch, len(records))]); err != nil {
				b.Fatal(err)
			}
		}
		b.StopTimer()
		p.Close()
		b.StartTimer()
	}
	b.ReportMetric(float64(len(records)*b.N)/b.Elapsed().Seconds(), unit)
}

// reserveRecords builds what admission appends while one client creates
// pods in a namespace with a quota and a LimitRange: n Reserve events of
// one reservation each, with random request uids as reservation IDs.
func reserveRecords(b *testing.B, n int) []ledger.Record {
	b.Helper()
	base := time.Date(2026, 11, 22, 0, 0, 0, 0, time.UTC)
	const ns = "team-0"
	var records []ledger.Record
	add := func(ev ledger.Event) {
		seq := uint64(len(records) + 1)
		ev.Version = ledger.EncodingVersion
		ev.Namespace = ns
		records = append(records, ledger.Record{Seq: seq, Subject: ledger.Subject(ns), Namespace: ns, Time: base.Add(time.Duration(seq) * time.Millisecond), Event: ev})
	}
	for _, raw := range []string{
		`{"apiVersion":"v1","kind":"ResourceQuota","metadata":{"name":"compute","namespace":"team-0"},"spec":{"hard":{"requests.cpu":"100000","requests.memory":"100000Gi","limits.cpu":"200000","limits.memory":"200000Gi","pods":"1000000"}}}`,
		`{"apiVersion":"v1","kind":"LimitRange","metadata":{"name":"defaults","namespace":"team-0"},"spec":{"limits":[{"type":"Container","default":{"cpu":"500m","memory":"512Mi"},"defaultRequest":{"cpu":"100m","memory":"128Mi"}}]}}`,
	} {
		o, trimmed := benchObject(b, raw)
		add(ledger.Event{Type: ledger.Upsert, Resource: o.Resource, Name: o.Name, Object: trimmed})
	}
	rng := rand.New(rand.NewPCG(1, 2))
	for i := range n {
		name := fmt.Sprintf("web-%d", i)
		raw := fmt.Sprintf(`{"apiVersion":"v1","kind":"Pod","metadata":{"name":%q,"namespace":"team-0","labels":{"app":"web","tier":"frontend"}},"spec":{"initContainers":[{"name":"init","image":"registry.example/init:1.2","resources":{"requests":{"cpu":"500m","memory":"256Mi"},"limits":{"cpu":"1","memory":"512Mi"}}}],"containers":[{"name":"app","image":"registry.example/app:3.4","resources":{"requests":{"cpu":"250m","memory":"512Mi"},"limits":{"cpu":"500m","memory":"1Gi"}}},{"name":"proxy","image":"registry.example/proxy:1.0"}]}}`, name)
		_, trimmed := benchObject(b, raw)
		id := fmt.Sprintf("%08x-%04x-%04x-%04x-%012x", rng.Uint32(), rng.Uint32()&0xffff, rng.Uint32()&0xffff, rng.Uint32()&0xffff, rng.Uint64()&0xffffffffffff)
		add(ledger.Event{Type: ledger.Reserve, ReservationTTL: time.Minute, Reservations: []ledger.Reservation{{ID: id, Resource: "pods", Name: name, Object: trimmed}}})
	}
	return records
}

// BenchmarkApplyReservations applies the reservations of one client's
// creates in batches of 500, about what the projection gathers in its
// commit delay at two thousand creates a second: the projector's share
// of a reserving admission.
func BenchmarkApplyReservations(b *testing.B) {
	records := reserveRecords(b, 20000)
	// The first two records are the namespace's quota and LimitRange.
	benchApply(b, records[:2], records[2:], 500, "reservations/s")
}
