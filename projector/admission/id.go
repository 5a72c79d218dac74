package admission

import (
	"crypto/rand"
	"encoding/hex"
)

// newReservationID names a reservation when the request carries no uid.
func newReservationID() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}
