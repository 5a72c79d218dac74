package buckets

import (
	"bytes"
	"errors"
	"fmt"
	"sort"

	"github.com/tidwall/btree"
)

// Errors of the buckets' writes.
var (
	// ErrReadOnly is returned by a write to a snapshot's bucket.
	ErrReadOnly = errors.New("buckets: write to a read-only snapshot")
	// ErrNoCodec is returned by PutValue to a bucket without a codec.
	ErrNoCodec = errors.New("buckets: a decoded value for a bucket without a codec")
	// ErrNilValue is returned by PutValue of a nil value.
	ErrNilValue = errors.New("buckets: a nil value")
)

// degree is the B-trees' degree: nodes of up to 2*degree-1 items, about
// 1 KiB of item headers, so that a copy-on-write after a snapshot copies
// little.
const degree = 8

// item is one key's entry: v in a bucket without a codec, val in one
// with a codec.
type item struct {
	k, v []byte
	val  any
}

// A Codec turns the values of a bucket into bytes and back. A bucket with
// a codec holds its values decoded: Put decodes the bytes it is given,
// Get, ForEach and cursors encode what they return, and PutValue, Value
// and AscendValues pass the values as they are, which is what makes the
// bucket cheap for its owner's hot path.
type Codec struct {
	Encode func(v any) []byte
	Decode func(b []byte) (any, error)
}

func less(a, b item) bool { return bytes.Compare(a.k, b.k) < 0 }

func newTree() *btree.BTreeG[item] {
	return btree.NewBTreeGOptions(less, btree.Options{Degree: degree, NoLocks: true})
}

// Set is a projection's buckets, by name.
type Set struct {
	trees    map[string]*btree.BTreeG[item]
	codecs   map[string]*Codec
	readOnly bool
	// changes, while tracked (TrackChanges), are the keys written or
	// deleted since TakeChanges, by bucket.
	changes Changes
}

// Changes are keys written or deleted, by bucket: what a copy of a set
// kept elsewhere (a checkpoint file) must take again to equal it.
type Changes map[string]map[string]struct{}

// Add adds the keys of c to cs.
func (cs Changes) Add(c Changes) {
	for name, keys := range c {
		into := cs[name]
		if into == nil {
			cs[name] = keys
			continue
		}
		for k := range keys {
			into[k] = struct{}{}
		}
	}
}

// Len returns the number of keys in cs.
func (cs Changes) Len() int {
	n := 0
	for _, keys := range cs {
		n += len(keys)
	}
	return n
}

// TrackChanges makes the writable set note the keys written or deleted
// from now on, for TakeChanges.
func (s *Set) TrackChanges() {
	if s.changes == nil {
		s.changes = Changes{}
	}
}

// TakeChanges returns the keys written or deleted since the last call
// (or since TrackChanges) and starts noting afresh; nil if the set does
// not track them.
func (s *Set) TakeChanges() Changes {
	if s.changes == nil {
		return nil
	}
	c := s.changes
	s.changes = Changes{}
	return c
}

// New returns an empty set.
func New() *Set {
	return &Set{trees: map[string]*btree.BTreeG[item]{}, codecs: map[string]*Codec{}}
}

// SetCodec makes the bucket called name, and every copy of the set
// taken from now on, keep its values decoded by c. It is for a new set,
// before anything is put in that bucket.
func (s *Set) SetCodec(name []byte, c *Codec) { s.codecs[string(name)] = c }

// Bucket returns the bucket called name, or nil if there is none.
func (s *Set) Bucket(name []byte) *Bucket {
	t, ok := s.trees[string(name)]
	if !ok {
		return nil
	}
	return &Bucket{tree: t, codec: s.codecs[string(name)], readOnly: s.readOnly, changes: s.changesOf(name)}
}

// changesOf is the set of changed keys of the bucket called name, nil if
// changes are not tracked.
func (s *Set) changesOf(name []byte) map[string]struct{} {
	if s.changes == nil {
		return nil
	}
	keys := s.changes[string(name)]
	if keys == nil {
		keys = map[string]struct{}{}
		s.changes[string(name)] = keys
	}
	return keys
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
	return &Bucket{tree: t, codec: s.codecs[string(name)], changes: s.changesOf(name)}, nil
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
	c := &Set{trees: make(map[string]*btree.BTreeG[item], len(s.trees)), codecs: s.codecs, readOnly: true}
	for n, t := range s.trees {
		c.trees[n] = t.Copy()
	}
	return c
}

