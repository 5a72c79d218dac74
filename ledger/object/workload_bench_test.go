package object

import (
	"testing"

	"github.com/quotaledger/quota/ledger/ledgertest/workload"
)

// workloadPods returns the first n pods the benchmark workload creates:
// pods as a cluster sends them (managed fields, probes, volumes,
// tolerations), which admission decodes.
func workloadPods(b *testing.B, n int) [][]byte {
	b.Helper()
	g, err := workload.New(workload.Config{Seed: 1, Namespaces: 4, Events: 4000})
	if err != nil {
		b.Fatal(err)
	}
	var pods [][]byte
	var line []byte
	for len(pods) < n {
		var ok bool
		if line, ok = g.Next(line[:0]); !ok {
			break
		}
		typ, obj, err := workload.SplitEvent(line)
		if err != nil {
			b.Fatal(err)
		}
		if g.Kind() == workload.KindPod && typ == workload.Added {
			pods = append(pods, obj)
		}
	}
	if len(pods) == 0 {
		b.Fatal("no pod in the workload")
	}
	return pods
}

// BenchmarkDecodeWorkload decodes the workload's pods in turn.
func BenchmarkDecodeWorkload(b *testing.B) {
	pods := workloadPods(b, 64)
	size := 0
	for _, p := range pods {
		size += len(p)
	}
	b.SetBytes(int64(size / len(pods)))
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		if benchObject, _ = Decode(pods[i%len(pods)]); benchObject == nil {
			b.Fatal("not decoded")
		}
		i++
	}
}
