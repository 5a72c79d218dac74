package server

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// LockFile is the file in the data dir that a running Server holds locked.
const LockFile = "LOCK"

// ErrDataDirInUse is returned by Run when another process holds the data
// dir: two servers writing one JetStream store or one projection file
// would corrupt them.
var ErrDataDirInUse = errors.New("data dir in use by another process")

// lockDataDir takes the data dir's lock for the life of the process and
// writes the process ID into the lock file, so that a second server
// started on the same directory names the first. The lock is the
// operating system's (see lockFile): a server that dies releases it.
func lockDataDir(dir string) (release func(), err error) {
	path := filepath.Join(dir, LockFile)
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("lock data dir: %w", err)
	}
	if err := lockFile(f); err != nil {
		holder := ""
		if b, rerr := os.ReadFile(path); rerr == nil {
			if pid := strings.TrimSpace(string(b)); pid != "" {
				holder = " (pid " + pid + ")"
			}
		}
		f.Close()
		if errors.Is(err, errLocked) {
			return nil, fmt.Errorf("%w: %s is locked by another quota serve%s; stop it, or give this one a --data of its own", ErrDataDirInUse, dir, holder)
		}
		return nil, fmt.Errorf("lock data dir %s: %w", dir, err)
	}
	if err := f.Truncate(0); err == nil {
		_, _ = f.WriteAt([]byte(strconv.Itoa(os.Getpid())+"\n"), 0)
	}
	return func() {
		// The file stays: removing it would let a third server lock a new
		// file of the same name while a second waits on the old one.
		_ = f.Truncate(0)
		unlockFile(f)
		f.Close()
	}, nil
}
