package jsonscan

import (
	"bytes"
	"encoding/json"
	"reflect"
	"testing"
)

var values = []string{
	`{}`, `[]`, `""`, `"a\"b"`, `"a\\"`, `"\\\\\""`, `0`, `-1.5e3`, `true`, `false`, `null`,
	`{"a":1,"b":[1,2,{"c":"}"}],"d":{"e":null}}`,
	` { "a" : [ ] , "b" : { } } `,
	`["x",{"y":"]"},[[]],"\u00e9"]`,
	`{"k\u0069nd":"Pod","kind":"Service"}`,
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
	if !json.Valid(b) {
		return
	}
	s := New(b)
	if !s.Skip() || !s.AtEnd() {
		t.Fatalf("Skip does not end at the end of %s (at %d of %d)", b, s.i, len(b))
	}
	raw, ok := New(b).Raw()
	if !ok || !bytes.Equal(raw, bytes.TrimSpace(b)) {
		t.Fatalf("Raw of %s: %q, %v", b, raw, ok)
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

func FuzzScanner(f *testing.F) {
	for _, v := range values {
		f.Add([]byte(v))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		checkSkip(t, b)
		checkMembers(t, b)
	})
}
