package ledger

// Bytes returns the encoding, for the tests that compare it with Encode's.
func (e Encoded) Bytes() []byte { return e.data }
