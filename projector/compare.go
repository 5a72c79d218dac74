package projector

import (
	"bytes"
	"cmp"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/quotaledger/quota/ledger/quota"
	"github.com/quotaledger/quota/projector/buckets"
)

// Entry is one key of a stored projection as an operator reads it: where
// it belongs and each of its parts, printed. ReadEntry makes one; a
// verification (replay.Compare) compares two, part by part, without
// knowing how the projection stores them.
type Entry struct {
	// Bucket is the storage bucket the entry lives in.
	Bucket string
	// Namespace is the namespace of the entry, "" for the whole
	// projection or a cluster-scoped object.
	Namespace string
	// Name names the entry: "quota compute", "object pods/web-1",
	// "meta appliedSeq".
	Name string
	// Record is true for an object's or a quota's record, which has a
	// Summary, Lists and Fields; false for a single stored value, which
	// has one field only.
	Record bool
	// Summary is a record in one line ("charged cpu=1,pods=1", "used
	// ...", "undecodable: ..."), or "absent" when the key is not stored.
	Summary string
	// Err is why a stored record does not decode; Lists and Fields are
	// then empty.
	Err error
	// Lists are a record's quantities by list ("charge", "used").
	Lists []EntryList
	// Fields are the entry's other parts, in the order they are reported.
	Fields []EntryField
}

// EntryList is one named list of quantities of an Entry.
type EntryList struct {
	Name string
	List quota.ResourceList
}

// EntryField is one named part of an Entry.
type EntryField struct {
	// Name is the part's name: "value", "reservation", "set by seq".
	Name string
	// Value is the part as printed, "absent" when the entry is.
	Value string
	// Compared, when not empty, is what two entries' parts are compared
	// by instead of Value: a part printed in short (an object's size)
	// differs when its whole does.
	Compared string
}

// SameAs reports whether f and g are the same part: equal as compared.
func (f EntryField) SameAs(g EntryField) bool {
	return cmp.Or(f.Compared, f.Value) == cmp.Or(g.Compared, g.Value)
}

// absent prints a key that is not stored.
const absent = "absent"

// Buckets names the buckets of a projection that hold its state, in the
// order a verification walks them. The tombstones are left out: they
// only fence later events (fence.go), and a projection mended by a resync
// lacks the tombstone of an object it had lost, with the same usage.
func Buckets() []string {
	var names []string
	for _, b := range allBuckets {
		if !bytes.Equal(b, bucketTombstones) && !bytes.Equal(b, bucketTombstoneExpiry) {
			names = append(names, string(b))
		}
	}
	return names
}

// ReadEntry reads the value stored under key in bucket; a nil value is a
// key not stored there.
func ReadEntry(bucket string, key, value []byte) Entry {
	switch bucket {
	case string(bucketMeta):
		return readValueEntry(bucket, "", "meta "+string(key), "value", value, func(v []byte) string { return metaValue(key, v) })
	case string(bucketSubjects):
		return readValueEntry(bucket, string(key), "subject", "last applied seq", value, seqValue)
	case string(bucketObjects):
		return readObjectEntry(bucket, key, value)
	case string(bucketQuotas):
		return readQuotaEntry(bucket, key, value)
	case string(bucketReserved):
		return readValueEntry(bucket, "", "reservation "+string(key), "object", value, keyValue)
	case string(bucketExpiry):
		entry := fmt.Sprintf("expiry key %q", key)
		if len(key) >= 8 {
			entry = fmt.Sprintf("reservation %s expiring %s", key[8:], time.Unix(0, int64(binary.BigEndian.Uint64(key[:8]))).UTC().Format(time.RFC3339Nano))
		}
		return readValueEntry(bucket, "", entry, "object", value, keyValue)
	case string(bucketFeedExpiry):
		entry := fmt.Sprintf("feed expiry key %q", key)
		if resource, end, id, err := splitFeedExpiryKey(key); err == nil {
			entry = fmt.Sprintf("reservation %s of %s ending %s on the feed", id, resource, end.Format(time.RFC3339Nano))
		}
		return readValueEntry(bucket, "", entry, "object", value, keyValue)
	case string(bucketFeeds):
		return readValueEntry(bucket, "", "feed of "+string(key), "point", value, rawValue)
	case string(bucketDeadlines):
		ns, name, _ := strings.Cut(string(key), "\x00")
		return readValueEntry(bucket, ns, strings.ReplaceAll(name, "\x00", "/"), "deadline", value, timeValue)
	case string(bucketSkipped):
		return readValueEntry(bucket, "", fmt.Sprintf("skipped record seq %s", seqValue(key)), "reason", value, skippedValue)
	}
	return readValueEntry(bucket, "", fmt.Sprintf("key %q", key), "bytes", value, rawValue)
}

