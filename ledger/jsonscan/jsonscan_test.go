package jsonscan

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

var values = []string{
	`{}`, `[]`, `""`, `"a\"b"`, `"a\\"`, `"\\\\\""`, `0`, `-1.5e3`, `true`, `false`, `null`,
	`{"a":1,"b":[1,2,{"c":"}"}],"d":{"e":null}}`,
	` { "a" : [ ] , "b" : { } } `,
	`["x",{"y":"]"},[[]],"\u00e9"]`, ` [ 1 , "a,\"]" ] `, `[{"a":[1,2]},3]`, `[null]`,
	`{"k\u0069nd":"Pod","kind":"Service"}`,
	"\"caf\xc3\xa9 \xff\x7f\"", `"\/\b\f\n\r\t\uABcd"`, `-0`, `0.5`, `1E+2`, `12e-03`,
	// Not valid JSON: a Scanner must refuse each.
	`{"a":1,}`, `[1,]`, `{,}`, `{"a" 1}`, `{"a":}`, `{1:2}`, `[1 2]`, `{"a":1 "b":2}`,
	`01`, `-`, `1.`, `.5`, `1e`, `1e+`, `+1`, `0x10`, `NaN`, `tru`, `nul`, `True`, `truex`,
	"\"a\nb\"", "\"tab\there\"", `"\x"`, `"\u12"`, `"\u12G4"`, `"abc`, `"\`,
	`[`, `{`, `]`, `}`, `{"a":[}`, `[{]}`, `{"a":1}}`, `[[]]]`, `"a" "b"`, ``, `  `,
}

// TestSkipFindsTheEndOfEveryValue checks Skip and Raw on valid values: the
// scanner ends exactly where the value does.
func TestSkipFindsTheEndOfEveryValue(t *testing.T) {
	for _, v := range values {
		checkSkip(t, []byte(v))
	}
}

func checkSkip(t *testing.T, b []byte) {
	t.Helper()
	s := New(b)
	if got, want := s.Skip() && s.AtEnd(), json.Valid(b); got != want {
		t.Fatalf("Skip and AtEnd over %q: %v, json.Valid: %v", b, got, want)
	}
	if !json.Valid(b) {
		return
	}
	s = New(b)
	if !s.Skip() || !s.AtEnd() {
		t.Fatalf("Skip does not end at the end of %s (at %d of %d)", b, s.i, len(b))
	}
	raw, ok := New(b).Raw()
	if !ok || !bytes.Equal(raw, bytes.TrimSpace(b)) {
		t.Fatalf("Raw of %s: %q, %v", b, raw, ok)
	}
	var elements []json.RawMessage
	if json.Unmarshal(b, &elements) == nil {
		if got := New(b).Len(); got != len(elements) {
			t.Fatalf("Len of %s: %d, want %d", b, got, len(elements))
		}
	}
}

// TestMembersReadsWhatEncodingJSONReads walks objects and compares the
// members it finds, raw, with encoding/json's.
func TestMembersReadsWhatEncodingJSONReads(t *testing.T) {
	for _, v := range values {
		checkMembers(t, []byte(v))
	}
}

func checkMembers(t *testing.T, b []byte) {
	t.Helper()
	var want map[string]json.RawMessage
	if json.Unmarshal(b, &want) != nil || want == nil {
		// A walk of what encoding/json refuses as an object must not end.
		s := New(b)
		if s.Members(func([]byte, bool) bool { return s.Skip() }) && s.AtEnd() {
			t.Fatalf("Members walks %q, which encoding/json refuses as an object", b)
		}
		return
	}
	got := map[string]json.RawMessage{}
	s := New(b)
	plainOnly := true
	walked := s.Members(func(key []byte, plain bool) bool {
		if !plain {
			plainOnly = false
			return s.Skip()
		}
		raw, ok := s.Raw()
		got[string(key)] = raw
		return ok
	})
	if !walked || !s.AtEnd() {
		t.Fatalf("Members does not walk %s to its end", b)
	}
	if plainOnly && !reflect.DeepEqual(got, want) {
		t.Fatalf("Members of %s: %v, encoding/json %v", b, got, want)
	}
}

// TestDepthIsEncodingJSONs checks the nesting limit at its edge, for a
// value skipped whole and for one walked level by level.
func TestDepthIsEncodingJSONs(t *testing.T) {
	for _, depth := range []int{DepthMax, DepthMax + 1} {
		for _, open := range []string{"[", `{"a":`} {
			close := map[string]string{"[": "]", `{"a":`: "}"}[open]
			b := []byte(strings.Repeat(open, depth) + "1" + strings.Repeat(close, depth))
			want := json.Valid(b)
			if want != (depth <= DepthMax) {
				t.Fatalf("json.Valid at depth %d: %v; the limit moved", depth, want)
			}
			checkSkip(t, b)
			if open == "[" {
				s := New(b)
				var walk func() bool
				walk = func() bool {
					if s.i < len(s.b) && s.b[s.i] == '[' {
						return s.Elements(walk)
					}
					return s.Skip()
				}
				if got := walk() && s.AtEnd(); got != want {
					t.Errorf("Elements at depth %d: %v, want %v", depth, got, want)
				}
			}
		}
	}
}

func TestElementsAndLiterals(t *testing.T) {
	s := New([]byte(` [ "a" , null , true , false , 7 ] `))
	var got []string
	ok := s.Elements(func() bool {
		if s.Null() {
			got = append(got, "<null>")
			return true
		}
		if v, ok := s.Literal(); ok {
			got = append(got, v)
			return true
		}
		if v, ok := s.String(); ok {
			got = append(got, string(v))
			return true
		}
		raw, ok := s.Raw()
		got = append(got, "raw "+string(raw))
		return ok
	})
	want := []string{"a", "<null>", "true", "false", "raw 7"}
	if !ok || !s.AtEnd() || !reflect.DeepEqual(got, want) {
		t.Fatalf("elements: %v %v, want %v", ok, got, want)
	}
	if v, ok := New([]byte(`"a\u0041"`)).String(); ok {
		t.Errorf("String of an escaped string: %q, want not plain", v)
	}
	if !EqualFoldASCII([]byte("APIVersion"), "apiVersion") || EqualFoldASCII([]byte("kinds"), "kind") {
		t.Errorf("EqualFoldASCII")
	}
}

// TestFieldsAndInt reads objects by exact keys, as encoding/json would
// read them into a struct, and gives up on what it could read otherwise.
func TestFieldsAndInt(t *testing.T) {
	keys := []string{"n", "s"}
	for _, tc := range []struct {
		in   string
		ok   bool
		n    int64
		name string
	}{
		{`{"n":-12,"s":"x"}`, true, -12, "x"},
		{` { "s" : "y" } `, true, 0, "y"},
		{`{"n":1.5}`, false, 0, ""},
		{`{"n":1e3}`, false, 0, ""},
		{`{"n":9223372036854775808}`, false, 0, ""},
		{`{"n":"1"}`, false, 0, ""},
		{`{"n":null}`, false, 0, ""},
		{`{"n":1,"n":2}`, false, 0, ""},
		{`{"N":1}`, false, 0, ""},
		{`{"other":1}`, false, 0, ""},
		{`{"s":"a\u0041"}`, false, 0, ""},
		{`null`, false, 0, ""},
	} {
		s := New([]byte(tc.in))
		var n int64
		var name string
		ok := s.Fields(keys, func(i int) bool {
			if i == 0 {
				v, ok := s.Int()
				n = v
				return ok
			}
			return StringTo(s, &name)
		})
		if ok != tc.ok || tc.ok && (n != tc.n || name != tc.name) {
			t.Errorf("Fields of %s: %v n=%d s=%q, want %v n=%d s=%q", tc.in, ok, n, name, tc.ok, tc.n, tc.name)
		}
	}
}

// TestStringsByteByByte puts every byte value at every position of strings
// of several lengths, after a plain byte and after one that is not, and
// checks the string scan against encoding/json: whether the string is
// valid, and whether a valid one is read as plain exactly when it is
// printable ASCII without escapes.
func TestStringsByteByByte(t *testing.T) {
	for _, n := range []int{1, 7, 8, 9, 16, 23} {
		for pos := range n {
			for c := range 256 {
				for _, before := range []byte{'a', 0xc3} {
					body := bytes.Repeat([]byte{'a'}, n)
					if pos > 0 {
						body[pos-1] = before
					}
					body[pos] = byte(c)
					doc := append(append([]byte{'"'}, body...), '"', ' ', '1')
					s := New(doc)
					v, plain, ok := s.str()
					valid := json.Valid(doc[:n+2])
					if c == '"' {
						// The string ends at the quote, and what follows it
						// is no string.
						valid, v = true, body[:pos]
					}
					if ok != valid {
						t.Fatalf("%q: ok %v, json.Valid %v", doc, ok, valid)
					}
					if !ok {
						continue
					}
					wantPlain := true
					for _, b := range v {
						wantPlain = wantPlain && printable[b]
					}
					if plain != wantPlain || !bytes.Equal(s.b[1:s.i], append(v[:len(v):len(v)], '"')) {
						t.Fatalf("%q: read %q plain %v (to %d), want %q plain %v", doc, v, plain, s.i, v, wantPlain)
					}
				}
			}
		}
	}
}

func FuzzScanner(f *testing.F) {
	for _, v := range values {
		f.Add([]byte(v))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		checkSkip(t, b)
		checkMembers(t, b)
	})
}

// BenchmarkSkip skips a recorded watch event of a pod whole.
func BenchmarkSkip(b *testing.B) {
	f, err := os.ReadFile(filepath.Join("..", "..", "testdata", "samples", "sample-team-a", "events.jsonl"))
	if err != nil {
		b.Fatal(err)
	}
	var line []byte
	for l := range bytes.SplitSeq(f, []byte("\n")) {
		if bytes.Contains(l, []byte(`"kind":"Pod"`)) {
			line = l
			break
		}
	}
	b.SetBytes(int64(len(line)))
	for b.Loop() {
		if s := New(line); !s.Skip() || !s.AtEnd() {
			b.Fatal("not skipped")
		}
	}
}
