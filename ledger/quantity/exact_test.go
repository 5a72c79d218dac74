package quantity

import (
	"errors"
	"math"
	"testing"

	"k8s.io/apimachinery/pkg/api/resource"
)

// TestExact checks Exact's text and that ParseExact restores value, Format
// and printed form, including where String alone would lose the value.
func TestExact(t *testing.T) {
	tests := []struct {
		name string
		q    Quantity
		want string
	}{
		{"parsed text is kept", MustParse("+1Ki"), "=+1Ki"},
		{"zero", Quantity{}, "0;DecimalSI"},
		{"sum in binary", MustParse("1Gi").Add(MustParse("512Mi")), "1536Mi;BinarySI"},
		{"binary below 1024 keeps its format", MustParse("1Ki").Sub(MustParse("1023.5")), "500m;BinarySI"},
		{"exponent", MustParse("1e3").Add(MustParse("1")), "1001;DecimalExponent"},
		{"DecimalSI beyond E is written in e-notation", MustParse("1000E").Add(Quantity{}), "1e21;DecimalSI"},
		{"BinarySI beyond Ei is written in e-notation", sumOf("1Ei", 1024), "1180591620717411303424;BinarySI"},
		{"beyond int64", MustParse("9E").Add(MustParse("9E")), "18E;DecimalSI"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.q.Exact(); got != tt.want {
				t.Errorf("Exact() = %q, want %q", got, tt.want)
			}
			checkExact(t, tt.name, tt.q)
		})
	}
}

// sumOf returns s added to itself n times.
func sumOf(s string, n int) Quantity {
	var q Quantity
	for range n {
		q = q.Add(MustParse(s))
	}
	return q
}

func TestParseExactErrors(t *testing.T) {
	tests := []struct {
		name string
		in   string
		err  error
	}{
		{"no format", "5", ErrExactForm},
		{"unknown format", "5;Decimal", ErrExactForm},
		{"no value", ";DecimalSI", ErrExactForm},
		{"bad value", "5x;DecimalSI", ErrFormatWrong},
		{"bad suffix", "5Q;DecimalSI", ErrFormatWrong},
		{"bad parsed text", "=1Kix", ErrFormatWrong},
		{"beyond the range", "1e2000;DecimalSI", ErrRange},
		{"exponent beyond 32 bits is not truncated", "1e4294967296;DecimalExponent", ErrRange},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if _, err := ParseExact(tt.in); !errors.Is(err, tt.err) {
				t.Errorf("ParseExact(%q) error = %v, want %v", tt.in, err, tt.err)
			}
		})
	}
}

func TestFromKube(t *testing.T) {
	tests := []struct {
		name string
		k    resource.Quantity
	}{
		{"parsed", resource.MustParse("1.5Gi")},
		{"parsed text", resource.MustParse("+1Ki")},
		{"int64", *resource.NewQuantity(1024, resource.BinarySI)},
		{"milli", *resource.NewMilliQuantity(1500, resource.DecimalSI)},
		{"below nano", *resource.NewScaledQuantity(1, -12)},
		{"beyond E", *resource.NewScaledQuantity(1, 21)},
		{"no format", resource.Quantity{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			q, err := FromKube(tt.k)
			if err != nil {
				t.Fatal(err)
			}
			if got, want := q.String(), tt.k.String(); got != want {
				t.Errorf("String() = %q, want %q", got, want)
			}
			if kv := kubeDecimal(tt.k); exactValue(q).Cmp(kv) != 0 {
				t.Errorf("value = %s, want %s", exactValue(q), kv)
			}
			checkExact(t, tt.name, q)
		})
	}
	if _, err := FromKube(resource.MustParse("1e2000")); !errors.Is(err, ErrRange) {
		t.Errorf("FromKube(1e2000) error = %v, want ErrRange", err)
	}
}

// TestMostNegativeBinary checks the one value whose printed form depends on
// how Kubernetes holds it: -2^63 in BinarySI.
func TestMostNegativeBinary(t *testing.T) {
	// Stored as an int64, Kubernetes cannot negate it to find factors of 1024.
	q := MustParse("-1Ki").Add(NewInt(math.MinInt64 + 1024))
	k := resource.MustParse("-1Ki")
	k.Add(*resource.NewQuantity(math.MinInt64+1024, resource.DecimalSI))
	checkSame(t, "int64 -2^63", q, k)
	if got := q.String(); got != "-9223372036854775808" {
		t.Errorf("int64 -2^63 prints %q", got)
	}
	// Stored as an inf.Dec, it prints as -8Ei.
	q = MustParse("-8Ei").Sub(MustParse("1"))
	k = resource.MustParse("-8Ei")
	k.Sub(resource.MustParse("1"))
	checkSame(t, "decimal -2^63", q, k)
	if got := q.String(); got != "-8Ei" {
		t.Errorf("decimal -2^63 prints %q", got)
	}
}

func TestRoundUp(t *testing.T) {
	tests := []struct {
		name, in, want string
		exact          bool
	}{
		{"whole keeps its text", "+1Ki", "+1Ki", true},
		{"fraction rounds up", "1.5", "2", false},
		{"negative rounds away from zero", "-1.5", "-2", false},
		{"milli whole", "1000m", "1", true},
		{"nano", "1n", "1", false},
		{"binary fraction", "1.1Ki", "1127", false},
		{"fractional Gi is whole", "1.5Gi", "1536Mi", true},
		{"beyond int64", "12345678901234567890.5", "12345678901234567891", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			q := MustParse(tt.in)
			got, exact := q.RoundUp(0)
			if got.String() != tt.want || exact != tt.exact {
				t.Errorf("RoundUp(0) of %s = %s, %v, want %s, %v", tt.in, got, exact, tt.want, tt.exact)
			}
			if got.Format() != q.Format() {
				t.Errorf("RoundUp(0) of %s has format %v, want %v", tt.in, got.Format(), q.Format())
			}
			k := resource.MustParse(tt.in)
			kexact := k.RoundUp(0)
			if k.String() != tt.want || kexact != tt.exact {
				t.Errorf("Kubernetes rounds %s to %s, %v, want %s, %v", tt.in, k.String(), kexact, tt.want, tt.exact)
			}
		})
	}
}

func TestIsInteger(t *testing.T) {
	tests := []struct {
		in   string
		want bool
	}{
		{"1", true}, {"1.5", false}, {"1500m", false}, {"2000m", true},
		{"1.5Gi", true}, {"0.5Ki", true}, {"0.1Ki", false}, {"1n", false},
		{"100000000000000000000.5", false}, {"100000000000000000000", true},
	}
	for _, tt := range tests {
		if got := MustParse(tt.in).IsInteger(); got != tt.want {
			t.Errorf("IsInteger(%s) = %v, want %v", tt.in, got, tt.want)
		}
	}
}

// TestValueSemantics checks that arithmetic never changes its operands.
func TestValueSemantics(t *testing.T) {
	a, b := MustParse("100000000000000000000"), MustParse("1.5Gi")
	as, bs := a.Exact(), b.Exact()
	_ = a.Add(b)
	_ = a.Sub(b)
	_, _ = b.RoundUp(3)
	if a.Exact() != as || b.Exact() != bs {
		t.Errorf("operands changed: %s %s, want %s %s", a.Exact(), b.Exact(), as, bs)
	}
}
