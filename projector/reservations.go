package projector

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"strings"
	"time"

	bolt "go.etcd.io/bbolt"
)

// Reservation is an admission's charge for an object not yet reported.
type Reservation struct {
	ID        string
	Namespace string
	Resource  string
	Name      string
	ExpiresAt time.Time
}

// ExpiredReservations returns up to max reservations whose expiry is
// before now, soonest first. It reads only the expired ones.
func (p *Projector) ExpiredReservations(now time.Time, max int) ([]Reservation, error) {
	var out []Reservation
	err := p.db.View(func(tx *bolt.Tx) error {
		c := tx.Bucket(bucketExpiry).Cursor()
		for k, key := c.First(); k != nil && len(out) < max; k, key = c.Next() {
			if len(k) < 8 {
				return fmt.Errorf("%w: expiry key %q", ErrInvariant, k)
			}
			at := time.Unix(0, int64(binary.BigEndian.Uint64(k[:8]))).UTC()
			if !at.Before(now) {
				break
			}
			parts := bytes.SplitN(key, []byte{0}, 3)
			if len(parts) != 3 {
				return fmt.Errorf("%w: expiry entry points at object key %q", ErrInvariant, key)
			}
			out = append(out, Reservation{ID: string(k[8:]), Namespace: string(parts[0]), Resource: string(parts[1]), Name: string(parts[2]), ExpiresAt: at})
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
func placeholderFor(tx *bolt.Tx, namespace, resource, generateName, name string) (*objectRecord, error) {
	if generateName == "" || !strings.HasPrefix(name, generateName) {
		return nil, nil
	}
	prefix := objectKey(namespace, resource, generateName+placeholderInfix)
	c := tx.Bucket(bucketObjects).Cursor()
	for k, v := c.Seek(prefix); k != nil && bytes.HasPrefix(k, prefix); k, v = c.Next() {
		r, err := decodeObjectCharge(v)
		if err != nil {
			return nil, err
		}
		if r.Reservation != "" && r.Name == PlaceholderName(generateName, r.Reservation) {
			return r, nil
		}
	}
	return nil, nil
}
