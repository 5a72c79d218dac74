package projector

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"strings"
	"time"

	"github.com/quotaledger/quota/projector/buckets"
)

// Reservation is an admission's charge for an object not yet reported.
type Reservation struct {
	ID        string
	Namespace string
	Resource  string
	Name      string
	// ExpiresAt is when the reservation ends: on the server's clock, or,
	// for one that ends on the feed, on the feed's.
	ExpiresAt time.Time
}

// ExpiredReservations returns up to max reservations that are to be
// released: those ending on the feed whose resource's feed has passed
// their end (feed.go), then those whose expiry is before now, soonest
// first. It reads only those.
func (p *Projector) ExpiredReservations(now time.Time, max int) ([]Reservation, error) {
	var out []Reservation
	err := p.read(func(tx *buckets.Set) error {
		var err error
		if out, err = feedReleased(tx, out, max); err != nil {
			return err
		}
		c := tx.Bucket(bucketExpiry).Cursor()
		for k, key := c.First(); k != nil && len(out) < max; k, key = c.Next() {
			if len(k) < 8 {
				return fmt.Errorf("%w: expiry key %q", ErrInvariant, k)
			}
			at := time.Unix(0, int64(binary.BigEndian.Uint64(k[:8]))).UTC()
			if !at.Before(now) {
				break
			}
			r, err := reservationAt(string(k[8:]), at, key)
			if err != nil {
				return err
			}
			out = append(out, r)
		}
		return nil
	})
	return out, err
}

// PlaceholderName is the name a create offered with only a generateName
// is reserved under by reservation id: the object's name is generated
// when it is created, after admission.
func PlaceholderName(generateName, id string) string {
	return generateName + placeholderInfix + id
}

const placeholderInfix = "reserved-"

// placeholderFor finds the reservation a new object with a generated name
// confirms: a create reserved under a placeholder name of the object's
// generateName (the first by reservation id, when there are several). It
// returns nil when there is none.
func placeholderFor(tx *buckets.Set, namespace, resource, generateName, name string) (*objectRecord, error) {
	if generateName == "" || !strings.HasPrefix(name, generateName) {
		return nil, nil
	}
	prefix := objectKey(namespace, resource, generateName+placeholderInfix)
	var found *objectRecord
	err := tx.Bucket(bucketObjects).AscendValues(prefix, func(k []byte, v any) (bool, error) {
		r, _ := v.(*objectRecord)
		if r == nil || !bytes.HasPrefix(k, prefix) {
			return false, nil
		}
		if r.Reservation != "" && r.Name == PlaceholderName(generateName, r.Reservation) {
			found = r
			return false, nil
		}
		return true, nil
	})
	return found, err
}
