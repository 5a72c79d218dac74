package replay

import (
	"context"
	"errors"
	"flag"
	"log/slog"
	"math/rand/v2"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	bolt "go.etcd.io/bbolt"

	"github.com/quotaledger/quota/projector/buckets"

	"github.com/quotaledger/quota/ledger"
	"github.com/quotaledger/quota/ledger/ledgertest"
	"github.com/quotaledger/quota/projector"
	"github.com/quotaledger/quota/projector/usedtest"
)

var seedFlag = flag.Uint64("seed", 0, "seed of the property test (0: from the clock)")

// waitTimeout bounds every wait for the live projector in these tests.
const waitTimeout = 30 * time.Second

// liveProjector runs a projector on a file as the server does, and can be
// stopped and reopened at any point as a restart would.
type liveProjector struct {
	t      testing.TB
	path   string
	stream *ledger.Stream
	p      *projector.Projector
	cancel context.CancelFunc
	done   chan error
	// damaged is set by a test that damages the file on purpose: stop
	// then checks that the damage is still found instead of checking
	// the figures, which cannot be read.
	damaged bool
}

func startLive(t testing.TB, path string, stream *ledger.Stream) *liveProjector {
	l := &liveProjector{t: t, path: path, stream: stream}
	l.start()
	t.Cleanup(l.stop)
	return l
}

func (l *liveProjector) start() {
	p, err := projector.Open(projector.Config{Path: l.path, NoSync: true, BatchSizeMax: 64, Logger: slog.New(slog.DiscardHandler)}, l.stream)
	if err != nil {
		l.t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	l.p, l.cancel, l.done = p, cancel, make(chan error, 1)
	go func() { l.done <- p.Run(ctx) }()
}

func (l *liveProjector) stop() {
	if l.p == nil {
		return
	}
	l.cancel()
	err := <-l.done
	if l.damaged {
		// Its last checkpoint meets the damaged page, misses it, or
		// replaces the file.
		if err != nil && (!errors.Is(err, projector.ErrWrite) || !strings.Contains(err.Error(), "damaged")) {
			l.t.Errorf("projector run over a damaged file: %v, want none or ErrWrite naming the damage", err)
		}
		_ = l.p.Discard()
		l.p = nil
		return
	}
	if err != nil {
		l.t.Errorf("projector run: %v", err)
	}
	usedtest.CheckUsed(l.t, l.p.DB())
	if err := l.p.Close(); err != nil {
		l.t.Errorf("close projector: %v", err)
	}
	l.p = nil
}

func (l *liveProjector) restart() {
	l.stop()
	l.start()
}

func (l *liveProjector) waitCaughtUp() {
	l.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), waitTimeout)
	defer cancel()
	if err := l.p.CatchUp(ctx); err != nil {
		l.t.Fatal(err)
	}
}

// appendAll appends events in order and fails the test on any error.
func appendAll(t testing.TB, s *ledger.Stream, events []ledger.Event) {
	t.Helper()
	for len(events) > 0 {
		n := min(len(events), 1000)
		entries := make([]ledger.BatchEntry, n)
		for i := range entries {
			entries[i] = ledger.BatchEntry{Event: events[i]}
		}
		if _, err := s.AppendBatch(context.Background(), entries); err != nil {
			t.Fatal(err)
		}
		events = events[n:]
	}
}

// requireSame fails with every difference between two projections.
func requireSame(t testing.TB, what string, live, rebuilt *buckets.Set) {
	t.Helper()
	diffs := Compare(live, rebuilt)
	if len(diffs) > 0 {
		lines := make([]string, 0, len(diffs))
		for _, d := range diffs {
			lines = append(lines, d.String())
		}
		t.Fatalf("%s: %d differences:\n%s", what, len(diffs), strings.Join(lines, "\n"))
	}
}

