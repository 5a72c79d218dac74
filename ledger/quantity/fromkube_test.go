package quantity

import (
	"errors"
	"fmt"
	"math"
	"math/big"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/cockroachdb/apd/v3"
	"gopkg.in/inf.v0"
	"k8s.io/apimachinery/pkg/api/resource"
)

// fromKubeByText is FromKube as it was first written: through a big.Int
// coefficient and apd. FromKube must build the very same Quantity, field for
// field, because the int64 form, the wide flag and the cached text all show
// later (in overflow, in printing -2^63, in Exact).
func fromKubeByText(k resource.Quantity) (Quantity, error) {
	var format Format
	switch k.Format {
	case resource.DecimalSI:
		format = DecimalSI
	case resource.BinarySI:
		format = BinarySI
	default:
		format = DecimalExponent
	}
	copied := k
	dec := copied.AsDec()
	unscaled := new(big.Int).Abs(dec.UnscaledBig())
	e := -int64(dec.Scale())
	if err := checkRange(unscaled, e, ExponentMax); err != nil {
		return Quantity{}, fmt.Errorf("kubernetes quantity: %w", err)
	}
	d := &apd.Decimal{Negative: dec.Sign() < 0, Exponent: int32(e)}
	d.Coeff.SetMathBigInt(unscaled)
	q := fromExactDecimal(d, format)
	text := k.String()
	if q.String() == text {
		return q, nil
	}
	other := q
	other.wide = !q.wide
	if q.d == nil && other.String() == text {
		return other, nil
	}
	if p, err := Parse(text); err == nil && p.format == q.format && p.Cmp(q) == 0 {
		return p, nil
	}
	return q, nil
}

// sameQuantity reports whether a and b hold the same fields, comparing a
// decimal by sign, exponent and coefficient.
func sameQuantity(a, b Quantity) bool {
	if a.i != b.i || a.scale != b.scale || a.format != b.format || a.wide != b.wide || a.s != b.s {
		return false
	}
	if (a.d == nil) != (b.d == nil) {
		return false
	}
	return a.d == nil || a.d.Negative == b.d.Negative && a.d.Exponent == b.d.Exponent && a.d.Coeff.Cmp(&b.d.Coeff) == 0
}

func checkFromKube(t *testing.T, what string, k resource.Quantity) {
	t.Helper()
	want, wantErr := fromKubeByText(k)
	got, err := FromKube(k)
	if !errors.Is(err, ErrRange) != !errors.Is(wantErr, ErrRange) || (err == nil) != (wantErr == nil) {
		t.Fatalf("FromKube(%s) error = %v, want %v", what, err, wantErr)
	}
	if !sameQuantity(got, want) {
		t.Fatalf("FromKube(%s) = %#v, want %#v", what, got, want)
	}
}

// cachedText returns k after String, which keeps the printed text in it.
func cachedText(k *resource.Quantity) resource.Quantity {
	_ = k.String()
	return *k
}

