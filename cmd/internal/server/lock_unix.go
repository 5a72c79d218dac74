//go:build unix

package server

import (
	"errors"
	"os"
	"syscall"
)

// errLocked is lockFile's error when another process holds the lock.
var errLocked = errors.New("locked")

// lockFile takes an exclusive flock on f without waiting. The kernel
// drops it when the process exits, however it exits.
func lockFile(f *os.File) error {
	for {
		err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
		switch {
		case err == nil:
			return nil
		case errors.Is(err, syscall.EINTR):
			continue
		case errors.Is(err, syscall.EWOULDBLOCK):
			return errLocked
		default:
			return err
		}
	}
}

func unlockFile(f *os.File) { _ = syscall.Flock(int(f.Fd()), syscall.LOCK_UN) }