func openSnapshots(t testing.TB, js jetstream.JetStream) *projector.Snapshots {
	t.Helper()
	s, err := projector.OpenSnapshots(context.Background(), js, projector.SnapshotConfig{Storage: jetstream.MemoryStorage, Keep: 2})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// TestReplayEqualsLiveFold is the property test: a random valid stream,
// folded live with restarts at random points and snapshots along the way,
// replays to the same bytes in every bucket, from the first event and from
// a snapshot, at the end and at every snapshot's sequence.
func TestReplayEqualsLiveFold(t *testing.T) {
	seed := *seedFlag
	if seed == 0 {
		seed = uint64(time.Now().UnixNano())
	}
	t.Logf("seed %d (rerun with: go test ./replay -run TestReplayEqualsLiveFold -seed %d)", seed, seed)
	rounds, perRound := 12, 150
	if testing.Short() {
		rounds = 4
	}
	_, _, js := ledgertest.StartServer(t)
	stream := ledgertest.OpenStream(t, js)
	snaps := openSnapshots(t, js)
	live := startLive(t, filepath.Join(t.TempDir(), "live.db"), stream)
	gen := newStreamGen(seed)
	rng := rand.New(rand.NewPCG(seed, 1))
	ctx := context.Background()

	var taken []projector.SnapshotInfo
	for round := range rounds {
		events := make([]ledger.Event, perRound)
		for i := range events {
			events[i] = gen.next()
		}
		// Append in pieces, restarting the projector between some of them
		// so that it stops and resumes at arbitrary sequences.
		for len(events) > 0 {
			n := 1 + rng.IntN(len(events))
			appendAll(t, stream, events[:n])
			events = events[n:]
			if rng.IntN(3) == 0 {
				live.restart()
			}
		}
		live.waitCaughtUp()
		if round%3 == 1 {
			info, err := snaps.Write(ctx, live.p, projector.SnapshotPeriodic)
			if err != nil {
				t.Fatal(err)
			}
			taken = append(taken, info)
		}
	}
	live.waitCaughtUp()
	last := live.p.Applied()

	fromStart, err := Rebuild(ctx, stream, Options{BatchSizeMax: 1 + rng.IntN(5000)})
	if err != nil {
		t.Fatal(err)
	}
	defer fromStart.Close()
	if fromStart.Seq != last || fromStart.Snapshot != nil {
		t.Fatalf("rebuild from start: seq %d snapshot %v, want seq %d and none", fromStart.Seq, fromStart.Snapshot, last)
	}
	requireSame(t, "replay from the first event", live.p.View(), fromStart.Projector.View())
	requireRichState(t, live.p)

	fromSnap, err := Rebuild(ctx, stream, Options{Snapshots: snaps})
	if err != nil {
		t.Fatal(err)
	}
	defer fromSnap.Close()
	if fromSnap.Snapshot == nil || fromSnap.Snapshot.Seq != taken[len(taken)-1].Seq {
		t.Fatalf("rebuild from snapshot started at %+v, want the newest, %+v", fromSnap.Snapshot, taken[len(taken)-1])
	}
	requireSame(t, "replay from the newest snapshot", live.p.View(), fromSnap.Projector.View())

	// Each snapshot is the live state at its sequence: a replay to that
	// sequence must equal it.
	for _, info := range taken {
		path := filepath.Join(t.TempDir(), "snap.db")
		if _, err := snaps.Download(ctx, info.Name, path); err != nil {
			if errors.Is(err, jetstream.ErrObjectNotFound) {
				continue // pruned: only the newest Keep remain
			}
			t.Fatal(err)
		}
		snapDB, err := bolt.Open(path, 0o600, &bolt.Options{ReadOnly: true})
		if err != nil {
			t.Fatal(err)
		}
		r, err := Rebuild(ctx, stream, Options{UntilSeq: info.Seq, BatchSizeMax: 1 + rng.IntN(300)})
		if err != nil {
			t.Fatal(err)
		}
		snapSet, err := projector.LoadDB(snapDB)
		if err != nil {
			t.Fatal(err)
		}
		requireSame(t, "replay to seq of "+info.Name, snapSet, r.Projector.View())
		r.Close()
		snapDB.Close()
	}
}

// requireRichState guards the property test against a generator that
// stopped producing what it claims: the state must hold charged quotas,
// reservations' effects and few skipped records.
func requireRichState(t testing.TB, p *projector.Projector) {
	t.Helper()
	list, err := p.Quotas("", "", true)
	if err != nil {
		t.Fatal(err)
	}
	charged := 0
	for _, q := range list.Items {
		for _, v := range q.Status.Used {
			if !v.IsZero() {
				charged++
			}
		}
	}
	skipped := 0
	_ = p.View().Bucket([]byte("skipped")).ForEach(func(k, v []byte) error {
		skipped++
		t.Logf("skipped: %s", v)
		return nil
	})
	t.Logf("%d quotas, %d non-zero used figures, %d skipped records", len(list.Items), charged, skipped)
	if len(list.Items) < 3 || charged < 5 {
		t.Fatalf("generated state is thin: %d quotas, %d non-zero used figures", len(list.Items), charged)
	}
}
