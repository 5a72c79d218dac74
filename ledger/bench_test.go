package ledger_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/quotaledger/quota/ledger"
	"github.com/quotaledger/quota/ledger/ledgertest"
)

func BenchmarkRawPublish(b *testing.B) {
	_, _, js := ledgertest.StartServer(b)
	ledgertest.BenchRawPublish(b, js)
}

func BenchmarkRawPublishAsync(b *testing.B) {
	_, _, js := ledgertest.StartServer(b)
	ledgertest.BenchRawPublishAsync(b, js, ledger.DefaultAppendBatchInFlightMax)
}

func BenchmarkRawOrderedRead(b *testing.B) {
	_, _, js := ledgertest.StartServer(b)
	ledgertest.BenchRawOrderedRead(b, js)
}

func BenchmarkAppend(b *testing.B) {
	_, _, js := ledgertest.StartServer(b)
	s := ledgertest.OpenStream(b, js)
	ctx := context.Background()
	for i := 0; b.Loop(); i++ {
		if _, err := s.Append(ctx, pod(fmt.Sprintf("ns%d", i%16), fmt.Sprintf("p%d", i)), ledger.AppendOptions{MsgID: fmt.Sprint(i)}); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkAppendBatch reports the cost of one event appended in batches of
// appendBatchBenchSize.
func BenchmarkAppendBatch(b *testing.B) {
	_, _, js := ledgertest.StartServer(b)
	s := ledgertest.OpenStream(b, js)
	ctx := context.Background()
	const appendBatchBenchSize = 1000
	n := b.N
	b.ResetTimer()
	for start := 0; start < n; start += appendBatchBenchSize {
		var entries []ledger.BatchEntry
		for k := start; k < min(n, start+appendBatchBenchSize); k++ {
			entries = append(entries, ledger.BatchEntry{Event: pod(fmt.Sprintf("ns%d", k%16), fmt.Sprintf("p%d", k)), MsgID: fmt.Sprint(k)})
		}
		if _, err := s.AppendBatch(ctx, entries); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkReader(b *testing.B) {
	_, _, js := ledgertest.StartServer(b)
	s := ledgertest.OpenStream(b, js)
	ctx := context.Background()
	n := b.N
	for start := 0; start < n; start += 1000 {
		var entries []ledger.BatchEntry
		for k := start; k < min(n, start+1000); k++ {
			entries = append(entries, ledger.BatchEntry{Event: pod(fmt.Sprintf("ns%d", k%16), fmt.Sprintf("p%d", k))})
		}
		if _, err := s.AppendBatch(ctx, entries); err != nil {
			b.Fatal(err)
		}
	}
	b.ResetTimer()
	r, err := s.Reader(ctx, 1)
	if err != nil {
		b.Fatal(err)
	}
	defer r.Close()
	for got := 0; got < n; {
		recs, err := r.Next(ctx, 1000, ledgertest.ReadWaitTimeout)
		if err != nil || len(recs) == 0 {
			b.Fatalf("after %d records: %v", got, err)
		}
		got += len(recs)
	}
}
