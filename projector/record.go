package projector

import (
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"time"

	"github.com/quotaledger/quota/ledger/quantity"
	"github.com/quotaledger/quota/ledger/quota"
)

// objectRecordVersion is the first byte of an encoded objectRecord.
const objectRecordVersion = 2

var errShortRecord = errors.New("truncated object record")

// encodeObjectRecord writes r in a compact binary form: the raw object is
// stored as is, so reading a record back does not re-scan it as JSON.
// Layout: version, then uvarint-length-prefixed strings (resource,
// namespace, name, uid, kind, reservation, resource version, object,
// charge) and
// uvarints (seq, expiry in Unix nanoseconds, 0 for none), then the number
// of holds and per hold its id, expiry and charge.
func encodeObjectRecord(r *objectRecord) []byte {
	// The recorded samples' charges take 32 to 270 bytes (about 205 for a
	// pod with requests and limits): room for one at once.
	charge := appendCharge(make([]byte, 0, 320), &r.Charge)
	n := 1 + 9*binary.MaxVarintLen64 + len(r.Resource) + len(r.Namespace) + len(r.Name) +
		len(r.UID) + len(r.Kind) + len(r.Reservation) + len(r.ResourceVersion) + len(r.Object) + len(charge) + 2*binary.MaxVarintLen64
	b := make([]byte, 1, n)
	b[0] = objectRecordVersion
	for _, s := range []string{r.Resource, r.Namespace, r.Name, r.UID, r.Kind, r.Reservation, r.ResourceVersion} {
		b = binary.AppendUvarint(b, uint64(len(s)))
		b = append(b, s...)
	}
	b = binary.AppendUvarint(b, uint64(len(r.Object)))
	b = append(b, r.Object...)
	b = binary.AppendUvarint(b, uint64(len(charge)))
	b = append(b, charge...)
	b = binary.AppendUvarint(b, r.Seq)
	var expiry uint64
	if !r.ExpiresAt.IsZero() {
		expiry = uint64(r.ExpiresAt.UnixNano())
	}
	b = binary.AppendUvarint(b, expiry)
	b = binary.AppendUvarint(b, uint64(len(r.Holds)))
	for i := range r.Holds {
		h := &r.Holds[i]
		b = appendString(b, h.ID)
		b = binary.AppendUvarint(b, uint64(h.ExpiresAt.UnixNano()))
		charge = appendCharge(charge[:0], &h.Charge)
		b = binary.AppendUvarint(b, uint64(len(charge)))
		b = append(b, charge...)
	}
	return b
}

// decodeObjectRecord reads a record written by encodeObjectRecord. The
// record shares no memory with b.
func decodeObjectRecord(b []byte) (*objectRecord, error) {
	if len(b) == 0 || b[0] != objectRecordVersion {
		return nil, fmt.Errorf("object record version %v, want %d", b[:min(1, len(b))], objectRecordVersion)
	}
	d := recordReader{b: b[1:]}
	var r objectRecord
	for _, dst := range []*string{&r.Resource, &r.Namespace, &r.Name, &r.UID, &r.Kind, &r.Reservation, &r.ResourceVersion} {
		*dst = string(d.bytes())
	}
	// b may belong to bbolt's page, valid only in its transaction.
	if obj := d.bytes(); d.err == nil {
		r.Object = append(json.RawMessage(nil), obj...)
	}
	charge := d.bytes()
	if d.err != nil {
		return nil, d.err
	}
	var err error
	if r.Charge, err = charges.decode(charge); err != nil {
		return nil, fmt.Errorf("charge: %w", err)
	}
	r.Seq = d.uvarint()
	if expiry := d.uvarint(); expiry != 0 {
		r.ExpiresAt = time.Unix(0, int64(expiry)).UTC()
	}
	if r.Holds, err = d.holds(); err != nil {
		return nil, err
	}
	if len(d.b) != 0 {
		return nil, fmt.Errorf("%d bytes after the holds", len(d.b))
	}
	return &r, nil
}

// recordReader reads an encoded objectRecord's fields in order. Its
// first failure sticks, so that a phase of the decode checks err once.
type recordReader struct {
	b   []byte
	err error
}

func (d *recordReader) uvarint() uint64 {
	if d.err != nil {
		return 0
	}
	v, k := binary.Uvarint(d.b)
	if k <= 0 {
		d.err = errShortRecord
		return 0
	}
	d.b = d.b[k:]
	return v
}

