package projectortest

import (
	"bytes"
	"os"
	"testing"

	bolt "go.etcd.io/bbolt"
)

// DamageLeaf overwrites the header of a leaf page of the bbolt file at
// path, open as db (see LeafPage), with every byte set: the page's own
// id, its flags and counts.
func DamageLeaf(t testing.TB, db *bolt.DB, path string, belowRoots bool) {
	t.Helper()
	offset, _ := LeafPage(t, db, belowRoots)
	f, err := os.OpenFile(path, os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.WriteAt(bytes.Repeat([]byte{0xff}, 16), offset); err != nil {
		t.Fatal(err)
	}
}

// LeafPage returns the offset and size of a leaf page of the open bbolt
// file db (read-only opens need bolt.Options.PreLoadFreelist to tell
// pages apart). It takes the last leaf page, or with belowRoots the
// middle one of the leaves that are no bucket's root: what is read
// through the roots alone (a projection's applied sequence) then stays
// readable, and only a walk of the damaged bucket meets the damage.
func LeafPage(t testing.TB, db *bolt.DB, belowRoots bool) (offset int64, size int) {
	t.Helper()
	leaf, pageSize := -1, db.Info().PageSize
	err := db.View(func(tx *bolt.Tx) error {
		roots := map[int]bool{}
		if belowRoots {
			roots[int(tx.Cursor().Bucket().Root())] = true
			if err := tx.ForEach(func(_ []byte, b *bolt.Bucket) error {
				roots[int(b.Root())] = true
				return nil
			}); err != nil {
				return err
			}
		}
		var leaves []int
		for id := 2; id < int(tx.Size())/pageSize; id++ {
			info, err := tx.Page(id)
			if err != nil {
				return err
			}
			if info != nil && info.Type == "leaf" && !roots[id] {
				leaves = append(leaves, id)
			}
		}
		switch {
		case len(leaves) == 0:
		case belowRoots:
			leaf = leaves[len(leaves)/2]
		default:
			leaf = leaves[len(leaves)-1]
		}
		return nil
	})
	if err != nil || leaf < 0 {
		t.Fatalf("no leaf page in %s (%v)", db.Path(), err)
	}
	return int64(leaf) * int64(pageSize), pageSize
}
