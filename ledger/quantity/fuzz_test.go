package quantity

import (
	"testing"
)

// fuzzSeeds are quantities at the edges of Kubernetes' rules.
var fuzzSeeds = []string{
	"0", "1", "+1", "-1", "1000", "0.5", ".5", "5.", "1.G", "3000m", "100k",
	"1e3", "1E3", "1e-3", "12e0", "1Ki", "+1Ki", "01Ki", "1024Ki", "1.5Gi",
	"1.25Gi", "0.0001Ki", "8Ei", "-8Ei", "1Pi", "1Ti", "0.1n", "3e-12",
	"1000E", "100000000000000000000", "1234567890123456789", "+", "-", ".",
	"-.e-20", "12e", " 1", "1Ki1", "1.2.3", "1e4294967296", "9.0090780Ti",
}

// FuzzParse checks that Parse never panics, that an accepted quantity
// parses back from its printed form to the same value, and that Parse agrees
// with Kubernetes on acceptance, errors, value, Format and String.
func FuzzParse(f *testing.F) {
	for _, s := range fuzzSeeds {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		q, err := Parse(s)
		if err == nil {
			// Kubernetes' printed form determines the value except where it
			// has no suffix for the exponent.
			if _, lossless := q.appendCanonical(nil); lossless || q.s != "" {
				r, err := Parse(q.String())
				if err != nil {
					t.Fatalf("Parse(%q) printed %q, which does not parse: %v", s, q.String(), err)
				}
				if r.Cmp(q) != 0 {
					t.Fatalf("Parse(%q) printed %q, which parses to %s", s, q.String(), exactValue(r))
				}
			}
			checkExact(t, "Parse("+s+")", q)
		}
		checkParse(t, s)
	})
}

// FuzzAddSub checks Add, Sub, Cmp and RoundUp on two parsed
// quantities against Kubernetes, and that (a+b)-b is a.
func FuzzAddSub(f *testing.F) {
	for i, s := range fuzzSeeds {
		f.Add(s, fuzzSeeds[(i*7+3)%len(fuzzSeeds)])
	}
	f.Fuzz(func(t *testing.T, a, b string) {
		qa, ka, ok := checkParse(t, a)
		if !ok {
			return
		}
		qb, kb, ok := checkParse(t, b)
		if !ok {
			return
		}
		checkArithmetic(t, qa, qb, ka, kb)
	})
}
