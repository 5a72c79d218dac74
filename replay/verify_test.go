package replay

import (
	"context"
	"encoding/json"
	"errors"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/quotaledger/quota/ledger"
	"github.com/quotaledger/quota/ledger/ledgertest"
	"github.com/quotaledger/quota/projector"
)

// serveDamagedCopies answers snapshot requests in place of the server's
// responder: each writes a real verify snapshot of live's projection, and
// the first damaged ones (a chunk more in the store than the object was
// stored with, so that its digest no longer matches) are damaged before
// the reply. It returns how many requests it answered.
func serveDamagedCopies(t *testing.T, nc *nats.Conn, js jetstream.JetStream, live *liveProjector, snaps *projector.Snapshots, damaged int64) *atomic.Int64 {
	t.Helper()
	store, err := js.ObjectStore(context.Background(), projector.DefaultSnapshotBucket)
	if err != nil {
		t.Fatal(err)
	}
	var answered atomic.Int64
	sub, err := nc.Subscribe(projector.SubjectSnapshot, func(m *nats.Msg) {
		ctx := context.Background()
		reply := projector.AuditReply{}
		info, err := snaps.Write(ctx, live.p, projector.SnapshotVerify)
		if err == nil && answered.Add(1) <= damaged {
			var oi *jetstream.ObjectInfo
			if oi, err = store.GetInfo(ctx, info.Name); err == nil {
				_, err = js.Publish(ctx, "$O."+projector.DefaultSnapshotBucket+".C."+oi.NUID, []byte("damage"))
			}
		}
		if err != nil {
			reply.Error = err.Error()
		} else {
			reply.Snapshot = &info
		}
		b, _ := json.Marshal(reply)
		_ = m.Respond(b)
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = sub.Unsubscribe() })
	if err := nc.Flush(); err != nil {
		t.Fatal(err)
	}
	return &answered
}

// TestVerifyAsksAgainForADamagedCopy damages the first copy of the live
// projection in the object store: Verify deletes it, asks for another and
// compares that one; when every copy arrives damaged it fails, saying so.
func TestVerifyAsksAgainForADamagedCopy(t *testing.T) {
	for _, tc := range []struct {
		damaged  int64
		requests int64
	}{{1, 2}, {liveCopyAttempts, liveCopyAttempts}} {
		_, nc, js := ledgertest.StartServer(t)
		stream := ledgertest.OpenStream(t, js)
		snaps := openSnapshots(t, js)
		live := startLive(t, filepath.Join(t.TempDir(), "live.db"), stream)
		appendAll(t, stream, []ledger.Event{computeQuota("team-a"), upsertPod("team-a", "web-1", "500m")})
		live.waitCaughtUp()
		answered := serveDamagedCopies(t, nc, js, live, snaps, tc.damaged)
		v, err := Verify(context.Background(), nc, stream, snaps, Options{})
		if n := answered.Load(); n != tc.requests {
			t.Errorf("%d damaged: %d copies asked for, want %d", tc.damaged, n, tc.requests)
		}
		if tc.damaged < liveCopyAttempts {
			if err != nil {
				t.Fatalf("%d damaged: %v", tc.damaged, err)
			}
			if len(v.Differences) != 0 {
				t.Errorf("%d damaged: differences %v, want none", tc.damaged, v.Differences)
			}
			v.Close()
		} else if !errors.Is(err, jetstream.ErrDigestMismatch) || !strings.Contains(err.Error(), "arrived damaged") {
			t.Errorf("every copy damaged: got %v, want an error saying so", err)
		}
		store, err := js.ObjectStore(context.Background(), projector.DefaultSnapshotBucket)
		if err != nil {
			t.Fatal(err)
		}
		if left, err := store.List(context.Background()); !errors.Is(err, jetstream.ErrNoObjectsFound) {
			t.Errorf("%d damaged: copies left in the store: %d, %v; want none", tc.damaged, len(left), err)
		}
	}
}
