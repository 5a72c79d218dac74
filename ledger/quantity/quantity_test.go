package quantity

import (
	"errors"
	"testing"

	"k8s.io/apimachinery/pkg/api/resource"
)

// TestParse checks Parse's value, Format and printed form, and its errors,
// against what resource.ParseQuantity does; each case is named after the rule
// it checks.
func TestParse(t *testing.T) {
	const (
		dec = DecimalSI
		bin = BinarySI
		exp = DecimalExponent
	)
	tests := []struct {
		name   string
		in     string
		want   string
		format Format
		err    error
	}{
		{"zero is special", "0", "0", dec, nil},
		{"plain integer", "5", "5", dec, nil},
		{"thousands take the k suffix", "1000", "1k", dec, nil},
		{"half is milli", "0.5", "500m", dec, nil},
		{"three thousand milli is three", "3000m", "3", dec, nil},
		{"canonical k text is kept", "100k", "100k", dec, nil},
		{"canonical M text is kept", "12M", "12M", dec, nil},
		{"non-canonical k is rewritten", "1000k", "1M", dec, nil},
		{"nano", "1n", "1n", dec, nil},
		{"micro", "5u", "5u", dec, nil},
		{"tera", "2T", "2T", dec, nil},
		{"peta", "3P", "3P", dec, nil},
		{"exa", "4E", "4E", dec, nil},
		{"fraction below nano rounds up", "0.1n", "1n", dec, nil},
		{"fraction below nano rounds up past a digit", "1.0001n", "2n", dec, nil},
		{"negative fraction rounds away from zero", "-0.1n", "-1n", dec, nil},
		{"tiny exponent rounds up to nano", "3e-12", "1e-9", exp, nil},
		{"leading dot", ".5", "500m", dec, nil},
		{"trailing dot is kept", "5.", "5.", dec, nil},
		{"trailing dot before a suffix is kept", "1.G", "1.G", dec, nil},
		{"plus sign is kept in canonical text", "+1", "+1", dec, nil},
		{"plus sign is dropped when rewritten", "+1000", "1k", dec, nil},
		{"negative", "-5", "-5", dec, nil},
		{"negative milli", "-1.5", "-1500m", dec, nil},
		{"negative binary", "-1Gi", "-1Gi", bin, nil},
		{"leading zeros are kept", "007", "007", dec, nil},
		{"lone plus is zero", "+", "0", dec, nil},
		{"lone minus is zero", "-", "0", dec, nil},
		{"lone dot is zero", ".", "0", dec, nil},
		{"negative zero", "-0", "0", dec, nil},
		{"zero with a binary suffix keeps BinarySI", "0Ki", "0", bin, nil},
		{"binary Ki", "1Ki", "1Ki", bin, nil},
		{"binary Mi from Ki", "1024Ki", "1Mi", bin, nil},
		{"fractional Gi prints in Mi", "1.5Gi", "1536Mi", bin, nil},
		{"quarter Gi prints in Mi", "1.25Gi", "1280Mi", bin, nil},
		{"two and a half Gi", "2.5Gi", "2560Mi", bin, nil},
		{"binary below 1024 prints decimal", "0.5Ki", "512", bin, nil},
		{"binary below 1 becomes DecimalSI", "0.0001Ki", "102400u", dec, nil},
		{"plus on binary is kept", "+1Ki", "+1Ki", bin, nil},
		{"leading zero on binary is kept", "01Ki", "01Ki", bin, nil},
		{"multiple of 8 is rewritten", "8Ki", "8Ki", bin, nil},
		{"1000Ki is not a whole Mi", "1000Ki", "1000Ki", bin, nil},
		{"Ti on the int64 path keeps plus", "+1Ti", "+1Ti", bin, nil},
		{"Pi on the decimal path drops plus", "+1Pi", "1Pi", bin, nil},
		{"Ei", "1Ei", "1Ei", bin, nil},
		{"binary is capped at 2^63-1", "8Ei", "9223372036854775807", bin, nil},
		{"huge binary is capped", "99999999999999999999Ki", "9223372036854775807", bin, nil},
		{"negative binary is capped", "-8Ei", "-9223372036854775807", bin, nil},
		{"huge decimal is not capped", "100000000000000000000", "100E", dec, nil},
		{"DecimalSI beyond E prints without suffix", "1000E", "1", dec, nil},
		{"exponent e", "1e3", "1e3", exp, nil},
		{"exponent E is kept as written", "1E3", "1E3", exp, nil},
		{"exponent is normalised to a multiple of 3", "1e4", "10e3", exp, nil},
		{"exponent with plus", "1e+5", "100e3", exp, nil},
		{"negative exponent", "1e-3", "1e-3", exp, nil},
		{"exponent zero is kept as written", "12e0", "12e0", exp, nil},
		{"exponent zero prints no suffix", "12.5e0", "12500e-3", exp, nil},
		{"leading zeros are dropped when rewritten", "0070.0", "70", dec, nil},
		{"large exponent", "1e100", "10e99", exp, nil},
		{"exponent truncated to 32 bits", "1e4294967296", "1e4294967296", exp, nil},
		{"fraction with exponent", "1.5e3", "1500", exp, nil},

		{"empty", "", "", dec, ErrFormatWrong},
		{"leading space", " 1", "", dec, ErrFormatWrong},
		{"trailing space", "1 ", "", dec, ErrFormatWrong},
		{"two dots", "1.2.3", "", dec, ErrFormatWrong},
		{"letters only", "abc", "", dec, ErrFormatWrong},
		{"suffix then letter", "1Kix", "", dec, ErrFormatWrong},
		{"double sign", "--1", "", dec, ErrSuffix},
		{"digits after binary suffix", "1Ki1", "", dec, ErrSuffix},
		{"bare e", "12e", "", dec, ErrSuffix},
		{"e with sign only", "1e+", "", dec, ErrSuffix},
		{"double e", "1ee", "", dec, ErrSuffix},
		{"lower-case k binary", "1ki", "", dec, ErrSuffix},
		{"unknown suffix", "1K", "", dec, ErrSuffix},
		{"exponent beyond int64", "1e99999999999999999999", "", dec, ErrSuffix},
		{"sign after number", "1-", "", dec, ErrSuffix},
		{"no digits on the decimal path", "-.e-20", "", dec, ErrNumeric},
		{"beyond ExponentMax", "1e1001", "", dec, ErrRange},
		{"exponent wraps to beyond ExponentMax", "1.5e-2147483648", "", dec, ErrRange},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			q, err := Parse(tt.in)
			if !errors.Is(err, tt.err) {
				t.Fatalf("Parse(%q) error = %v, want %v", tt.in, err, tt.err)
			}
			if err != nil {
				return
			}
			if got := q.String(); got != tt.want {
				t.Errorf("Parse(%q).String() = %q, want %q", tt.in, got, tt.want)
			}
			if got := q.Format(); got != tt.format {
				t.Errorf("Parse(%q).Format() = %v, want %v", tt.in, got, tt.format)
			}
		})
		// The expectations are Kubernetes' own behaviour.
		t.Run(tt.name+"/kubernetes", func(t *testing.T) {
			if tt.err == ErrRange {
				t.Skip("Kubernetes accepts values beyond ExponentMax")
			}
			k, err := resource.ParseQuantity(tt.in)
			if errText(err) != errText(tt.err) {
				t.Fatalf("resource.ParseQuantity(%q) error = %v, want %v", tt.in, err, tt.err)
			}
			if err != nil {
				return
			}
			if got := k.String(); got != tt.want {
				t.Errorf("resource.ParseQuantity(%q).String() = %q, want %q", tt.in, got, tt.want)
			}
			if got := k.Format; got != resource.Format(tt.format.String()) {
				t.Errorf("resource.ParseQuantity(%q).Format = %v, want %v", tt.in, got, tt.format)
			}
		})
	}
}

