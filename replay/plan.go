package replay

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"time"

	"github.com/quotaledger/quota/ledger"
	"github.com/quotaledger/quota/projector"
)

// Where a rebuild starts, and what it reads.
//
// A rebuild folds the records after a starting point: the first event
// (an empty projection at seq 0), a checkpoint of the object store, or a
// checkpoint of the archive. The records come from the archive for the
// sequences before the log's first, then from the log. A starting point
// serves a target when every record from it to the target is held, the
// archive's and the log's together without a gap; the newest that serves
// is taken (Verify takes the oldest). When none does, the rebuild is
// refused with ErrNotCovered, naming the oldest moment that could be
// answered: never is a moment answered from a later state.

// origin is a starting point of a rebuild.
type origin struct {
	seq  uint64
	time time.Time
	// snapshot or archived names the checkpoint; both nil: the first
	// event.
	snapshot *projector.SnapshotInfo
	archived *ledger.ArchiveCheckpoint
}

// name says where a rebuild started, for an operator.
func (o origin) name() string {
	if o.seq == 0 {
		return o.originName()
	}
	return fmt.Sprintf("%s (seq %d, %s)", o.originName(), o.seq, o.time.UTC().Format(time.RFC3339Nano))
}

// originName names the checkpoint o is, without its sequence and time.
func (o origin) originName() string {
	switch {
	case o.snapshot != nil:
		return "checkpoint " + o.snapshot.Name
	case o.archived != nil:
		return "the archive's checkpoint " + o.archived.Name
	}
	return "the first event"
}

// span is a run of sequences held without a gap.
type span struct{ first, last uint64 }

// holdings are the records a rebuild can read: the log's, and the
// archive's first run, which reaches the log when it ends at or past the
// log's first sequence minus one.
type holdings struct {
	log     span // first > last: an empty log
	archive span // zero: no archive, or an empty one
	// lastTime is the stream time of the log's last record.
	lastTime time.Time
}

// readHoldings reads what the log and the archive hold.
func readHoldings(ctx context.Context, stream *ledger.Stream, archive *ledger.Archive) (holdings, error) {
	st, err := stream.Status(ctx)
	if err != nil {
		return holdings{}, fmt.Errorf("rebuild: %w", err)
	}
	h := holdings{log: span{max(st.FirstSeq, 1), st.LastSeq}, lastTime: st.LastTime}
	if st.Messages == 0 {
		h.log.first = st.LastSeq + 1
	}
	if archive != nil {
		if h.archive.first, h.archive.last, err = archive.Covered(); err != nil {
			return holdings{}, fmt.Errorf("rebuild: %w", err)
		}
	}
	return h, nil
}

// reaches reports whether the records after seq from up to seq to are
// all held: from the archive, then the log.
func (h holdings) reaches(from, to uint64) bool {
	next := from + 1
	if next > to {
		return true
	}
	if h.archive.first > 0 && h.archive.first <= next && next <= h.archive.last {
		next = h.archive.last + 1
	}
	if next > to {
		return true
	}
	return h.log.first <= next && to <= h.log.last
}

// origins lists the starting points opts allows, newest first: the
// checkpoints of the object store and of the archive this build can use,
// then the first event.
func origins(ctx context.Context, opts Options) ([]origin, error) {
	var out []origin
	if opts.Snapshots != nil {
		list, err := opts.Snapshots.List(ctx)
		if err != nil {
			return nil, fmt.Errorf("rebuild: %w", err)
		}
		for i := range list {
			if list[i].Usable() {
				out = append(out, origin{seq: list[i].Seq, time: list[i].Time, snapshot: &list[i]})
			}
		}
	}
	if opts.Archive != nil {
		list, err := opts.Archive.Checkpoints()
		if err != nil {
			return nil, fmt.Errorf("rebuild: %w", err)
		}
		tag := projector.CheckpointTag(projector.SchemaVersion, projector.RulesVersion)
		for i := range list {
			if list[i].Tag == tag && list[i].Seq > 0 {
				out = append(out, origin{seq: list[i].Seq, time: list[i].Time, archived: &list[i]})
			}
		}
	}
	// Newest first; on a tie the object store's (listed first, and the
	// sort is stable), which needs no decompression.
	slices.SortStableFunc(out, func(a, b origin) int { return cmp.Compare(b.seq, a.seq) })
	return append(out, origin{}), nil
}

// choose returns the starting point of a rebuild to target (and
// opts.At): the newest that serves, or the oldest with opts.oldest. A
// rebuild with At serves when its starting point is not after At and the
// records after it are held up to the log's end, or, within the archive's
// run, at least to one stored after At.
func choose(list []origin, h holdings, target uint64, opts Options) (origin, bool) {
	var found []origin
	for _, o := range list {
		if o.seq > target || (!opts.At.IsZero() && o.seq > 0 && o.time.After(opts.At)) {
			continue
		}
		if h.reaches(o.seq, target) || (!opts.At.IsZero() && h.archive.first > 0 && h.archive.first <= o.seq+1 && o.seq+1 <= h.archive.last) {
			found = append(found, o)
		}
	}
	if len(found) == 0 {
		return origin{}, false
	}
	if opts.oldest {
		return found[len(found)-1], true
	}
	return found[0], true
}

// notCovered words the refusal of a rebuild no starting point serves:
// the oldest moment and sequence that could be answered, and what would
// answer the one asked.
func notCovered(list []origin, h holdings, target uint64, opts Options) error {
	asked := fmt.Sprintf("seq %d", target)
	if !opts.At.IsZero() {
		asked = opts.At.UTC().Format(time.RFC3339Nano)
	}
	oldest, ok := choose(list, h, h.log.last, Options{oldest: true})
	where, verb := "the log", "answers"
	if opts.Archive != nil {
		where, verb = "the archive and the log", "answer"
	}
	if !ok {
		return fmt.Errorf("%w: %s: no starting point that %s continue (the log starts at seq %d)", ErrNotCovered, asked, where, h.log.first)
	}
	hint := "; 'quota replay --archive DIR' with the archive 'quota serve --archive DIR' wrote answers earlier moments"
	if opts.Archive != nil {
		hint = "; the archive holds nothing earlier that the log continues"
	}
	if oldest.seq == 0 {
		return fmt.Errorf("%w: %s: %s hold the events from the first on, yet not to %s%s", ErrNotCovered, asked, where, asked, hint)
	}
	return fmt.Errorf("%w: %s is before the oldest moment %s %s, %s (seq %d, the state of %s); the events before it are no longer in the log%s",
		ErrNotCovered, asked, where, verb, oldest.time.UTC().Format(time.RFC3339Nano), oldest.seq, oldest.originName(), hint)
}

// materialize writes the checkpoint o names to path; the first event
// needs no file.
func materialize(ctx context.Context, o origin, opts Options, path string) error {
	switch {
	case o.snapshot != nil:
		got, err := opts.Snapshots.Download(ctx, o.snapshot.Name, path)
		if err != nil {
			return fmt.Errorf("rebuild: %w", err)
		}
		*o.snapshot = got
	case o.archived != nil:
		r, err := opts.Archive.OpenCheckpoint(*o.archived)
		if err != nil {
			return fmt.Errorf("rebuild: %w", err)
		}
		defer r.Close()
		f, err := os.OpenFile(path, os.O_CREATE|os.O_TRUNC|os.O_WRONLY, 0o600)
		if err == nil {
			_, err = io.Copy(f, r)
			err = errors.Join(err, f.Close())
		}
		if err != nil {
			return fmt.Errorf("rebuild: the archive's checkpoint %s: %w", o.archived.Name, err)
		}
	}
	return nil
}
