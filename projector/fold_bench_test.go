package projector

import (
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/quotaledger/quota/ledger"
	"github.com/quotaledger/quota/ledger/object"
)

// benchRecords builds a stream of pod creates, updates and deletes over
// namespaces that each hold three quotas.
func benchRecords(b *testing.B, namespaces, pods int) []ledger.Record {
	b.Helper()
	var records []ledger.Record
	seq := uint64(0)
	base := time.Date(2026, 11, 22, 0, 0, 0, 0, time.UTC)
	add := func(typ ledger.EventType, raw string) {
		o, err := object.Decode([]byte(raw))
		if err != nil {
			b.Fatal(err)
		}
		trimmed, err := o.Trimmed()
		if err != nil {
			b.Fatal(err)
		}
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
	b.ResetTimer()
	for range b.N {
		b.StopTimer()
		p, err := Open(Config{Path: filepath.Join(b.TempDir(), "p.db"), NoSync: true}, nil)
		if err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
		for i := 0; i < len(records); i += DefaultBatchSizeMax {
			if err := p.Apply(b.Context(), records[i:min(i+DefaultBatchSizeMax, len(records))]); err != nil {
				b.Fatal(err)
			}
		}
		b.StopTimer()
		p.Close()
		b.StartTimer()
	}
	b.ReportMetric(float64(len(records)*b.N)/b.Elapsed().Seconds(), "events/s")
}