// TestSum checks that sums are exact and print in the format of their first
// non-zero term.
func TestSum(t *testing.T) {
	tests := []struct {
		name  string
		terms []string
		want  string
	}{
		{"binary terms sum in binary", []string{"10Gi", "2560Mi", "750Mi"}, "13550Mi"},
		{"binary terms with a decimal zero", []string{"10Gi", "0", "2560Mi", "750Mi", "0.0"}, "13550Mi"},
		{"first non-zero term decides the format", []string{"0", "1Gi", "1000"}, "1073742824"},
		{"zero first takes the next format", []string{"0", "1k", "1Ki"}, "2024"},
		{"decimal first keeps decimal", []string{"1", "1Ki"}, "1025"},
		{"binary first prints binary", []string{"1Ki", "1Ki"}, "2Ki"},
		{"binary below 1024 prints decimal", []string{"1Ki", "-1"}, "1023"},
		{"milli sums", []string{"100m", "250m", "650m"}, "1"},
		{"sum beyond int64 is exact", []string{"8E", "8E", "8E"}, "24E"},
		{"binary sum beyond int64", []string{"8Ei", "8Ei", "8Ei"}, "27670116110564327421"},
		{"exponent sum", []string{"1e3", "1"}, "1001"},
		{"nano and exa", []string{"1E", "1n"}, "1000000000000000000000000001n"},
		{"back to zero", []string{"1Gi", "-1Gi"}, "0"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var sum Quantity
			for _, s := range tt.terms {
				sum = sum.Add(MustParse(s))
			}
			if got := sum.String(); got != tt.want {
				t.Errorf("sum of %v = %q, want %q", tt.terms, got, tt.want)
			}
			var k resource.Quantity
			for _, s := range tt.terms {
				k.Add(resource.MustParse(s))
			}
			if got := k.String(); got != tt.want {
				t.Errorf("Kubernetes' sum of %v = %q, want %q", tt.terms, got, tt.want)
			}
		})
	}
}

// errText returns err's message, or "" for nil, to compare errors from the
// two packages, which are different values with the same messages.
func errText(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}
