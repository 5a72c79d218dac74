package projector

import "github.com/quotaledger/quota/ledger"

// Prepared is a batch of stream records with the evaluations of the
// objects they carry, made by Prepare ahead of the fold, which is then
// left with the part that needs the projection.
type Prepared struct {
	records []ledger.Record
	pre     [][]evaluated
}

// Prepare evaluates the objects a batch of records carries, on every CPU.
// It reads nothing of a projection, so it may run while another batch is
// folded.
func Prepare(records []ledger.Record) *Prepared {
	return &Prepared{records: records, pre: evaluateAll(records)}
}

// Records returns the batch's records.
func (b *Prepared) Records() []ledger.Record { return b.records }

// Head returns the batch of the first n records.
func (b *Prepared) Head(n int) *Prepared {
	return &Prepared{records: b.records[:n], pre: b.pre[:n]}
}
