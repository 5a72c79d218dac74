package webhook

import "errors"

// ErrNoClientCA is returned by Run when Config.ClientCAFile holds no PEM
// certificate: a webhook told to authenticate its callers would trust
// nobody.
var ErrNoClientCA = errors.New("no CA certificate in the client CA file")
