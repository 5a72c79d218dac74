// Package projectortest damages projection files for tests of what reads
// them: a page overwritten in place, as a bad sector or a stray write
// leaves it.
//
// Invariant: it changes only the page it names, in the file on disk,
// never through bbolt, so what the reader meets is what a damaged disk
// would give it.
//
// # Caveats
//
// The file must not be written while it is damaged: the bbolt handle
// passed in is read only to find a leaf page, and a commit after the
// damage could overwrite it.
package projectortest
