package ledgertest

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/quotaledger/quota/ledger"
)

// StartServer starts an embedded server on a random port with its store in
// t.TempDir(), connects to it, and stops both when the test ends.
func StartServer(t testing.TB) (*ledger.Embedded, *nats.Conn, jetstream.JetStream) {
	t.Helper()
	srv, err := ledger.StartEmbedded(ledger.EmbeddedConfig{
		Port:     ledger.RandomPort,
		StoreDir: t.TempDir(),
	})
	if err != nil {
		t.Fatalf("start embedded server: %v", err)
	}
	t.Cleanup(srv.Shutdown)
	nc, err := nats.Connect(srv.ClientURL(), nats.MaxReconnects(0))
	if err != nil {
		t.Fatalf("connect to %s: %v", srv.ClientURL(), err)
	}
	t.Cleanup(nc.Close)
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatalf("jetstream: %v", err)
	}
	return srv, nc, js
}

// OpenStream opens the ledger's streams with the default configuration.
func OpenStream(t testing.TB, js jetstream.JetStream) *ledger.Stream {
	t.Helper()
	return OpenStreamConfig(t, js, ledger.Config{})
}

// OpenStreamConfig opens the ledger's streams with cfg.
func OpenStreamConfig(t testing.TB, js jetstream.JetStream, cfg ledger.Config) *ledger.Stream {
	t.Helper()
	s, err := ledger.Open(context.Background(), js, cfg)
	if err != nil {
		t.Fatalf("open stream: %v", err)
	}
	return s
}

// RecreateStreams deletes the ledger's streams and opens them anew, as a
// wiped JetStream store does. The server removes a deleted stream's files
// after it answers, so creating the same name at once may meet its
// "error creating store for stream" (10049); the open is retried for up to
// ten seconds on that error alone.
func RecreateStreams(t testing.TB, js jetstream.JetStream) *ledger.Stream {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for _, name := range []string{ledger.DefaultStreamName, ledger.DefaultRejectStreamName} {
		if err := js.DeleteStream(ctx, name); err != nil && !errors.Is(err, jetstream.ErrStreamNotFound) {
			t.Fatalf("delete stream %s: %v", name, err)
		}
	}
	for {
		s, err := ledger.Open(ctx, js, ledger.Config{})
		var apiErr *jetstream.APIError
		if err == nil {
			return s
		}
		if !errors.As(err, &apiErr) || apiErr.ErrorCode != jetstream.ErrorCode(10049) || ctx.Err() != nil {
			t.Fatalf("open the streams again: %v", err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// ReadAll reads every record from fromSeq up to the stream's last sequence
// at the time of the call.
func ReadAll(t testing.TB, s *ledger.Stream, fromSeq uint64) []ledger.Record {
	t.Helper()
	ctx := context.Background()
	last, err := s.LastSeq(ctx)
	if err != nil {
		t.Fatalf("last seq: %v", err)
	}
	if fromSeq == 0 {
		fromSeq = 1
	}
	if last < fromSeq {
		return nil
	}
	r, err := s.Reader(ctx, fromSeq)
	if err != nil {
		t.Fatalf("reader: %v", err)
	}
	defer r.Close()
	var out []ledger.Record
	for len(out) == 0 || out[len(out)-1].Seq < last {
		recs, err := r.Next(ctx, 1000, ReadWaitTimeout)
		if err != nil {
			t.Fatalf("read: %v", err)
		}
		if len(recs) == 0 {
			t.Fatalf("read: no record within %s after %d records (want up to seq %d)", ReadWaitTimeout, len(out), last)
		}
		out = append(out, recs...)
	}
	return out
}

// ReadWaitTimeout bounds how long ReadAll waits for a record it knows is
// stored.
const ReadWaitTimeout = 10 * time.Second

// FullDiskBlock makes message block number block of stream, in the
// embedded server's storeDir, a link to /dev/full, where every write
// fails with "no space left on device": what a full disk does to
// JetStream's store, without filling one. Call it once the stream exists
// (creating a stream clears its directory) and before JetStream writes
// that block: a stream whose MaxBytes is at most 128 000 keeps 32 KiB
// blocks, so block 2 comes after about a hundred small events. It skips
// the test where there is no /dev/full.
func FullDiskBlock(t testing.TB, storeDir, stream string, block int) {
	t.Helper()
	if _, err := os.Stat("/dev/full"); err != nil {
		t.Skipf("no /dev/full here: %v", err)
	}
	path := filepath.Join(storeDir, "jetstream", "$G", "streams", stream, "msgs", fmt.Sprintf("%d.blk", block))
	if err := os.Symlink("/dev/full", path); err != nil {
		t.Fatalf("link %s to /dev/full: %v", path, err)
	}
}
