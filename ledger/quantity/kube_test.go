package quantity

import (
	"flag"
	"math/rand/v2"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/cockroachdb/apd/v3"
	"k8s.io/apimachinery/pkg/api/resource"
)

// The tests in this file use k8s.io/apimachinery as the oracle: for the same
// input, Quantity must do what resource.Quantity does.

var seedFlag = flag.Uint64("quantity.seed", 0, "seed for the generated corpus; 0 picks one from the clock")

// kubeExponentMax bounds the exponents handed to Kubernetes: beyond it,
// resource.ParseQuantity may spend minutes rescaling a big.Int.
const kubeExponentMax = 10000

// kubeSafe reports whether Kubernetes parses s in reasonable time, and so
// whether it can serve as the oracle for s.
func kubeSafe(s string) bool {
	p, err := scan(s)
	if err != nil {
		return true
	}
	_, exponent, _, ok := interpretSuffix(p.suffix)
	return !ok || exponent >= -kubeExponentMax && exponent <= kubeExponentMax
}

// generator writes quantity texts: mostly well formed, in every form
// Kubernetes accepts, with some damaged ones.
type generator struct{ r *rand.Rand }

var generatedSuffixes = []string{
	"", "", "", "n", "u", "m", "k", "M", "G", "T", "P", "E",
	"Ki", "Mi", "Gi", "Ti", "Pi", "Ei",
	"e", "E", "e+", "e-", "K", "ki", "i", "mi", "MM", "Kii", "e3e",
}

func (g generator) digits(n int) string {
	var b strings.Builder
	for range n {
		// Zeros and nines are over-represented: they are where carries and
		// canonical forms change.
		switch g.r.IntN(4) {
		case 0:
			b.WriteByte('0')
		case 1:
			b.WriteByte('9')
		default:
			b.WriteByte(byte('0' + g.r.IntN(10)))
		}
	}
	return b.String()
}

func (g generator) quantity() string {
	var b strings.Builder
	switch g.r.IntN(6) {
	case 0:
		b.WriteByte('-')
	case 1:
		b.WriteByte('+')
	}
	if g.r.IntN(8) == 0 {
		b.WriteString(strings.Repeat("0", 1+g.r.IntN(3)))
	}
	// Short numbers dominate, but some pass 18 digits, where Kubernetes
	// leaves its int64 path.
	n := g.r.IntN(5)
	if g.r.IntN(5) == 0 {
		n = g.r.IntN(26)
	}
	b.WriteString(g.digits(n))
	if g.r.IntN(3) == 0 {
		b.WriteByte('.')
		b.WriteString(g.digits(g.r.IntN(13)))
	}
	suffix := generatedSuffixes[g.r.IntN(len(generatedSuffixes))]
	b.WriteString(suffix)
	if strings.HasPrefix(suffix, "e") || strings.HasPrefix(suffix, "E") {
		if len(suffix) == 1 && g.r.IntN(3) == 0 {
			b.WriteByte("+-"[g.r.IntN(2)])
		}
		b.WriteString(strconv.Itoa(g.r.IntN(40)))
	}
	if g.r.IntN(40) == 0 {
		// Damage: a character from the grammar's neighbourhood at a
		// random place.
		s := []byte(b.String())
		at := g.r.IntN(len(s) + 1)
		c := " .+-eEi1xK\t"[g.r.IntN(11)]
		s = append(s[:at], append([]byte{c}, s[at:]...)...)
		return string(s)
	}
	return b.String()
}

func seed(t testing.TB) uint64 {
	s := *seedFlag
	if s == 0 {
		s = uint64(time.Now().UnixNano())
	}
	t.Logf("seed %d (rerun with -quantity.seed=%d)", s, s)
	return s
}

// checkParse compares Parse with resource.ParseQuantity on s.
func checkParse(t testing.TB, s string) (Quantity, resource.Quantity, bool) {
	t.Helper()
	q, err := Parse(s)
	if err == ErrRange || !kubeSafe(s) {
		return q, resource.Quantity{}, false
	}
	k, kerr := resource.ParseQuantity(s)
	if errText(err) != errText(kerr) {
		t.Fatalf("Parse(%q) error = %v, Kubernetes says %v", s, err, kerr)
	}
	if err != nil {
		return q, k, false
	}
	checkSame(t, "Parse("+strconv.Quote(s)+")", q, k)
	return q, k, true
}

// checkSame compares q with k: value, Format, String, JSON, and the
// conversions that must preserve them.
func checkSame(t testing.TB, what string, q Quantity, k resource.Quantity) {
	t.Helper()
	if got, want := q.String(), k.String(); got != want {
		t.Fatalf("%s.String() = %q, Kubernetes prints %q", what, got, want)
	}
	if got, want := q.Format().String(), string(k.Format); got != want {
		t.Fatalf("%s.Format() = %v, Kubernetes has %v", what, got, want)
	}
	if got, want := q.Sign(), k.Sign(); got != want {
		t.Fatalf("%s.Sign() = %d, Kubernetes says %d", what, got, want)
	}
	if kv := kubeDecimal(k); exactValue(q).Cmp(kv) != 0 {
		t.Fatalf("%s value = %s, Kubernetes has %s", what, exactValue(q), kv)
	}
	f, err := FromKube(k)
	if err != nil {
		t.Fatalf("FromKube(%s): %v", what, err)
	}
	if f.String() != k.String() || f.Format() != q.Format() || f.Cmp(q) != 0 {
		t.Fatalf("FromKube(%s) = %q %v, want %q %v", what, f.String(), f.Format(), k.String(), q.Format())
	}
	checkExact(t, what, q)
}

