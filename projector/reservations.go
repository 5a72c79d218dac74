package projector

import (
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
// before now.
func (p *Projector) ExpiredReservations(now time.Time, max int) ([]Reservation, error) {
	var out []Reservation
	err := p.db.View(func(tx *bolt.Tx) error {
		return tx.Bucket(bucketReserved).ForEach(func(id, key []byte) error {
			if len(out) >= max {
				return nil
			}
			r, err := getObject(tx, key)
			if err != nil || r == nil {
				return err
			}
			if r.ExpiresAt.Before(now) {
				out = append(out, Reservation{ID: string(id), Namespace: r.Namespace, Resource: r.Resource, Name: r.Name, ExpiresAt: r.ExpiresAt})
			}
			return nil
		})
	})
	return out, err
}
