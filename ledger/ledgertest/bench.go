package ledgertest

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

// Baselines: what plain JetStream achieves on the same server with the same
// sync policy, so that the ledger's own numbers can be judged against them.

// BenchPayload is the message body of the raw benchmarks: about the size of
// a trimmed pod upsert.
var BenchPayload = []byte(`{"v":1,"type":"upsert","resource":"pods","namespace":"bench","name":"web-7d9f8c6b5-x2x9q","uid":"0b6f1c2e-8d2e-4c7a-9a55-3e0e1f7b2c11","resourceVersion":"123456","object":{"kind":"Pod","apiVersion":"v1","metadata":{"name":"web-7d9f8c6b5-x2x9q","namespace":"bench"},"spec":{"containers":[{"name":"app","resources":{"requests":{"cpu":"250m","memory":"256Mi"},"limits":{"cpu":"1","memory":"512Mi"}}}]},"status":{"phase":"Running"}}}`)

// benchStream creates a plain file stream on bench.<name>.>.
func benchStream(b *testing.B, js jetstream.JetStream, name string) jetstream.Stream {
	b.Helper()
	st, err := js.CreateOrUpdateStream(context.Background(), jetstream.StreamConfig{
		Name:       name,
		Subjects:   []string{"bench." + name + ".>"},
		Storage:    jetstream.FileStorage,
		Replicas:   1,
		Duplicates: 2 * time.Minute,
	})
	if err != nil {
		b.Fatalf("create %s: %v", name, err)
	}
	return st
}

// BenchRawPublish measures synchronous JetStream publishes: one round trip
// and one stored (and, with SyncAlways, synced) message per operation.
func BenchRawPublish(b *testing.B, js jetstream.JetStream) {
	benchStream(b, js, "RAWPUB")
	ctx := context.Background()
	b.SetBytes(int64(len(BenchPayload)))
	b.ResetTimer()
	for i := 0; b.Loop(); i++ {
		if _, err := js.Publish(ctx, fmt.Sprintf("bench.RAWPUB.ns%d", i%16), BenchPayload); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchRawPublishAsync measures asynchronous JetStream publishes with at most
// window unacknowledged.
func BenchRawPublishAsync(b *testing.B, js jetstream.JetStream, window int) {
	benchStream(b, js, "RAWASYNC")
	b.SetBytes(int64(len(BenchPayload)))
	b.ResetTimer()
	pending := make([]jetstream.PubAckFuture, 0, window)
	wait := func(f jetstream.PubAckFuture) {
		select {
		case <-f.Ok():
		case err := <-f.Err():
			b.Fatal(err)
		}
	}
	for i := 0; b.Loop(); i++ {
		if len(pending) == window {
			wait(pending[0])
			pending = pending[1:]
		}
		f, err := js.PublishAsync(fmt.Sprintf("bench.RAWASYNC.ns%d", i%16), BenchPayload)
		if err != nil {
			b.Fatal(err)
		}
		pending = append(pending, f)
	}
	for _, f := range pending {
		wait(f)
	}
}

// BenchRawOrderedRead measures reading b.N stored messages through an
// ordered consumer. Filling the stream is not timed.
func BenchRawOrderedRead(b *testing.B, js jetstream.JetStream) {
	st := benchStream(b, js, "RAWREAD")
	n := b.N
	for i := 0; i < n; i++ {
		if _, err := js.PublishAsync(fmt.Sprintf("bench.RAWREAD.ns%d", i%16), BenchPayload); err != nil {
			b.Fatal(err)
		}
		if i%1000 == 999 {
			<-js.PublishAsyncComplete()
		}
	}
	<-js.PublishAsyncComplete()
	ctx := context.Background()
	b.SetBytes(int64(len(BenchPayload)))
	b.ResetTimer()
	cons, err := st.OrderedConsumer(ctx, jetstream.OrderedConsumerConfig{})
	if err != nil {
		b.Fatal(err)
	}
	iter, err := cons.Messages(jetstream.PullMaxMessages(1024))
	if err != nil {
		b.Fatal(err)
	}
	defer iter.Stop()
	for i := 0; i < n; i++ {
		if _, err := iter.Next(); err != nil {
			b.Fatal(err)
		}
	}
}
