package admit

import "errors"

var (
	// ErrDenied is returned by Run when the ledger refused the object; its
	// message has been printed on Config.Out.
	ErrDenied = errors.New("denied")

	// ErrInvalidConfig is returned by Config.Validate, naming every
	// setting that is wrong.
	ErrInvalidConfig = errors.New("invalid admit settings")
)
