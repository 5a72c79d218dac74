package quantity

import (
	"testing"

	"k8s.io/apimachinery/pkg/api/resource"
)

var (
	benchQuantity Quantity
	benchString   string
	benchInt      int
)

func BenchmarkParse(b *testing.B) {
	for _, s := range []string{"500m", "1.5Gi", "100k", "2Gi", "1e3"} {
		b.Run(s, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				benchQuantity, _ = Parse(s)
			}
		})
	}
}

func BenchmarkAdd(b *testing.B) {
	for _, tc := range []struct{ name, a, c string }{
		{"int64", "500m", "2"},
		{"binary", "1Gi", "1536Mi"},
		{"beyond int64", "9223372036854775807", "9223372036854775807"},
	} {
		x, y := MustParse(tc.a), MustParse(tc.c)
		b.Run(tc.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				benchQuantity = x.Add(y)
			}
		})
	}
}

func BenchmarkCmp(b *testing.B) {
	x, y := MustParse("500m"), MustParse("2Gi")
	b.ReportAllocs()
	for b.Loop() {
		benchInt = x.Cmp(y)
	}
}

func BenchmarkString(b *testing.B) {
	for _, tc := range []struct{ name, a, c string }{
		{"decimal", "500m", "250m"},
		{"binary", "1Gi", "1536Mi"},
		{"beyond int64", "9223372036854775807", "9223372036854775807"},
	} {
		// A sum has no cached text, so String does the work.
		q := MustParse(tc.a).Add(MustParse(tc.c))
		b.Run(tc.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				benchString = q.String()
			}
		})
	}
}

func BenchmarkFromKube(b *testing.B) {
	for _, s := range []string{"500m", "1", "512Mi", "1.5Gi", "100k", "1e3", "0.1n"} {
		k := resource.MustParse(s)
		b.Run(s, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				benchQuantity, _ = FromKube(k)
			}
		})
	}
}

func BenchmarkParseExact(b *testing.B) {
	for _, s := range []string{"=500m", "512Mi;BinarySI", "1500m;DecimalSI", "1e21;DecimalExponent"} {
		b.Run(s, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				benchQuantity, _ = ParseExact(s)
			}
		})
	}
}
