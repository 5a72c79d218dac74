package projector_test

import (
	"context"
	"encoding/json"
	"errors"
	"path/filepath"
	"strings"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/quotaledger/quota/ledger"
	"github.com/quotaledger/quota/ledger/ledgertest"
	"github.com/quotaledger/quota/projector"
)

// TestOpenRefusesAProjectionOfAnotherStream builds a projection from a
// stream, then deletes the stream and creates it again, as a wiped
// JetStream store does. The new stream's first events have the sequences
// the projection has applied already, so following it would skip them.
// Open refuses the file, naming both streams and how to rebuild; a file
// from before projections recorded their stream is refused by its
// applied sequence, past the new stream's end. Reopened on its own
// stream, the file opens.
func TestOpenRefusesAProjectionOfAnotherStream(t *testing.T) {
	_, _, js := ledgertest.StartServer(t)
	stream := ledgertest.OpenStream(t, js)
	path := filepath.Join(t.TempDir(), "projection.db")
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	p, err := projector.Open(projector.Config{Path: path, NoSync: true}, stream)
	if err != nil {
		t.Fatal(err)
	}
	quota := json.RawMessage(`{"apiVersion":"v1","kind":"ResourceQuota","metadata":{"name":"compute","namespace":"team"},"spec":{"hard":{"pods":"1"}}}`)
	for range 3 {
		if _, err := stream.Append(ctx, ledger.Event{Type: ledger.Upsert, Resource: "resourcequotas", Namespace: "team", Name: "compute", Object: quota}, ledger.AppendOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	runCtx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- p.Run(runCtx) }()
	err = p.CatchUp(ctx)
	stop()
	if rerr := <-done; err != nil || rerr != nil {
		t.Fatal(err, rerr)
	}
	if err := p.Close(); err != nil {
		t.Fatal(err)
	}
	old := stream.Identity()
	// The same stream, opened again: the file opens.
	p, err = projector.Open(projector.Config{Path: path, NoSync: true}, ledgertest.OpenStream(t, js))
	if err != nil {
		t.Fatalf("reopened on its own stream: %v", err)
	}
	p.Close()

	other := ledgertest.RecreateStreams(t, js)
	if other.Identity() == old {
		t.Fatalf("the stream created again has the old identity %q", old)
	}
	_, err = projector.Open(projector.Config{Path: path, NoSync: true}, other)
	if !errors.Is(err, projector.ErrOtherStream) {
		t.Fatalf("on a stream created again: %v, want ErrOtherStream", err)
	}
	for _, want := range []string{path, old, other.Identity(), "move it aside"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q lacks %q", err, want)
		}
	}

	// A file that recorded no stream, as files written before did.
	db, err := bolt.Open(path, 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := db.Update(func(tx *bolt.Tx) error { return tx.DeleteBucket([]byte("stream")) }); err != nil {
		t.Fatal(err)
	}
	db.Close()
	_, err = projector.Open(projector.Config{Path: path, NoSync: true}, ledgertest.RecreateStreams(t, js))
	if !errors.Is(err, projector.ErrOtherStream) || !strings.Contains(err.Error(), "up to seq 3") || !strings.Contains(err.Error(), "ends at seq 0") {
		t.Fatalf("a file without its stream, applied past the stream's end: %v, want ErrOtherStream naming seq 3 and seq 0", err)
	}
}

// TestLastFactTimeFollowsTheFeed applies a cluster fact, then an
// admission's reservation: the time of the last fact is the fact's, kept
// when the file is opened again, and a projection with no stream (a
// replay's) records none.
func TestLastFactTimeFollowsTheFeed(t *testing.T) {
	_, _, js := ledgertest.StartServer(t)
	stream := ledgertest.OpenStream(t, js)
	path := filepath.Join(t.TempDir(), "projection.db")
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	p, err := projector.Open(projector.Config{Path: path, NoSync: true}, stream)
	if err != nil {
		t.Fatal(err)
	}
	if !p.LastFactTime().IsZero() {
		t.Fatalf("a new projection: last fact at %s, want none", p.LastFactTime())
	}
	quota := json.RawMessage(`{"apiVersion":"v1","kind":"ResourceQuota","metadata":{"name":"compute","namespace":"team"},"spec":{"hard":{"pods":"1"}}}`)
	if _, err := stream.Append(ctx, ledger.Event{Type: ledger.Upsert, Resource: "resourcequotas", Namespace: "team", Name: "compute", Object: quota}, ledger.AppendOptions{}); err != nil {
		t.Fatal(err)
	}
	r, err := ledger.EncodeReservation(ledger.Reservation{ID: "r1", Resource: "pods", Name: "web",
		Object: json.RawMessage(`{"apiVersion":"v1","kind":"Pod","metadata":{"name":"web","namespace":"team"},"spec":{"containers":[{"name":"c"}]}}`)})
	if err != nil {
		t.Fatal(err)
	}
	reserve, err := ledger.EncodeReserve("team", time.Minute, "", "test", []ledger.EncodedReservation{r})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := stream.AppendEncoded(ctx, reserve, ledger.AppendOptions{}); err != nil {
		t.Fatal(err)
	}
	records := ledgertest.ReadAll(t, stream, 1)
	if len(records) != 2 {
		t.Fatalf("%d records, want 2", len(records))
	}
	if err := p.Apply(ctx, records); err != nil {
		t.Fatal(err)
	}
	if got, want := p.LastFactTime(), records[0].Time; !got.Equal(want) {
		t.Errorf("last fact at %s, want the upsert's %s (not the reservation's %s)", got, want, records[1].Time)
	}
	p.Close()
	p, err = projector.Open(projector.Config{Path: path, NoSync: true}, stream)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	if got := p.LastFactTime(); !got.Equal(records[0].Time) {
		t.Errorf("reopened: last fact at %s, want %s", got, records[0].Time)
	}

	replayed, err := projector.Open(projector.Config{Path: filepath.Join(t.TempDir(), "replay.db"), NoSync: true}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer replayed.Close()
	if err := replayed.Apply(ctx, records); err != nil {
		t.Fatal(err)
	}
	if err := replayed.DB().View(func(tx *bolt.Tx) error {
		if tx.Bucket([]byte("stream")) != nil {
			return errors.New("a projection following no stream has a stream bucket")
		}
		return nil
	}); err != nil {
		t.Error(err)
	}
}
