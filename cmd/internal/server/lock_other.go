//go:build !unix

package server

import (
	"errors"
	"os"
)

// errLocked is lockFile's error when another process holds the lock.
var errLocked = errors.New("locked")

// lockFile does not lock where flock is missing; bbolt's own lock on the
// projection file still stops a second server, after its embedded NATS
// has started.
func lockFile(*os.File) error { return nil }

func unlockFile(*os.File) {}
