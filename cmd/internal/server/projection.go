package server

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"time"

	"github.com/quotaledger/quota/ledger"
	"github.com/quotaledger/quota/projector"
)

// openProjection opens the projection file, or starts it from the newest
// checkpoint this build can use when there is none, or when the one
// there cannot go on: it has another layout (SchemaVersion) than this
// build's, or the log was trimmed past it (its next event is gone). A
// file or checkpoint folded under other charging rules is recharged as
// it opens (projector.Recharge): every charge is recomputed from the
// objects it holds, with no need of the log. The projection holds
// nothing the log and its checkpoints do not, so its layout is never
// migrated. The old file is moved aside, not deleted, and the new one
// catches up with the log before admission takes requests. Without a
// usable checkpoint it folds the log from its first event, which only a
// log never trimmed allows.
func openProjection(ctx context.Context, cfg projector.Config, stream *ledger.Stream, snaps *projector.Snapshots, log *slog.Logger) (*projector.Projector, error) {
	st, err := stream.Status(ctx)
	if err != nil {
		return nil, err
	}
	first := max(st.FirstSeq, 1)
	if info, err := os.Stat(cfg.Path); err != nil || info.Size() == 0 {
		return startProjection(ctx, cfg, stream, snaps, st, "", log)
	}
	proj, err := projector.Open(cfg, stream)
	var what string
	switch {
	case errors.Is(err, projector.ErrSchemaVersion):
		what = "layout"
	case err != nil:
		return nil, err
	case proj.Applied()+1 < first:
		what = fmt.Sprintf("behind-%d", proj.Applied())
		if err := proj.Close(); err != nil {
			return nil, fmt.Errorf("close projection %s: %w", cfg.Path, err)
		}
	default:
		return proj, nil
	}
	return startProjection(ctx, cfg, stream, snaps, st, what, log)
}

// startProjection moves the file at cfg.Path aside as cfg.Path.what
// (when what is set) and opens a new one from the newest checkpoint the
// log continues, or from the log's first event when it was never
// trimmed.
func startProjection(ctx context.Context, cfg projector.Config, stream *ledger.Stream, snaps *projector.Snapshots, st ledger.LogStatus, what string, log *slog.Logger) (*projector.Projector, error) {
	first := max(st.FirstSeq, 1)
	base, ok, err := newestBase(ctx, snaps, st)
	if err != nil {
		return nil, err
	}
	if !ok && first > 1 {
		return nil, fmt.Errorf("projection %s: %w: the log starts at seq %d and %s holds no checkpoint of schema %d at seq %d or later to start from",
			cfg.Path, projector.ErrNoCheckpoint, first, snaps.Config().Bucket, projector.SchemaVersion, first-1)
	}
	if what != "" {
		aside := cfg.Path + "." + what
		if err := os.Rename(cfg.Path, aside); err != nil {
			return nil, fmt.Errorf("projection %s cannot go on (%s), and moving it aside to start again failed: %w", cfg.Path, what, err)
		}
		log.Warn("the projection cannot go on (another layout than this build's, or the log was trimmed past it): rebuilding it from the stream and its checkpoints; the old file is kept aside",
			"path", cfg.Path, "aside", aside, "build_schema", projector.SchemaVersion, "build_rules", projector.RulesVersion)
	}
	if ok {
		if _, err := snaps.Download(ctx, base.Name, cfg.Path); err != nil {
			os.Remove(cfg.Path)
			return nil, fmt.Errorf("projection %s: start from checkpoint: %w", cfg.Path, err)
		}
		log.Info("projection starts from a checkpoint", "checkpoint", base.Name, "seq", base.Seq, "time", base.Time, "stream_last_seq", st.LastSeq)
	} else {
		log.Info("projection starts from the log's first event", "stream_last_seq", st.LastSeq)
	}
	proj, err := projector.Open(cfg, stream)
	if err != nil && ok {
		os.Remove(cfg.Path)
		return nil, fmt.Errorf("projection %s: checkpoint %s: %w", cfg.Path, base.Name, err)
	}
	return proj, err
}

// newestBase returns the newest checkpoint this build can use that the
// log continues: at seq first-1 or later, and not past its last event.
func newestBase(ctx context.Context, snaps *projector.Snapshots, st ledger.LogStatus) (projector.SnapshotInfo, bool, error) {
	info, ok, err := snaps.Newest(ctx, st.LastSeq, time.Time{})
	if err != nil || !ok || info.Seq+1 < max(st.FirstSeq, 1) {
		return projector.SnapshotInfo{}, false, err
	}
	return info, true, nil
}
