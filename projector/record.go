package projector

import (
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"time"
)

// objectRecordVersion is the first byte of an encoded objectRecord.
const objectRecordVersion = 1

var errShortRecord = errors.New("truncated object record")

// encodeObjectRecord writes r in a compact binary form: the raw object is
// stored as is, so reading a record back does not re-scan it as JSON.
// Layout: version, then uvarint-length-prefixed strings (resource,
// namespace, name, uid, kind, reservation, object, charge JSON) and
// uvarints (seq, expiry in Unix nanoseconds, 0 for none).
func encodeObjectRecord(r *objectRecord) ([]byte, error) {
	charge, err := json.Marshal(r.Charge)
	if err != nil {
		return nil, err
	}
	n := 1 + 8*binary.MaxVarintLen64 + len(r.Resource) + len(r.Namespace) + len(r.Name) +
		len(r.UID) + len(r.Kind) + len(r.Reservation) + len(r.Object) + len(charge) + 2*binary.MaxVarintLen64
	b := make([]byte, 0, n)
	b = append(b, objectRecordVersion)
	for _, s := range []string{r.Resource, r.Namespace, r.Name, r.UID, r.Kind, r.Reservation} {
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
	return b, nil
}

func decodeObjectRecord(b []byte) (*objectRecord, error) {
	if len(b) == 0 || b[0] != objectRecordVersion {
		return nil, fmt.Errorf("object record version %v, want %d", b[:min(1, len(b))], objectRecordVersion)
	}
	b = b[1:]
	next := func() ([]byte, error) {
		n, k := binary.Uvarint(b)
		if k <= 0 || uint64(len(b)-k) < n {
			return nil, errShortRecord
		}
		v := b[k : k+int(n)]
		b = b[k+int(n):]
		return v, nil
	}
	var r objectRecord
	for _, dst := range []*string{&r.Resource, &r.Namespace, &r.Name, &r.UID, &r.Kind, &r.Reservation} {
		v, err := next()
		if err != nil {
			return nil, err
		}
		*dst = string(v)
	}
	obj, err := next()
	if err != nil {
		return nil, err
	}
	// The value belongs to bbolt's page, valid only in the transaction:
	// copy what outlives it.
	r.Object = append(json.RawMessage(nil), obj...)
	charge, err := next()
	if err != nil {
		return nil, err
	}
	if err := json.Unmarshal(charge, &r.Charge); err != nil {
		return nil, fmt.Errorf("charge: %w", err)
	}
	seq, k := binary.Uvarint(b)
	if k <= 0 {
		return nil, errShortRecord
	}
	r.Seq = seq
	b = b[k:]
	expiry, k := binary.Uvarint(b)
	if k <= 0 {
		return nil, errShortRecord
	}
	if expiry != 0 {
		r.ExpiresAt = time.Unix(0, int64(expiry)).UTC()
	}
	return &r, nil
}
