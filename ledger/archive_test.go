package ledger_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/quotaledger/quota/ledger"
	"github.com/quotaledger/quota/ledger/ledgertest"
)

// appendPods appends n pod upserts across three namespaces, and returns
// the stream's records.
func appendPods(t *testing.T, s *ledger.Stream, n int) []ledger.Record {
	t.Helper()
	ctx := context.Background()
	for i := range n {
		ns := fmt.Sprintf("team-%d", i%3)
		obj := json.RawMessage(fmt.Sprintf(`{"apiVersion":"v1","kind":"Pod","metadata":{"name":"p%d","namespace":%q}}`, i, ns))
		if _, err := s.Append(ctx, ledger.Event{Type: ledger.Upsert, Resource: "pods", Namespace: ns, Name: fmt.Sprintf("p%d", i), Object: obj}, ledger.AppendOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	return ledgertest.ReadAll(t, s, 1)
}

// readArchive reads the archive's records from from to to.
func readArchive(t *testing.T, a *ledger.Archive, from, to uint64) ([]ledger.Record, error) {
	t.Helper()
	var got []ledger.Record
	_, err := a.Read(context.Background(), from, to, 7, func(recs []ledger.Record) error {
		got = append(got, recs...)
		return nil
	})
	return got, err
}

// sameRecord compares what the archive gives back with what the stream
// held.
func sameRecord(got, want ledger.Record) error {
	if got.Seq != want.Seq || got.Subject != want.Subject || got.Namespace != want.Namespace || !got.Time.Equal(want.Time) || !bytes.Equal(got.Raw, want.Raw) {
		return fmt.Errorf("got seq %d %s %s %s %q, want seq %d %s %s %s %q", got.Seq, got.Subject, got.Namespace, got.Time, got.Raw, want.Seq, want.Subject, want.Namespace, want.Time, want.Raw)
	}
	if (got.Err == nil) != (want.Err == nil) || got.Event.Name != want.Event.Name || got.Event.Type != want.Event.Type || !bytes.Equal(got.Event.Object, want.Event.Object) {
		return fmt.Errorf("seq %d: event %+v (err %v), want %+v (err %v)", got.Seq, got.Event, got.Err, want.Event, want.Err)
	}
	return nil
}

// TestArchiveKeepsWhatTheStreamHeld copies a stream into an archive in
// overlapping segments, a record that never decoded among them, and reads
// it back: every record as the stream held it, each sequence once, from
// any point; a listing names each segment by its sequences and times, and
// ignores a temporary file.
func TestArchiveKeepsWhatTheStreamHeld(t *testing.T) {
	_, nc, js := ledgertest.StartServer(t)
	s := ledgertest.OpenStream(t, js)
	appendPods(t, s, 20)
	// A message that is not an event: the archive keeps its bytes.
	if err := nc.Publish(ledger.Subject("team-0"), []byte("not json {")); err != nil {
		t.Fatal(err)
	}
	nc.Flush()
	want := appendPods(t, s, 20)
	if len(want) != 41 || want[20].Err == nil {
		t.Fatalf("stream holds %d records, seq 21 err %v; want 41 and an undecodable seq 21", len(want), want[20].Err)
	}
	dir := t.TempDir()
	a, err := ledger.OpenArchive(dir, false)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	for _, r := range [][2]uint64{{1, 15}, {10, 30}, {31, 41}} {
		if _, err := a.Copy(ctx, s, r[0], r[1], 5*time.Second); err != nil {
			t.Fatalf("copy %v: %v", r, err)
		}
	}
	if err := os.WriteFile(filepath.Join(dir, ".tmp-123"), []byte("half"), 0o600); err != nil {
		t.Fatal(err)
	}
	segs, err := a.Segments()
	if err != nil || len(segs) != 3 {
		t.Fatalf("segments: %+v, %v; want 3", segs, err)
	}
	if s := segs[1]; s.FirstSeq != 10 || s.LastSeq != 30 || !s.FirstTime.Equal(want[9].Time.UTC()) || !s.LastTime.Equal(want[29].Time.UTC()) ||
		!strings.HasPrefix(s.Name, "events-00000000000000000010-00000000000000000030-") {
		t.Errorf("second segment %+v, want seq 10 to 30 at %s to %s", s, want[9].Time, want[29].Time)
	}
	if first, last, err := a.Covered(); first != 1 || last != 41 || err != nil {
		t.Errorf("covered: %d to %d, %v; want 1 to 41", first, last, err)
	}
	for _, from := range []uint64{1, 12, 31, 41} {
		got, err := readArchive(t, a, from, 0)
		if err != nil {
			t.Fatalf("read from %d: %v", from, err)
		}
		if len(got) != 42-int(from) {
			t.Fatalf("read from %d: %d records, want %d", from, len(got), 42-int(from))
		}
		for i, g := range got {
			if err := sameRecord(g, want[int(from)-1+i]); err != nil {
				t.Fatalf("read from %d: %v", from, err)
			}
		}
	}
	if got, err := readArchive(t, a, 5, 11); err != nil || len(got) != 7 || got[6].Seq != 11 {
		t.Errorf("read 5 to 11: %d records, %v; want seq 5 to 11", len(got), err)
	}
}

// TestArchiveRefusesAGapAndAFalseName removes a segment from the middle of
// an archive, then renames one to claim sequences it does not hold: a
// read across either fails with ErrArchive naming the file or the gap,
// rather than folding past what is missing.
func TestArchiveRefusesAGapAndAFalseName(t *testing.T) {
	_, _, js := ledgertest.StartServer(t)
	s := ledgertest.OpenStream(t, js)
	appendPods(t, s, 30)
	dir := t.TempDir()
	a, err := ledger.OpenArchive(dir, false)
	if err != nil {
		t.Fatal(err)
	}
	var segs []ledger.ArchiveSegment
	for _, r := range [][2]uint64{{1, 10}, {11, 20}, {21, 30}} {
		got, err := a.Copy(context.Background(), s, r[0], r[1], 5*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		segs = append(segs, got...)
	}
	if err := os.Remove(filepath.Join(dir, segs[1].Name)); err != nil {
		t.Fatal(err)
	}
	if _, err := readArchive(t, a, 1, 0); !errors.Is(err, ledger.ErrArchive) || !strings.Contains(err.Error(), "seq 11 to 20 are in no segment") {
		t.Errorf("read across the gap: %v, want ErrArchive naming seq 11 to 20", err)
	}
	if first, last, _ := a.Covered(); first != 1 || last != 10 {
		t.Errorf("covered: %d to %d, want 1 to 10", first, last)
	}
	if got, err := readArchive(t, a, 21, 0); err != nil || len(got) != 10 {
		t.Errorf("read after the gap: %d records, %v; want 10", len(got), err)
	}
	claimed := strings.Replace(segs[2].Name, "-00000000000000000030-", "-00000000000000000031-", 1)
	if err := os.Rename(filepath.Join(dir, segs[2].Name), filepath.Join(dir, claimed)); err != nil {
		t.Fatal(err)
	}
	if _, err := readArchive(t, a, 21, 0); !errors.Is(err, ledger.ErrArchive) || !strings.Contains(err.Error(), claimed) {
		t.Errorf("read a segment that holds less than its name says: %v, want ErrArchive naming %s", err, claimed)
	}
}

// TestArchiveKeepsCheckpoints stores opaque checkpoint bytes and reads
// them back, named by sequence, time and tag.
func TestArchiveKeepsCheckpoints(t *testing.T) {
	a, err := ledger.OpenArchive(filepath.Join(t.TempDir(), "new"), true)
	if err != nil {
		t.Fatal(err)
	}
	at := time.Date(2026, 11, 28, 9, 56, 9, 123456789, time.UTC)
	body := bytes.Repeat([]byte("bbolt page "), 1000)
	if _, err := a.PutCheckpoint(42, at, "s8.r2", bytes.NewReader(body)); err != nil {
		t.Fatal(err)
	}
	if _, err := a.PutCheckpoint(7, at, "bad tag", bytes.NewReader(body)); !errors.Is(err, ledger.ErrArchive) {
		t.Errorf("a tag with a space: %v, want ErrArchive", err)
	}
	list, err := a.Checkpoints()
	if err != nil || len(list) != 1 || list[0].Seq != 42 || !list[0].Time.Equal(at) || list[0].Tag != "s8.r2" || list[0].Bytes >= int64(len(body)) {
		t.Fatalf("checkpoints: %+v, %v; want seq 42 at %s tagged s8.r2, compressed", list, err, at)
	}
	r, err := a.OpenCheckpoint(list[0])
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	got, err := io.ReadAll(r)
	if err != nil || !bytes.Equal(got, body) {
		t.Errorf("read back %d bytes (%v), want the %d written", len(got), err, len(body))
	}
	if _, err := ledger.OpenArchive(filepath.Join(t.TempDir(), "missing"), false); err == nil {
		t.Error("a missing directory opened without create")
	}
}

// TestPurgeBeforeKeepsTheCompareAndSwap trims a log past the last event
// of one namespace: an append expecting that event's sequence (what the
// projection saw) goes in, since the log knows of no later one, while an
// append with a stale expectation in a namespace whose later events the
// log holds is still a conflict. A stream made denying purges keeps
// denying them, opened again with AllowPurge, as JetStream cannot lift a
// denial; one made allowing them keeps allowing them without it.
func TestPurgeBeforeKeepsTheCompareAndSwap(t *testing.T) {
	_, _, js := ledgertest.StartServer(t)
	denied := ledgertest.OpenStream(t, js)
	appendPods(t, denied, 3)
	ctx := context.Background()
	denied = ledgertest.OpenStreamConfig(t, js, ledger.Config{AllowPurge: true})
	if _, err := denied.PurgeBefore(ctx, 2); !errors.Is(err, ledger.ErrPurgeDenied) || denied.PurgeAllowed() {
		t.Fatalf("purge of a stream made denying it: %v, want ErrPurgeDenied", err)
	}
	_, _, js = ledgertest.StartServer(t)
	ledgertest.OpenStreamConfig(t, js, ledger.Config{AllowPurge: true})
	s := ledgertest.OpenStream(t, js)
	if !s.PurgeAllowed() {
		t.Fatal("a stream made allowing purges denies them once opened without AllowPurge")
	}
	// seq 1..3: team-0, team-1, team-2; then team-1 again at seq 4..6.
	recs := appendPods(t, s, 6)
	if n, err := s.PurgeBefore(ctx, 4); err != nil || n != 3 {
		t.Fatalf("purge before seq 4: %d, %v; want 3", n, err)
	}
	if n, err := s.PurgeBefore(ctx, 4); err != nil || n != 0 {
		t.Errorf("purge again: %d, %v; want nothing more", n, err)
	}
	if recs[2].Namespace != "team-2" {
		t.Fatalf("seq 3 is of %s", recs[2].Namespace)
	}
	// team-2's last event was seq 3 ... and seq 6.
	// team-1: seq 2 and seq 5; its seq 2 is gone but seq 5 is held.
	stale := uint64(2)
	if _, err := s.Append(ctx, ledger.Event{Type: ledger.Delete, Resource: "pods", Namespace: "team-1", Name: "p1"}, ledger.AppendOptions{ExpectLastSubjectSeq: &stale}); !errors.Is(err, ledger.ErrConflict) {
		t.Errorf("append expecting a trimmed seq of a namespace with later events: %v, want ErrConflict", err)
	}
	if n, err := s.PurgeBefore(ctx, 7); err != nil || n != 3 {
		t.Fatalf("purge before seq 7: %d, %v", n, err)
	}
	last := uint64(6)
	res, err := s.Append(ctx, ledger.Event{Type: ledger.Delete, Resource: "pods", Namespace: "team-2", Name: "p5"}, ledger.AppendOptions{ExpectLastSubjectSeq: &last})
	if err != nil || res.Seq != 7 {
		t.Errorf("append expecting the namespace's trimmed last event: seq %d, %v; want seq 7", res.Seq, err)
	}
	wrong := uint64(5)
	if _, err := s.Append(ctx, ledger.Event{Type: ledger.Delete, Resource: "pods", Namespace: "team-2", Name: "p2"}, ledger.AppendOptions{ExpectLastSubjectSeq: &wrong}); !errors.Is(err, ledger.ErrConflict) {
		t.Errorf("append expecting a trimmed seq once the namespace has a newer event: %v, want ErrConflict", err)
	}
}
