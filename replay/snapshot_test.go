package replay

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	bolt "go.etcd.io/bbolt"

	"github.com/quotaledger/quota/ledger"
	"github.com/quotaledger/quota/ledger/ledgertest"
	"github.com/quotaledger/quota/projector"
	"github.com/quotaledger/quota/projector/projectortest"
)

// TestRebuildNamesADamagedSnapshot damages a stored snapshot (a page of
// its file, as a bad sector under the object store would): a rebuild
// starting from it fails naming the snapshot, what is wrong with it and
// --no-snapshot, and one from the first event still rebuilds.
func TestRebuildNamesADamagedSnapshot(t *testing.T) {
	_, _, js := ledgertest.StartServer(t)
	stream := ledgertest.OpenStream(t, js)
	snaps := openSnapshots(t, js)
	ctx := context.Background()
	appendGenerated(t, stream, 7, 400)

	path := filepath.Join(t.TempDir(), "live.db")
	p, err := projector.Open(projector.Config{Path: path, NoSync: true, Logger: slog.New(slog.DiscardHandler)}, stream)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	runCtx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- p.Run(runCtx) }()
	waitCtx, cancel := context.WithTimeout(ctx, waitTimeout)
	err = p.CatchUp(waitCtx)
	cancel()
	stop()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if err != nil {
		t.Fatal(err)
	}
	info, err := snaps.Write(ctx, p, projector.SnapshotPeriodic)
	if err != nil {
		t.Fatal(err)
	}
	damageSnapshot(t, js, snaps, info.Name)

	kept := filepath.Join(t.TempDir(), "kept.db")
	_, err = Rebuild(ctx, stream, Options{Snapshots: snaps, Path: kept})
	if !errors.Is(err, projector.ErrSnapshotUnusable) || !errors.Is(err, projector.ErrDamaged) {
		t.Fatalf("rebuild from the damaged snapshot: %v, want ErrSnapshotUnusable and ErrDamaged", err)
	}
	for _, want := range []string{info.Name, "--no-snapshot"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q lacks %q", err, want)
		}
	}
	if strings.Contains(err.Error(), "move it aside") {
		t.Errorf("error %q advises moving a snapshot's temporary copy aside", err)
	}

	// The failed rebuild left no file at its path: the next one takes it.
	if _, err := os.Stat(kept); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("after the failed rebuild, %s: %v; want it gone", kept, err)
	}
	res, err := Rebuild(ctx, stream, Options{Path: kept})
	if err != nil {
		t.Fatalf("rebuild from the first event: %v", err)
	}
	defer res.Close()
	if res.Seq != p.Applied() {
		t.Errorf("rebuilt to seq %d, want %d", res.Seq, p.Applied())
	}
}

// damageSnapshot damages a leaf page of the stored snapshot called name,
// keeping its metadata.
func damageSnapshot(t *testing.T, js jetstream.JetStream, snaps *projector.Snapshots, name string) {
	t.Helper()
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "damaged.db")
	if _, err := snaps.Download(ctx, name, path); err != nil {
		t.Fatal(err)
	}
	db, err := bolt.Open(path, 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	projectortest.DamageLeaf(t, db, path, true)
	db.Close()
	store, err := js.ObjectStore(ctx, snaps.Config().Bucket)
	if err != nil {
		t.Fatal(err)
	}
	oi, err := store.GetInfo(ctx, name)
	if err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := store.Put(ctx, oi.ObjectMeta, f); err != nil {
		t.Fatal(err)
	}
}

// appendGenerated appends n events of the generator seeded with seed.
func appendGenerated(t *testing.T, stream *ledger.Stream, seed uint64, n int) {
	t.Helper()
	gen := newStreamGen(seed)
	events := make([]ledger.Event, n)
	for i := range events {
		events[i] = gen.next()
	}
	appendAll(t, stream, events)
}

// TestALiveProjectionOutlivesADamagedFile damages a page of the live
// projection's file while the server runs: the queries and verify read
// the live state in memory and go on, and so does the fold.
func TestALiveProjectionOutlivesADamagedFile(t *testing.T) {
	_, nc, js := ledgertest.StartServer(t)
	stream := ledgertest.OpenStream(t, js)
	snaps := openSnapshots(t, js)
	appendGenerated(t, stream, 11, 400)
	path := filepath.Join(t.TempDir(), "live.db")
	live := startLive(t, path, stream)
	live.waitCaughtUp()
	projectortest.DamageLeaf(t, live.p.DB(), path, true)
	live.damaged = true
	serveAudit(t, nc, live, snaps)

	for _, ns := range []string{"team-a", "team-b", "batch"} {
		body, _ := json.Marshal(projector.ExplainRequest{Namespace: ns})
		m, err := nc.Request(projector.SubjectExplain, body, 10*time.Second)
		if err != nil {
			t.Fatalf("explain %s: %v", ns, err)
		}
		var reply projector.AuditReply
		if err := json.Unmarshal(m.Data, &reply); err != nil || reply.Error != "" {
			t.Fatalf("explain %s: %v %s", ns, err, reply.Error)
		}
	}
	if got := verify(t, nc, stream, snaps); len(got) != 0 {
		t.Fatalf("verify with the file damaged: differences %q, want none", got)
	}
	// The fold goes on. (What a checkpoint over the damage does is
	// projector's TestCheckpointMeetingADamagedPage.)
	appendGenerated(t, stream, 12, 50)
	live.waitCaughtUp()
}

// TestReopenRechargesAProjectionOfOtherRules: a projection file that says
// it was folded under other rules is recharged as it opens, and then
// equals a rebuild of the whole log under this build's rules, key for
// key; a snapshot of it records this build's rules.
func TestReopenRechargesAProjectionOfOtherRules(t *testing.T) {
	_, _, js := ledgertest.StartServer(t)
	stream := ledgertest.OpenStream(t, js)
	snaps := openSnapshots(t, js)
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "live.db")
	live := startLive(t, path, stream)
	gen := newStreamGen(7)
	events := make([]ledger.Event, 100)
	for i := range events {
		events[i] = gen.next()
	}
	appendAll(t, stream, events)
	live.waitCaughtUp()
	live.stop()
	db, err := bolt.Open(path, 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	err = db.Update(func(tx *bolt.Tx) error {
		return tx.Bucket([]byte("meta")).Put([]byte("rules"), binary.BigEndian.AppendUint64(nil, projector.RulesVersion-1))
	})
	if cerr := db.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		t.Fatal(err)
	}
	live.start()
	if got := live.p.Rules(); got != projector.RulesVersion {
		t.Fatalf("a projection of other rules reads as rules %d after it opened, want %d", got, projector.RulesVersion)
	}
	snap, err := snaps.Write(ctx, live.p, projector.SnapshotPeriodic)
	if err != nil {
		t.Fatal(err)
	}
	if snap.Rules != projector.RulesVersion {
		t.Fatalf("snapshot of the recharged projection has rules %d, want %d", snap.Rules, projector.RulesVersion)
	}
	r, err := Rebuild(ctx, stream, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if diff := Compare(live.p.View(), r.Projector.View()); len(diff) != 0 {
		t.Fatalf("the recharged projection differs from a rebuild: %+v", diff[0])
	}
}