func (d *recordReader) byte() byte {
	if d.err == nil && len(d.b) == 0 {
		d.err = errShortRecord
	}
	if d.err != nil {
		return 0
	}
	v := d.b[0]
	d.b = d.b[1:]
	return v
}

// count reads the number of the items that follow, each at least a byte
// long.
func (d *recordReader) count() int {
	n := d.uvarint()
	if d.err == nil && n > uint64(len(d.b)) {
		d.err = errShortRecord
	}
	if d.err != nil {
		return 0
	}
	return int(n)
}

// bytes reads a uvarint-length-prefixed field.
func (d *recordReader) bytes() []byte {
	n := d.uvarint()
	if d.err == nil && uint64(len(d.b)) < n {
		d.err = errShortRecord
	}
	if d.err != nil {
		return nil
	}
	v := d.b[:n]
	d.b = d.b[n:]
	return v
}

// holds reads the number of holds, then each hold's id, expiry and
// charge.
func (d *recordReader) holds() ([]hold, error) {
	n := d.count()
	if d.err != nil || n == 0 {
		return nil, d.err
	}
	holds := make([]hold, n)
	for i := range holds {
		h := &holds[i]
		h.ID = string(d.bytes())
		h.ExpiresAt = time.Unix(0, int64(d.uvarint())).UTC()
		charge := d.bytes()
		if d.err != nil {
			return nil, d.err
		}
		if err := readCharge(charge, &h.Charge); err != nil {
			return nil, fmt.Errorf("hold %s charge: %w", h.ID, err)
		}
	}
	return holds, nil
}

// Charge flags.
const (
	flagPod = 1 << iota
	flagTerminating
	flagBestEffort
	flagCrossNamespacePodAffinity
)

// appendCharge encodes a charge: resource, scope flags, priority class,
// volume attributes classes, then the usage as (name, exact quantity)
// pairs in name order, so equal charges give equal bytes.
func appendCharge(b []byte, c *quota.Charge) []byte {
	b = appendString(b, c.Resource)
	var flags byte
	if c.Scope.Pod {
		flags |= flagPod
	}
	if c.Scope.Terminating {
		flags |= flagTerminating
	}
	if c.Scope.BestEffort {
		flags |= flagBestEffort
	}
	if c.Scope.CrossNamespacePodAffinity {
		flags |= flagCrossNamespacePodAffinity
	}
	b = append(b, flags)
	b = appendString(b, c.Scope.PriorityClass)
	b = binary.AppendUvarint(b, uint64(len(c.Scope.VolumeAttributesClasses)))
	for _, v := range c.Scope.VolumeAttributesClasses {
		b = appendString(b, v)
	}
	names := make([]string, 0, len(c.Usage))
	for name := range c.Usage {
		names = append(names, name)
	}
	sort.Strings(names)
	var scratch [64]byte
	exact := scratch[:0]
	b = binary.AppendUvarint(b, uint64(len(names)))
	for _, name := range names {
		b = appendString(b, name)
		exact = c.Usage[name].AppendExact(exact[:0])
		b = binary.AppendUvarint(b, uint64(len(exact)))
		b = append(b, exact...)
	}
	return b
}

func appendString(b []byte, s string) []byte {
	b = binary.AppendUvarint(b, uint64(len(s)))
	return append(b, s...)
}

func readCharge(b []byte, c *quota.Charge) error {
	d := recordReader{b: b}
	c.Resource = string(d.bytes())
	flags := d.byte()
	c.Scope.Pod = flags&flagPod != 0
	c.Scope.Terminating = flags&flagTerminating != 0
	c.Scope.BestEffort = flags&flagBestEffort != 0
	c.Scope.CrossNamespacePodAffinity = flags&flagCrossNamespacePodAffinity != 0
	c.Scope.PriorityClass = string(d.bytes())
	for range d.count() {
		c.Scope.VolumeAttributesClasses = append(c.Scope.VolumeAttributesClasses, string(d.bytes()))
	}
	n := d.count()
	if d.err != nil {
		return d.err
	}
	c.Usage = make(quota.ResourceList, n)
	for range n {
		name, text := string(d.bytes()), d.bytes()
		if d.err != nil {
			return d.err
		}
		q, err := quantity.ParseExact(string(text))
		if err != nil {
			return fmt.Errorf("%s: %w", name, err)
		}
		c.Usage[name] = q
	}
	if len(d.b) != 0 {
		return fmt.Errorf("%d bytes after the charge", len(d.b))
	}
	return nil
}