// Clone returns a writable copy of the set as it is now: the set a failed
// batch of writes is rolled back to.
func (s *Set) Clone() *Set {
	c := &Set{trees: make(map[string]*btree.BTreeG[item], len(s.trees)), codecs: s.codecs}
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
	codec    *Codec
	readOnly bool
	changes  map[string]struct{} // nil unless the set tracks changes
}

// changed notes key as written or deleted; a key noted already costs no
// copy of it.
func (b *Bucket) changed(key []byte) {
	if b.changes == nil {
		return
	}
	if _, ok := b.changes[string(key)]; !ok {
		b.changes[string(key)] = struct{}{}
	}
}

// bytes is the value of it as bytes, encoded if the bucket has a codec.
func (b *Bucket) bytes(it item) []byte {
	if b.codec == nil {
		return it.v
	}
	return b.codec.Encode(it.val)
}

// Get returns the value of key, or nil if key is not in the bucket.
func (b *Bucket) Get(key []byte) []byte {
	it, ok := b.tree.Get(item{k: key})
	if !ok {
		return nil
	}
	return b.bytes(it)
}

// Has reports whether key is in the bucket.
func (b *Bucket) Has(key []byte) bool {
	_, ok := b.tree.Get(item{k: key})
	return ok
}

// Put sets key to value. A nil value is stored as an empty one. In a
// bucket with a codec, value is decoded first, and a value that does not
// decode is refused with the codec's error.
func (b *Bucket) Put(key, value []byte) error {
	if b.readOnly {
		return ErrReadOnly
	}
	if b.codec != nil {
		v, err := b.codec.Decode(value)
		if err != nil {
			return fmt.Errorf("decode value of %q: %w", key, err)
		}
		return b.PutValue(key, v)
	}
	if value == nil {
		value = []byte{}
	}
	b.tree.Set(item{k: key, v: value})
	b.changed(key)
	return nil
}

// Value returns the decoded value of key in a bucket with a codec, or nil
// if key is not in the bucket. The value belongs to the set: the caller
// must not change it.
func (b *Bucket) Value(key []byte) any {
	it, ok := b.tree.Get(item{k: key})
	if !ok {
		return nil
	}
	return it.val
}

// PutValue sets key to a decoded value in a bucket with a codec. The set
// keeps v as given: the caller must not change it afterwards.
func (b *Bucket) PutValue(key []byte, v any) error {
	if b.readOnly {
		return ErrReadOnly
	}
	if b.codec == nil {
		return ErrNoCodec
	}
	if v == nil {
		return fmt.Errorf("put %q: %w", key, ErrNilValue)
	}
	b.tree.Set(item{k: key, val: v})
	b.changed(key)
	return nil
}

// AscendValues calls fn for every key from the first at or after from,
// in order, with its decoded value, until fn returns false or an error;
// it returns that error.
func (b *Bucket) AscendValues(from []byte, fn func(k []byte, v any) (bool, error)) error {
	var err error
	b.tree.Ascend(item{k: from}, func(it item) bool {
		var more bool
		more, err = fn(it.k, it.val)
		return more && err == nil
	})
	return err
}

// Delete removes key; deleting a key that is not there does nothing.
func (b *Bucket) Delete(key []byte) error {
	if b.readOnly {
		return ErrReadOnly
	}
	if _, ok := b.tree.Delete(item{k: key}); ok {
		b.changed(key)
	}
	return nil
}

// ForEach calls fn for every key in order, stopping at fn's first error.
func (b *Bucket) ForEach(fn func(k, v []byte) error) error {
	var err error
	b.tree.Scan(func(it item) bool {
		err = fn(it.k, b.bytes(it))
		return err == nil
	})
	return err
}

// Len returns the number of keys in the bucket.
func (b *Bucket) Len() int { return b.tree.Len() }

// Cursor returns a cursor over the bucket's keys in order.
func (b *Bucket) Cursor() *Cursor {
	return &Cursor{iter: b.tree.Iter(), b: b}
}

// Cursor walks a bucket's keys in order. Its methods return a nil key
// past either end.
type Cursor struct {
	iter btree.IterG[item]
	b    *Bucket
}

func (c *Cursor) at(ok bool) ([]byte, []byte) {
	if !ok {
		return nil, nil
	}
	it := c.iter.Item()
	return it.k, c.b.bytes(it)
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
