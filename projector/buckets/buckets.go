package buckets

import (
	"bytes"
	"errors"
	"sort"

	"github.com/tidwall/btree"
)

// ErrReadOnly is returned by a write to a snapshot's bucket.
var ErrReadOnly = errors.New("buckets: write to a read-only snapshot")

// degree is the B-trees' degree: nodes of up to 2*degree-1 items, about
// 1 KiB of item headers, so that a copy-on-write after a snapshot copies
// little.
const degree = 8

type item struct{ k, v []byte }

func less(a, b item) bool { return bytes.Compare(a.k, b.k) < 0 }

func newTree() *btree.BTreeG[item] {
	return btree.NewBTreeGOptions(less, btree.Options{Degree: degree, NoLocks: true})
}

// Set is a projection's buckets, by name.
type Set struct {
	trees    map[string]*btree.BTreeG[item]
	readOnly bool
}

// New returns an empty set.
func New() *Set { return &Set{trees: map[string]*btree.BTreeG[item]{}} }

// Bucket returns the bucket called name, or nil if there is none.
func (s *Set) Bucket(name []byte) *Bucket {
	t, ok := s.trees[string(name)]
	if !ok {
		return nil
	}
	return &Bucket{tree: t, readOnly: s.readOnly}
}

// CreateBucketIfNotExists returns the bucket called name, made empty if
// there was none.
func (s *Set) CreateBucketIfNotExists(name []byte) (*Bucket, error) {
	if s.readOnly {
		return nil, ErrReadOnly
	}
	t, ok := s.trees[string(name)]
	if !ok {
		t = newTree()
		s.trees[string(name)] = t
	}
	return &Bucket{tree: t}, nil
}

// Names returns the names of the buckets, in order.
func (s *Set) Names() []string {
	names := make([]string, 0, len(s.trees))
	for n := range s.trees {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// Snapshot returns a read-only copy of the set as it is now.
func (s *Set) Snapshot() *Set {
	c := &Set{trees: make(map[string]*btree.BTreeG[item], len(s.trees)), readOnly: true}
	for n, t := range s.trees {
		c.trees[n] = t.Copy()
	}
	return c
}

// Clone returns a writable copy of the set as it is now: the set a failed
// batch of writes is rolled back to.
func (s *Set) Clone() *Set {
	c := &Set{trees: make(map[string]*btree.BTreeG[item], len(s.trees))}
	for n, t := range s.trees {
		c.trees[n] = t.Copy()
	}
	return c
}

// Len returns the number of keys in all buckets.
func (s *Set) Len() int {
	n := 0
	for _, t := range s.trees {
		n += t.Len()
	}
	return n
}

// Bucket is one named ordered map.
type Bucket struct {
	tree     *btree.BTreeG[item]
	readOnly bool
}

// Get returns the value of key, or nil if key is not in the bucket.
func (b *Bucket) Get(key []byte) []byte {
	it, ok := b.tree.Get(item{k: key})
	if !ok {
		return nil
	}
	return it.v
}

// Put sets key to value. A nil value is stored as an empty one.
func (b *Bucket) Put(key, value []byte) error {
	if b.readOnly {
		return ErrReadOnly
	}
	if value == nil {
		value = []byte{}
	}
	b.tree.Set(item{k: key, v: value})
	return nil
}

// Delete removes key; deleting a key that is not there does nothing.
func (b *Bucket) Delete(key []byte) error {
	if b.readOnly {
		return ErrReadOnly
	}
	b.tree.Delete(item{k: key})
	return nil
}

// ForEach calls fn for every key in order, stopping at fn's first error.
func (b *Bucket) ForEach(fn func(k, v []byte) error) error {
	var err error
	b.tree.Scan(func(it item) bool {
		err = fn(it.k, it.v)
		return err == nil
	})
	return err
}

// Len returns the number of keys in the bucket.
func (b *Bucket) Len() int { return b.tree.Len() }

// Cursor returns a cursor over the bucket's keys in order.
func (b *Bucket) Cursor() *Cursor {
	return &Cursor{iter: b.tree.Iter()}
}

// Cursor walks a bucket's keys in order. Its methods return a nil key
// past either end.
type Cursor struct {
	iter btree.IterG[item]
}

func (c *Cursor) at(ok bool) ([]byte, []byte) {
	if !ok {
		return nil, nil
	}
	it := c.iter.Item()
	return it.k, it.v
}

// First moves to the first key.
func (c *Cursor) First() ([]byte, []byte) { return c.at(c.iter.First()) }

// Last moves to the last key.
func (c *Cursor) Last() ([]byte, []byte) { return c.at(c.iter.Last()) }

// Next moves to the next key.
func (c *Cursor) Next() ([]byte, []byte) { return c.at(c.iter.Next()) }

// Prev moves to the previous key.
func (c *Cursor) Prev() ([]byte, []byte) { return c.at(c.iter.Prev()) }

// Seek moves to key, or to the first key after it.
func (c *Cursor) Seek(key []byte) ([]byte, []byte) { return c.at(c.iter.Seek(item{k: key})) }