// TestFromKubeFields checks that FromKube builds the same Quantity as the
// conversion through text, for parsed quantities, quantities built from
// integers and decimals, and results of Kubernetes' own arithmetic.
func TestFromKubeFields(t *testing.T) {
	built := map[string]resource.Quantity{
		"int64 1024 binary":         *resource.NewQuantity(1024, resource.BinarySI),
		"int64 -2^63 binary":        *resource.NewQuantity(math.MinInt64, resource.BinarySI),
		"int64 2^63-1 binary":       *resource.NewQuantity(math.MaxInt64, resource.BinarySI),
		"int64 -2^63 decimal":       *resource.NewQuantity(math.MinInt64, resource.DecimalSI),
		"milli":                     *resource.NewMilliQuantity(1500, resource.DecimalSI),
		"milli whole":               *resource.NewMilliQuantity(3000, resource.BinarySI),
		"scaled below nano":         *resource.NewScaledQuantity(1, -12),
		"scaled beyond E":           *resource.NewScaledQuantity(1, 21),
		"scaled beyond range":       *resource.NewScaledQuantity(1, 2000),
		"scaled below range":        *resource.NewScaledQuantity(7, -2000),
		"scaled zero beyond range":  *resource.NewScaledQuantity(0, math.MaxInt32),
		"scaled zero below range":   *resource.NewScaledQuantity(0, math.MinInt32+1),
		"scaled zero at min scale":  *resource.NewScaledQuantity(0, math.MinInt32),
		"scaled one at min scale":   *resource.NewScaledQuantity(1, math.MinInt32),
		"cached canonical text":     cachedText(resource.NewMilliQuantity(1500, resource.DecimalSI)),
		"cached text of a sum":      cachedText(resource.NewScaledQuantity(1000, -3)),
		"no format":                 {},
		"unknown format":            {Format: "Strange"},
		"decimal":                   *resource.NewDecimalQuantity(*inf.NewDec(15, 1), resource.DecimalSI),
		"decimal -2^63 binary":      *resource.NewDecimalQuantity(*inf.NewDec(math.MinInt64, 0), resource.BinarySI),
		"decimal wide":              *resource.NewDecimalQuantity(*new(inf.Dec).SetUnscaledBig(new(big.Int).Lsh(big.NewInt(1), 80)), resource.BinarySI),
		"decimal wide negative":     *resource.NewDecimalQuantity(*new(inf.Dec).SetUnscaledBig(new(big.Int).Lsh(big.NewInt(-3), 70)), resource.DecimalSI),
		"decimal trailing zeros":    *resource.NewDecimalQuantity(*inf.NewDec(1000000, 3), resource.DecimalExponent),
		"decimal below nano":        *resource.NewDecimalQuantity(*inf.NewDec(1, 1500), resource.DecimalSI),
		"decimal beyond range wide": *resource.NewDecimalQuantity(*new(inf.Dec).SetUnscaledBig(new(big.Int).Lsh(big.NewInt(1), 80)).SetScale(-990), resource.DecimalSI),
	}
	mostNegative := resource.MustParse("-8Ei")
	mostNegative.Sub(resource.MustParse("1"))
	built["decimal -2^63 from arithmetic"] = mostNegative
	for name, k := range built {
		checkFromKube(t, name, k)
	}
	g := generator{rand.New(rand.NewPCG(seed(t), 3))}
	var corpus []resource.Quantity
	for len(corpus) < 3000 {
		s := g.quantity()
		if !kubeSafe(s) {
			continue
		}
		k, err := resource.ParseQuantity(s)
		if err != nil {
			continue
		}
		checkFromKube(t, s, k)
		corpus = append(corpus, k)
	}
	for range 3000 {
		a, b := corpus[g.r.IntN(len(corpus))].DeepCopy(), corpus[g.r.IntN(len(corpus))]
		if g.r.IntN(2) == 0 {
			a.Add(b)
		} else {
			a.Sub(b)
		}
		checkFromKube(t, "sum", a)
		a.RoundUp(0)
		checkFromKube(t, "rounded sum", a)
	}
}

// TestParseExactInt64MatchesGeneral checks that the int64 reading of an
// exact value builds the Quantity the big-number reading builds, wherever
// it accepts the text, and that AppendExact writes Exact.
func TestParseExactInt64MatchesGeneral(t *testing.T) {
	g := generator{rand.New(rand.NewPCG(seed(t), 5))}
	accepted := 0
	check := func(value string, format Format) {
		t.Helper()
		got, ok := parseExactInt64(value, format)
		if !ok {
			return
		}
		accepted++
		d, err := parseExactValue(value)
		if err != nil {
			t.Fatalf("parseExactInt64(%q) accepts what parseExactValue refuses: %v", value, err)
		}
		if want := fromExactDecimal(d, format); !sameQuantity(got, want) {
			t.Fatalf("parseExactInt64(%q) = %#v, want %#v", value, got, want)
		}
	}
	for _, s := range fuzzSeeds {
		check(s, DecimalSI)
	}
	for range 20000 {
		s := g.quantity()
		check(s, Format(g.r.IntN(3)))
		if q, err := Parse(s); err == nil {
			text := q.Exact()
			if got := string(q.AppendExact([]byte("x"))); got != "x"+text {
				t.Fatalf("AppendExact of %q = %q, want %q", s, got, "x"+text)
			}
			if value, _, ok := strings.Cut(text, ";"); ok {
				check(value, q.Format())
			}
			// A sum leaves the parsed text behind.
			sum := q.Add(MustParse("1m"))
			if got, want := string(sum.AppendExact(nil)), sum.Exact(); got != want {
				t.Fatalf("AppendExact of %s+1m = %q, want %q", s, got, want)
			}
			checkExact(t, s+"+1m", sum)
		}
	}
	if accepted < 10000 {
		t.Errorf("parseExactInt64 accepted only %d texts", accepted)
	}
}
