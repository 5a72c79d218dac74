package credentials

import "errors"

var (
	// ErrExists is returned by Write when a file it would write is in the
	// directory already: new keys lock out the components still holding
	// the old ones.
	ErrExists = errors.New("credentials already exist")

	// ErrNoCAKey is returned by Renew when a CA's key is not in the
	// directory: without it no certificate the CA vouches for can be made.
	ErrNoCAKey = errors.New("CA key not found")

	// ErrCAKeyExposed is returned by Renew when a CA's key file may be read
	// by others than its owner.
	ErrCAKeyExposed = errors.New("CA key readable by others than its owner")

	// ErrCAKeyMismatch is returned by Renew when a CA's key is not the key
	// of the CA's certificate next to it.
	ErrCAKeyMismatch = errors.New("CA key does not belong to the CA certificate")

	// ErrCAExpiring is returned by Renew when a CA expires within
	// CAValidityLeftMin: certificates it signs would not outlive it.
	ErrCAExpiring = errors.New("CA expires too soon to sign from")
)
