package projector

import "errors"

var (
	// ErrInvariant is wrapped by every error that reports a broken
	// invariant of the projection (usage below zero, a sequence applied
	// twice): a bug, never bad input. The projector stops on it.
	ErrInvariant = errors.New("projection invariant broken")
	// ErrSchemaVersion is returned by Open when the projection file was
	// written by a different layout version. Moving it aside rebuilds it.
	ErrSchemaVersion = errors.New("projection file has another schema version")
	// ErrUnreadable is returned by Open for a file bbolt cannot read (not
	// a bbolt file, or one whose both meta pages are damaged).
	ErrUnreadable = errors.New("projection file unreadable")
	// ErrDamaged is returned by Open for a file whose meta pages bbolt
	// reads but whose consistency check finds a page damaged further in.
	ErrDamaged = errors.New("projection file damaged")
	// ErrOtherStream is returned by Open for a file built from another
	// stream than the one given: one deleted and created again since (a
	// wiped JetStream store), or another cluster's.
	ErrOtherStream = errors.New("projection file built from another stream")
	// ErrNotCaughtUp is returned by WaitApplied when the projection does not
	// reach the requested sequence before the context ends.
	ErrNotCaughtUp = errors.New("projection has not caught up with the stream")
	// ErrQuotaNotFound is returned by queries naming a quota that the
	// projection does not hold.
	ErrQuotaNotFound = errors.New("quota not found")
	// ErrConfig is wrapped by Config.Validate.
	ErrConfig = errors.New("invalid projector config")
	// ErrWrite is wrapped by a checkpoint's error (Checkpoint, and Run's
	// when one of its checkpoints fails) when the projection file cannot
	// be written (a full disk, a file size limit, an I/O error). The file
	// still holds the checkpoint before it; Run stops.
	ErrWrite = errors.New("projection file cannot be written")
)

var (
	// ErrNoSnapshots is returned by OpenSnapshotsExisting when the snapshot
	// store does not exist (no server has written one).
	ErrNoSnapshots = errors.New("no snapshot store")
	// ErrLogGap is returned by Run when the log hands the projection a
	// record that does not follow its applied sequence: the events
	// between were trimmed from the log before it applied them.
	ErrLogGap = errors.New("the log does not continue the projection")
	// ErrNoCheckpoint is returned when a projection must start from a
	// checkpoint (the log no longer holds its first events) and none
	// usable by this build is stored.
	ErrNoCheckpoint = errors.New("no checkpoint covers the events trimmed from the log")
	// ErrSnapshotUnusable is returned when a stored snapshot lacks the
	// metadata that says which sequence it reflects, or its file does not
	// agree with that metadata.
	ErrSnapshotUnusable = errors.New("snapshot is not usable")
)
