package projector

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/quotaledger/quota/ledger"
	"github.com/quotaledger/quota/projector/buckets"
)

// The bbolt file is the live state's checkpoint (see the package doc):
// every CheckpointEvery applied records or CheckpointInterval, in the
// background, and at Close, the keys the views published since the last
// checkpoint changed are written to the file in one transaction, as the
// newest view holds them, with the applied sequence it reflects. When
// most keys changed, or more than a write in place holds on the heap
// (inPlace), the whole view goes to a new file instead, renamed over the
// old (rewrite). The file's first checkpoint after a start takes what the
// start changed.

// Defaults of the checkpoints.
const (
	// DefaultCheckpointEvery is how many applied records, at most, a
	// checkpoint waits for: what a restart folds again from the log.
	DefaultCheckpointEvery = 100_000
	// DefaultCheckpointInterval is how long, at most, a checkpoint waits
	// once anything was applied.
	DefaultCheckpointInterval = time.Minute
)

// loadSet reads every bucket of the file into a new set.
func loadSet(db *bolt.DB) (*buckets.Set, error) {
	set := newSet()
	err := db.View(func(tx *bolt.Tx) error {
		// The layout first: records of another decode otherwise.
		if meta := tx.Bucket(bucketMeta); meta != nil {
			if v := meta.Get(keySchema); len(v) == 8 && binary.BigEndian.Uint64(v) != SchemaVersion {
				return fmt.Errorf("%w: file has %d, this build reads %d", ErrSchemaVersion, binary.BigEndian.Uint64(v), SchemaVersion)
			}
		}
		return tx.ForEach(func(name []byte, fb *bolt.Bucket) error {
			b, err := set.CreateBucketIfNotExists(name)
			if err != nil {
				return err
			}
			// The file's bytes belong to its mapping: copy them.
			return fb.ForEach(func(k, v []byte) error {
				return b.Put(append([]byte(nil), k...), append([]byte(nil), v...))
			})
		})
	})
	return set, err
}

// LoadDB reads an open projection file into a read-only set.
func LoadDB(db *bolt.DB) (*buckets.Set, error) {
	set, err := loadSet(db)
	if err != nil {
		return nil, err
	}
	return set.Snapshot(), nil
}

// LoadFile reads a projection file (a checkpoint, a snapshot, replay's
// --db) into a read-only set.
func LoadFile(path string) (*buckets.Set, error) {
	db, err := bolt.Open(path, 0o600, &bolt.Options{ReadOnly: true, Timeout: openTimeout})
	if err != nil {
		return nil, openError(path, err)
	}
	defer db.Close()
	if err := Check(db); err != nil {
		return nil, openError(path, err)
	}
	set, err := loadSet(db)
	if err != nil {
		return nil, fmt.Errorf("read projection %s: %w", path, err)
	}
	return set.Snapshot(), nil
}

// rewriteSuffix names the file a rewrite builds beside the file it
// replaces.
const rewriteSuffix = ".rewrite"

// rewriteTxBytes bounds the keys and values one transaction of a rewrite
// puts: bbolt holds them, and the pages they fill, on the heap until the
// transaction commits. A variable for the tests.
var rewriteTxBytes = 8 << 20

// rewriteMmapBytes is how much of a new file a rewrite maps at once. Each
// time bbolt maps a growing file again it copies what the transaction
// holds from the old mapping to the heap (node.dereference); a mapping is
// address space, not memory, until pages are read through it.
// rewriteAllocBytes is how far past what it holds the file grows at a
// time: bbolt grows a file mapped past its allocation step by that step
// beyond what it needs (16 MiB by default, even for a small state).
const (
	rewriteMmapBytes  = 1 << 30
	rewriteAllocBytes = 64 << 10
)

