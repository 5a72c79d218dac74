package replay

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/quotaledger/quota/ledger"
	"github.com/quotaledger/quota/projector"
)

// SnapshotRequestTimeout bounds the wait for the live server to catch up,
// copy its projection and store it.
const SnapshotRequestTimeout = projector.SnapshotTimeout

// Verification is the outcome of Verify.
type Verification struct {
	// Live describes the copy of the live projection that was compared.
	Live projector.SnapshotInfo
	// Rebuilt is the projection folded to Live.Seq from the oldest
	// starting point (Rebuilt.From).
	Rebuilt *Result
	// Differences lists every disagreement; empty means no drift.
	Differences []Difference
}

// Close releases the rebuilt projection.
func (v *Verification) Close() error { return v.Rebuilt.Close() }

// Verify asks the live server (over nc) for a copy of its projection at its
// applied sequence S, folds the records to exactly S into a fresh file,
// and compares the two bucket by bucket.
//
// The rebuild starts from the oldest starting point that serves (plan.go),
// whatever opts asks, so that it checks as much of the fold as the records
// allow: the first event when the log (or opts.Archive) holds it, else the
// oldest checkpoint in snaps that the records continue. A checkpoint is a
// copy of the live projection, so a drift it was taken after is carried
// into the rebuild and not seen.
func Verify(ctx context.Context, nc *nats.Conn, stream *ledger.Stream, snaps *projector.Snapshots, opts Options) (*Verification, error) {
	dir, err := os.MkdirTemp("", "quota-verify-")
	if err != nil {
		return nil, fmt.Errorf("verify: %w", err)
	}
	defer os.RemoveAll(dir)
	livePath := filepath.Join(dir, "live.db")
	info, err := liveCopy(ctx, nc, snaps, opts.Member, livePath)
	if err != nil {
		return nil, err
	}
	// A page damaged in the live file is copied into its snapshot as it
	// is: LoadFile checks every page first.
	live, err := projector.LoadFile(livePath)
	if err != nil {
		return nil, fmt.Errorf("verify: the live projection's copy %s: %w", info.Name, err)
	}

	opts.Snapshots, opts.oldest, opts.At = snaps, true, time.Time{}
	seq := info.Seq
	rebuilt, err := rebuild(ctx, stream, opts, &seq)
	if err != nil {
		return nil, fmt.Errorf("verify: %w", err)
	}
	v := &Verification{Live: info, Rebuilt: rebuilt}
	v.Differences = Compare(live, rebuilt.Projector.View())
	return v, nil
}

// liveCopyAttempts bounds the copies of the live projection Verify asks
// for when each arrives damaged.
const liveCopyAttempts = 3

// liveCopy asks the live server for a copy of its projection and
// downloads it to path. A copy the object store returns with another
// digest than it was stored with is deleted and a new one asked for, up
// to liveCopyAttempts in all: the copy is only a way to read the live
// projection. Each copy is deleted once read.
func liveCopy(ctx context.Context, nc *nats.Conn, snaps *projector.Snapshots, member, path string) (projector.SnapshotInfo, error) {
	var damaged []error
	for range liveCopyAttempts {
		info, err := requestSnapshot(ctx, nc, member)
		if err != nil {
			return projector.SnapshotInfo{}, errors.Join(append(damaged, err)...)
		}
		_, err = snaps.Download(ctx, info.Name, path)
		snaps.Delete(context.WithoutCancel(ctx), info.Name)
		if err == nil {
			return info, nil
		}
		if !errors.Is(err, jetstream.ErrDigestMismatch) {
			return projector.SnapshotInfo{}, fmt.Errorf("verify: %w", err)
		}
		damaged = append(damaged, fmt.Errorf("verify: %w", err))
	}
	return projector.SnapshotInfo{}, fmt.Errorf("verify: %d copies of the live projection arrived damaged: %w", liveCopyAttempts, errors.Join(damaged...))
}

// requestSnapshot asks the live server (the one named member, when set)
// to write a verify snapshot.
func requestSnapshot(ctx context.Context, nc *nats.Conn, member string) (projector.SnapshotInfo, error) {
	body, _ := json.Marshal(projector.SnapshotRequest{Kind: projector.SnapshotVerify})
	ctx, cancel := context.WithTimeout(ctx, SnapshotRequestTimeout)
	defer cancel()
	subject := projector.SubjectSnapshot
	if member != "" {
		subject = projector.MemberSubject(subject, member)
	}
	msg, err := nc.RequestWithContext(ctx, subject, body)
	if err != nil {
		return projector.SnapshotInfo{}, fmt.Errorf("ask the live server for a snapshot (%s): %w", subject, err)
	}
	var reply projector.AuditReply
	if err := json.Unmarshal(msg.Data, &reply); err != nil {
		return projector.SnapshotInfo{}, fmt.Errorf("bad snapshot reply: %w", err)
	}
	if reply.Error != "" {
		return projector.SnapshotInfo{}, fmt.Errorf("live server: %w", errors.New(reply.Error))
	}
	if reply.Snapshot == nil {
		return projector.SnapshotInfo{}, errors.New("live server replied without a snapshot")
	}
	return *reply.Snapshot, nil
}
