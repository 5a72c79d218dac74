package quantity

// WithFormat returns q's value in format f. Kubernetes changes a quantity's
// format only through arithmetic on a zero and through a round trip as a
// string; callers that model such a step (a recount whose first non-zero
// term had format f) use this. The cached original string is dropped, as
// it would be by any arithmetic.
func (q Quantity) WithFormat(f Format) Quantity {
	q.format = f
	q.s = ""
	return q
}
