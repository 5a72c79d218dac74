package projector

import (
	"errors"
	"fmt"
	"strings"
	"time"

	bolt "go.etcd.io/bbolt"
	bolterrors "go.etcd.io/bbolt/errors"
)

// The projection's bbolt file: opening it, checking every page of it, and
// saying why one cannot be used.

// openTimeout bounds the wait for bbolt's file lock, so a second process
// on the same file fails fast instead of hanging.
const openTimeout = 2 * time.Second

// openFile opens (or creates) a projection file for writing, waiting at
// most openTimeout for its lock, with mmapBytes of it mapped at first (0:
// bbolt's default).
func openFile(path string, noSync bool, mmapBytes int) (*bolt.DB, error) {
	return bolt.Open(path, 0o600, &bolt.Options{Timeout: openTimeout, NoSync: noSync, FreelistType: bolt.FreelistMapType,
		InitialMmapSize: mmapBytes})
}

// openError says why Open could not open the file at path, and for a file
// this build cannot read, what to do: the projection holds nothing the
// stream does not, so a new file rebuilds it.
func openError(path string, err error) error {
	switch {
	case errors.Is(err, bolterrors.ErrTimeout):
		return fmt.Errorf("open projection %s: %w: the file is locked by another process", path, err)
	case errors.Is(err, bolterrors.ErrInvalid), errors.Is(err, bolterrors.ErrChecksum), errors.Is(err, bolterrors.ErrVersionMismatch):
		err = fmt.Errorf("%w (%w)", ErrUnreadable, err)
	case !errors.Is(err, ErrSchemaVersion) && !errors.Is(err, ErrDamaged) && !errors.Is(err, ErrOtherStream):
		return fmt.Errorf("open projection %s: %w", path, err)
	}
	return fmt.Errorf("open projection %s: %w; it holds nothing the stream does not: move it aside and start again to rebuild it from the stream", path, err)
}

// checkProblemsMax bounds the problems a damaged file's error names.
const checkProblemsMax = 3

// Check runs bbolt's consistency check over the whole file, returning an
// error wrapping ErrDamaged for what it finds. bbolt's open reads only the
// meta pages and the free list: a page damaged further in (a bad sector,
// a stray write) would make the first read or write reaching it panic, at
// every start. The check reads every page reachable from the root and
// reports what it finds, panics included, so the server refuses the file
// with an error instead.
func Check(db *bolt.DB) error {
	var problems []string
	more := 0
	err := db.View(func(tx *bolt.Tx) error {
		for err := range tx.Check() {
			if len(problems) < checkProblemsMax {
				// A panic the check recovered from is still only what it
				// found: the server is not panicking.
				problems = append(problems, strings.TrimPrefix(err.Error(), "panic: "))
			} else {
				more++
			}
		}
		return nil
	})
	if err != nil {
		return err
	}
	if len(problems) == 0 {
		return nil
	}
	msg := strings.Join(problems, "; ")
	if more > 0 {
		msg += fmt.Sprintf("; and %d more", more)
	}
	return fmt.Errorf("%w: consistency check: %s", ErrDamaged, msg)
}