// readValueEntry is an entry of one stored value v, printed by print
// unless it is absent (nil).
func readValueEntry(bucket, namespace, name, field string, v []byte, print func([]byte) string) Entry {
	value := absent
	if v != nil {
		value = print(v)
	}
	return Entry{Bucket: bucket, Namespace: namespace, Name: name, Summary: value, Fields: []EntryField{{Name: field, Value: value}}}
}

func readObjectEntry(bucket string, key, v []byte) Entry {
	parts := strings.SplitN(string(key), "\x00", 3)
	e := Entry{Bucket: bucket, Name: keyValue(key), Record: true, Summary: absent}
	if len(parts) == 3 {
		e.Namespace, e.Name = parts[0], "object "+parts[1]+"/"+parts[2]
	}
	if v == nil {
		return e
	}
	r, err := decodeObjectRecord(v)
	if err != nil {
		e.Summary, e.Err = "undecodable: "+err.Error(), err
		return e
	}
	e.Summary = "charged " + listString(r.Charge.Usage)
	if r.Reservation != "" {
		e.Summary += " (reserved by " + r.Reservation + ")"
	}
	if len(r.Holds) > 0 {
		e.Summary += ", update holds " + holdsString(r.Holds)
	}
	e.Lists = []EntryList{{Name: "charge", List: r.Charge.Usage}}
	e.Fields = []EntryField{
		{Name: "scope facts", Value: scopeString(r.Charge)},
		{Name: "reservation", Value: cmp.Or(r.Reservation, "none")},
		{Name: "reservation expiry", Value: r.ExpiresAt.String(), Compared: r.ExpiresAt.UTC().Format(time.RFC3339Nano)},
		{Name: "update holds", Value: holdsString(r.Holds)},
		{Name: "set by seq", Value: fmt.Sprint(r.Seq)},
		{Name: "uid", Value: cmp.Or(r.UID, "none")},
		{Name: "object", Value: fmt.Sprintf("%d bytes", len(r.Object)), Compared: fmt.Sprintf("%d bytes %q", len(r.Object), r.Object)},
	}
	return e
}

func readQuotaEntry(bucket string, key, v []byte) Entry {
	parts := strings.SplitN(string(key), "\x00", 2)
	e := Entry{Bucket: bucket, Name: keyValue(key), Record: true, Summary: absent}
	if len(parts) == 2 {
		e.Namespace, e.Name = parts[0], "quota "+parts[1]
	}
	if v == nil {
		return e
	}
	var r quotaRecord
	if err := json.Unmarshal(v, &r); err != nil {
		e.Summary, e.Err = "undecodable: "+err.Error(), err
		return e
	}
	e.Summary = "used " + listString(r.Used)
	if r.Invalid != "" {
		e.Summary = "invalid: " + r.Invalid
	}
	e.Lists = []EntryList{{Name: "used", List: r.Used}}
	e.Fields = []EntryField{
		{Name: "invalid", Value: cmp.Or(r.Invalid, "none")},
		{Name: "spec", Value: string(r.Object)},
		{Name: "set by seq", Value: fmt.Sprint(r.Seq)},
	}
	return e
}

