package admission

import (
	"crypto/rand"
	"encoding/hex"
)

// NewUID returns a random uid for an AdmissionReview request. A request's
// uid names its reservation; the responder gives one with none a NewUID of
// its own.
func NewUID() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}
