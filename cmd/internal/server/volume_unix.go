//go:build unix

package server

import "syscall"

// volumeBytes returns the size of the file system holding dir and the
// bytes free on it for an unprivileged writer.
func volumeBytes(dir string) (size, free uint64, ok bool) {
	var fs syscall.Statfs_t
	if err := syscall.Statfs(dir, &fs); err != nil {
		return 0, 0, false
	}
	return uint64(fs.Blocks) * uint64(fs.Bsize), uint64(fs.Bavail) * uint64(fs.Bsize), true
}