func metaValue(key, v []byte) string {
	switch {
	case bytes.Equal(key, keyAppliedTime) && len(v) == 8:
		return time.Unix(0, int64(binary.BigEndian.Uint64(v))).UTC().Format(time.RFC3339Nano)
	case len(v) == 8:
		return seqValue(v)
	}
	return rawValue(v)
}

func seqValue(v []byte) string {
	if len(v) != 8 {
		return rawValue(v)
	}
	return fmt.Sprint(binary.BigEndian.Uint64(v))
}

func keyValue(v []byte) string {
	return strings.ReplaceAll(string(v), "\x00", "/")
}

func rawValue(v []byte) string {
	return fmt.Sprintf("%q", v)
}

func skippedValue(v []byte) string {
	var s skippedRecord
	if err := json.Unmarshal(v, &s); err != nil {
		return rawValue(v)
	}
	return fmt.Sprintf("%q", s.Reason)
}

// holdsString describes an object's update holds: per hold its id,
// expiry, charge and scope facts.
func holdsString(holds []hold) string {
	if len(holds) == 0 {
		return absent
	}
	parts := make([]string, len(holds))
	for i, h := range holds {
		parts[i] = fmt.Sprintf("%s until %s: %s %s", h.ID, h.ExpiresAt.UTC().Format(time.RFC3339Nano), listString(h.Charge.Usage), scopeString(h.Charge))
	}
	return strings.Join(parts, "; ")
}

// listString prints a resource list as name=value pairs in name order.
func listString(l quota.ResourceList) string {
	if len(l) == 0 {
		return "nothing"
	}
	return l.String()
}

func scopeString(c quota.Charge) string {
	b, _ := json.Marshal(c.Scope)
	return string(b)
}

// timeValue prints a deadlines entry.
func timeValue(v []byte) string {
	at, state, err := readDeadline(nil, v)
	if err != nil {
		return rawValue(v)
	}
	if state == deadlinePassed {
		return at.Format(time.RFC3339Nano) + ", passed"
	}
	return at.Format(time.RFC3339Nano)
}

// kvCursor walks a bucket in key order: the live state's, or a bbolt
// file's.
type kvCursor interface {
	First() ([]byte, []byte)
	Next() ([]byte, []byte)
}

// setCursor opens the bucket called name of s, nil when s has none.
func setCursor(s *buckets.Set, name string) kvCursor {
	if b := s.Bucket([]byte(name)); b != nil {
		return b.Cursor()
	}
	return nil
}

// DiffBuckets calls fn, in key order, for every key whose values differ
// between the buckets called name of a and b (a missing bucket is an
// empty one), with nil for the side that lacks the key.
func DiffBuckets(a, b *buckets.Set, name string, fn func(k, av, bv []byte)) {
	diffKeys(setCursor(a, name), setCursor(b, name), func(k, av, bv []byte) bool {
		fn(k, av, bv)
		return true
	})
}

// diffKeys walks two buckets (nil: empty) in key order and calls fn for
// every key whose values differ, with nil for the side that lacks the
// key, until fn returns false.
func diffKeys(a, b kvCursor, fn func(k, av, bv []byte) bool) {
	var ka, va, kb, vb []byte
	if a != nil {
		ka, va = a.First()
	}
	if b != nil {
		kb, vb = b.First()
	}
	for ka != nil || kb != nil {
		c := bytes.Compare(ka, kb)
		switch {
		case kb == nil || ka != nil && c < 0:
			if !fn(ka, va, nil) {
				return
			}
			ka, va = a.Next()
		case ka == nil || c > 0:
			if !fn(kb, nil, vb) {
				return
			}
			kb, vb = b.Next()
		default:
			if !bytes.Equal(va, vb) && !fn(ka, va, vb) {
				return
			}
			ka, va = a.Next()
			kb, vb = b.Next()
		}
	}
}
