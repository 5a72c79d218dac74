package projector

import (
	"bytes"
	"encoding/binary"
	"fmt"
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
