//go:build !unix

package server

// volumeBytes reports nothing where there is no statfs.
func volumeBytes(string) (size, free uint64, ok bool) { return 0, 0, false }