// exactValue returns q's exact value.
func exactValue(q Quantity) *apd.Decimal {
	var t apd.Decimal
	return new(apd.Decimal).Set(q.decimal(&t))
}

// kubeDecimal returns k's exact value, read without this package.
func kubeDecimal(k resource.Quantity) *apd.Decimal {
	d := k.AsDec()
	v, _, err := apd.NewFromString(d.UnscaledBig().String() + "e" + strconv.Itoa(-int(d.Scale())))
	if err != nil {
		panic(err)
	}
	return v
}

// checkExact checks that ParseExact(q.Exact()) is q in value, Format and
// printed form.
func checkExact(t testing.TB, what string, q Quantity) {
	t.Helper()
	text := q.Exact()
	r, err := ParseExact(text)
	if err != nil {
		t.Fatalf("ParseExact(%s.Exact() = %q): %v", what, text, err)
	}
	if r.Cmp(q) != 0 || r.Format() != q.Format() || r.String() != q.String() {
		t.Fatalf("ParseExact(%q) = %q %v, want %q %v", text, r.String(), r.Format(), q.String(), q.Format())
	}
}

// TestKubernetesParse compares Parse with resource.ParseQuantity on a
// generated corpus.
func TestKubernetesParse(t *testing.T) {
	g := generator{rand.New(rand.NewPCG(seed(t), 1))}
	accepted := 0
	for range 20000 {
		if _, _, ok := checkParse(t, g.quantity()); ok {
			accepted++
		}
	}
	if accepted < 5000 {
		t.Errorf("only %d of 20000 generated quantities parsed; the generator is off", accepted)
	}
}

// TestKubernetesArithmetic compares Add, Sub, Cmp, RoundUp and running
// sums with resource.Quantity's on a generated corpus.
func TestKubernetesArithmetic(t *testing.T) {
	g := generator{rand.New(rand.NewPCG(seed(t), 2))}
	type pair struct {
		q Quantity
		k resource.Quantity
	}
	var corpus []pair
	for len(corpus) < 2000 {
		s := g.quantity()
		if q, k, ok := checkParse(t, s); ok {
			corpus = append(corpus, pair{q, k})
		}
	}
	for i := range 10000 {
		a, b := corpus[g.r.IntN(len(corpus))], corpus[g.r.IntN(len(corpus))]
		checkArithmetic(t, a.q, b.q, a.k, b.k)
		if i%10 == 0 {
			// A running sum carries int64 overflow and format across many
			// steps.
			q, k := a.q, a.k.DeepCopy()
			for step := range 20 {
				c := corpus[g.r.IntN(len(corpus))]
				if step%3 == 2 {
					q = q.Sub(c.q)
					k.Sub(c.k)
				} else {
					q = q.Add(c.q)
					k.Add(c.k)
				}
				checkSame(t, "running sum", q, k)
			}
		}
	}
}

// checkArithmetic compares a op b for every operation with Kubernetes.
func checkArithmetic(t testing.TB, a, b Quantity, ka, kb resource.Quantity) {
	t.Helper()
	what := a.String() + " and " + b.String()
	// Kubernetes' Cmp converts its operands to inf.Dec in place, after which
	// RoundUp forgets the parsed text; round first, as its quota evaluator
	// does.
	rounded := ka.DeepCopy()
	exact := rounded.RoundUp(0)
	r, rexact := a.RoundUp(0)
	if rexact != exact {
		t.Fatalf("%s.RoundUp(0) exact = %v, Kubernetes says %v", a, rexact, exact)
	}
	checkSame(t, a.String()+" rounded up", r, rounded)
	if a.IsInteger() != exact {
		t.Fatalf("%s.IsInteger() = %v, but RoundUp(0) exact = %v", a, a.IsInteger(), exact)
	}
	sum := ka.DeepCopy()
	sum.Add(kb)
	checkSame(t, what+" sum", a.Add(b), sum)
	diff := ka.DeepCopy()
	diff.Sub(kb)
	checkSame(t, what+" difference", a.Sub(b), diff)
	if got, want := a.Cmp(b), ka.Cmp(kb); got != want {
		t.Fatalf("Cmp of %s = %d, Kubernetes says %d", what, got, want)
	}
	if a.Add(b).Sub(b).Cmp(a) != 0 {
		t.Fatalf("%s: (a+b)-b = %s, want a", what, a.Add(b).Sub(b))
	}
}