// rewrite writes view to a new file beside path, renames it over path and
// returns it open (and locked): a crash or an error leaves path as it
// was. The new file is written in transactions of at most rewriteTxBytes
// each, its pages full, and synced once, before the rename, unless noSync;
// the file it replaced is neither read nor changed.
func rewrite(path string, view *buckets.Set, noSync bool) (_ *bolt.DB, err error) {
	tmp := path + rewriteSuffix
	if err := os.Remove(tmp); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, err
	}
	db, err := openFile(tmp, true, rewriteMmapBytes)
	if err != nil {
		return nil, err
	}
	db.AllocSize = rewriteAllocBytes
	defer func() {
		if err != nil {
			db.Close()
			os.Remove(tmp)
		}
	}()
	if err := fill(db, view); err != nil {
		return nil, err
	}
	if !noSync {
		if err := db.Sync(); err != nil {
			return nil, err
		}
	}
	db.NoSync = noSync
	if err := os.Rename(tmp, path); err != nil {
		return nil, err
	}
	if !noSync {
		if err := ledger.SyncDir(filepath.Dir(path)); err != nil {
			return nil, fmt.Errorf("sync the directory after renaming %s: %w", tmp, err)
		}
	}
	return db, nil
}

// fill writes every bucket of view to db, a new file, in transactions of
// at most rewriteTxBytes of keys and values. Keys come in order: the
// pages are filled full.
func fill(db *bolt.DB, view *buckets.Set) error {
	tx, err := db.Begin(true)
	if err != nil {
		return err
	}
	defer func() { _ = tx.Rollback() }() // the last one's, after a failure
	size := 0
	for _, name := range view.Names() {
		fb, err := tx.CreateBucket([]byte(name))
		if err != nil {
			return err
		}
		fb.FillPercent = 1
		err = view.Bucket([]byte(name)).ForEach(func(k, v []byte) error {
			if size >= rewriteTxBytes {
				if err := tx.Commit(); err != nil {
					return err
				}
				if tx, err = db.Begin(true); err != nil {
					return err
				}
				fb = tx.Bucket([]byte(name))
				fb.FillPercent = 1
				size = 0
			}
			size += len(k) + len(v)
			return fb.Put(k, v)
		})
		if err != nil {
			return fmt.Errorf("bucket %s: %w", name, err)
		}
	}
	return tx.Commit()
}

// WriteFile writes view to a new projection file at path (replay's --db,
// a snapshot), replacing what path held.
func WriteFile(path string, view *buckets.Set) error {
	db, err := rewrite(path, view, false)
	if err == nil {
		err = db.Close()
	}
	if err != nil {
		return fmt.Errorf("write projection %s: %w", path, err)
	}
	return nil
}

// Checkpoint writes the newest view to the file, unless the file holds it
// already. It is safe to call beside Apply. The file takes only the keys
// written or deleted since the last checkpoint (the changes each applied
// batch leaves, taken with the view they lead to), in one transaction
// with the applied sequence they reach.
func (p *Projector) Checkpoint() error {
	p.ckMu.Lock()
	defer p.ckMu.Unlock()
	p.unwrittenMu.Lock()
	view, changes, all := p.view.Load(), p.unwritten, p.unwrittenAll
	p.unwritten, p.unwrittenAll = buckets.Changes{}, false
	p.unwrittenMu.Unlock()
	seq := appliedSeq(view)
	if seq == p.checkpointed.Load() && p.checkpointedOnce && changes.Len() == 0 && !all {
		return nil
	}
	started := time.Now()
	rewritten, err := p.writeCheckpoint(view, changes, all)
	if err != nil {
		// The file may hold none of them: the next checkpoint writes them
		// again, with what comes after.
		p.unwrittenMu.Lock()
		p.addUnwritten(changes, all)
		p.unwrittenMu.Unlock()
		return fmt.Errorf("%w: %s: checkpoint at seq %d: %w", ErrWrite, p.cfg.Path, seq, err)
	}
	p.checkpointed.Store(seq)
	p.checkpointedOnce = true
	p.cfg.Logger.Debug("projection checkpointed", "seq", seq, "keys", changes.Len(), "new_file", rewritten, "took", time.Since(started).Round(time.Millisecond))
	return nil
}

// inPlaceBytesMax bounds the pages a checkpoint written in place may
// change, counted as a page per changed key: bbolt reads each through its
// mapping of the file and holds it, and the page that replaces it, on the
// heap until the transaction commits. A checkpoint of more changes writes
// a new file (rewrite), in steps of rewriteTxBytes. A variable for the
// tests.
var inPlaceBytesMax = 32 << 20

// inPlace says whether a checkpoint of changes keys, of a state of keys
// keys, is written into the file in place: unless most keys changed (the
// new file's pages are full, where writes in place split them half full)
// or the pages it changes would exceed inPlaceBytesMax.
func inPlace(changes, keys, pageSize int) bool {
	return changes < keys/2 && !pastInPlaceBytes(changes, pageSize)
}

// pastInPlaceBytes says whether the pages of changes keys, a page each,
// exceed what a checkpoint writes in place.
func pastInPlaceBytes(changes, pageSize int) bool { return changes*pageSize > inPlaceBytesMax }

// writeCheckpoint writes the changed keys of view to the file, in place,
// or the whole of view to a new file (with all, or past inPlace), and says
// which; a panic of bbolt's on a page of the file damaged since it was
// opened (a bad sector) is an error that says so.
func (p *Projector) writeCheckpoint(view *buckets.Set, changes buckets.Changes, all bool) (rewritten bool, err error) {
	defer ledger.Survive(p.cfg.Logger, "checkpoint the projection", func(e error) {
		err = fmt.Errorf("%w; a page of the file damaged since it was opened (its check at the next start names it; moving the file aside rebuilds it from the stream)", e)
	})
	if !all && inPlace(changes.Len(), view.Len(), p.pageSize) {
		return false, writeChanges(p.db, view, changes)
	}
	db, err := rewrite(p.cfg.Path, view, p.cfg.NoSync)
	if err != nil {
		return true, err
	}
	old := p.db
	p.db = db
	if err := old.Close(); err != nil {
		p.cfg.Logger.Warn("close the projection file a checkpoint replaced", "err", err)
	}
	return true, nil
}

// writeChanges writes to the file, in one transaction, view's value of
// every key in changes, and deletes those view does not hold.
func writeChanges(db *bolt.DB, view *buckets.Set, changes buckets.Changes) error {
	return db.Update(func(tx *bolt.Tx) error {
		for _, name := range slices.Sorted(maps.Keys(changes)) {
			fb, err := tx.CreateBucketIfNotExists([]byte(name))
			if err != nil {
				return err
			}
			vb := view.Bucket([]byte(name))
			for _, k := range slices.Sorted(maps.Keys(changes[name])) {
				key := []byte(k)
				var v []byte
				if vb != nil {
					v = vb.Get(key)
				}
				if v == nil {
					err = fb.Delete(key)
				} else {
					err = fb.Put(key, v)
				}
				if err != nil {
					return fmt.Errorf("bucket %s: %w", name, err)
				}
			}
		}
		return nil
	})
}

// Checkpointed returns the applied sequence the file holds: what a
// restart folds the log onto.
func (p *Projector) Checkpointed() uint64 { return p.checkpointed.Load() }

// checkpointLoop writes a checkpoint whenever CheckpointEvery records have
// been applied since the last, or CheckpointInterval has passed with any
// applied, until ctx ends; then a last one.
func (p *Projector) checkpointLoop(ctx context.Context) error {
	tick := time.NewTicker(p.cfg.CheckpointInterval)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return p.Checkpoint()
		case <-tick.C:
		case <-p.checkpointDue:
		}
		if err := p.Checkpoint(); err != nil {
			return err
		}
	}
}
