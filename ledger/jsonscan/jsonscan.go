// Package jsonscan finds the members of JSON objects without decoding
// them, for the few places where a handful of fields must be read from a
// large document cheaply: the kind of an object before its typed decode,
// the request of an AdmissionReview.
//
// A Scanner does not check the grammar of what it skips, and it vouches
// only for plain strings (printable ASCII without escapes), whose bytes are
// their value. Callers validate the document by other means (encoding/json
// decodes it, or json.Valid checks it) and fall back to encoding/json
// whenever the scanner cannot vouch for reading what encoding/json would.
package jsonscan

import "bytes"

// Scanner is a cursor over a JSON document.
type Scanner struct {
	b []byte
	i int
}

// New returns a Scanner at the start of b.
func New(b []byte) *Scanner { return &Scanner{b: b} }

// Members walks the members of the object at the cursor. For each member
// it calls member with the key's bytes and whether the key is plain;
// member must consume the value (with String, Raw, Skip, Members or
// Literal) and return true, or return false to stop. Members reports
// whether the object was walked to its end.
func (s *Scanner) Members(member func(key []byte, plain bool) bool) bool {
	return s.sequence('{', '}', func() bool {
		key, plain, ok := s.str()
		if !ok {
			return false
		}
		s.space()
		if !s.next(':') {
			return false
		}
		s.space()
		return member(key, plain)
	})
}

// Elements walks the elements of the array at the cursor, calling element
// for each with the cursor at it; element must consume the element and
// return true, or return false to stop. Elements reports whether the array
// was walked to its end.
func (s *Scanner) Elements(element func() bool) bool {
	return s.sequence('[', ']', element)
}

// sequence walks the comma-separated items between open and close.
func (s *Scanner) sequence(open, close byte, item func() bool) bool {
	s.space()
	if !s.next(open) {
		return false
	}
	for first := true; ; first = false {
		s.space()
		if s.next(close) {
			return true
		}
		if !first {
			if !s.next(',') {
				return false
			}
			s.space()
		}
		if !item() {
			return false
		}
	}
}

// Null consumes a null and reports whether there was one.
func (s *Scanner) Null() bool {
	s.space()
	if len(s.b)-s.i >= 4 && string(s.b[s.i:s.i+4]) == "null" {
		s.i += 4
		return true
	}
	return false
}

// String reads a string value and returns its bytes; ok is false unless it
// is plain.
func (s *Scanner) String() (value []byte, ok bool) {
	s.space()
	v, plain, ok := s.str()
	return v, ok && plain
}

// Raw returns the bytes of the value at the cursor and moves past it.
func (s *Scanner) Raw() ([]byte, bool) {
	s.space()
	start := s.i
	if !s.Skip() {
		return nil, false
	}
	return s.b[start:s.i], true
}

// Literal reads true, false or null.
func (s *Scanner) Literal() (value string, ok bool) {
	s.space()
	for _, lit := range []string{"true", "false", "null"} {
		if len(s.b)-s.i >= len(lit) && string(s.b[s.i:s.i+len(lit)]) == lit {
			s.i += len(lit)
			return lit, true
		}
	}
	return "", false
}

// Skip moves past the value at the cursor. It finds the value's end
// without checking the value's grammar.
func (s *Scanner) Skip() bool {
	s.space()
	if s.i >= len(s.b) {
		return false
	}
	switch s.b[s.i] {
	case '"':
		return s.skipString()
	case '{', '[':
		depth := 0
		for s.i < len(s.b) {
			switch s.b[s.i] {
			case '"':
				if !s.skipString() {
					return false
				}
				continue
			case '{', '[':
				depth++
			case '}', ']':
				depth--
				if depth == 0 {
					s.i++
					return true
				}
			}
			s.i++
		}
		return false
	default:
		start := s.i
		for s.i < len(s.b) {
			switch s.b[s.i] {
			case ',', '}', ']', ' ', '\t', '\r', '\n':
				return s.i > start
			}
			s.i++
		}
		return s.i > start
	}
}

// AtEnd reports whether only white space is left.
func (s *Scanner) AtEnd() bool {
	s.space()
	return s.i == len(s.b)
}

func (s *Scanner) space() {
	for s.i < len(s.b) {
		switch s.b[s.i] {
		case ' ', '\t', '\r', '\n':
			s.i++
		default:
			return
		}
	}
}

func (s *Scanner) next(c byte) bool {
	if s.i < len(s.b) && s.b[s.i] == c {
		s.i++
		return true
	}
	return false
}

// skipString moves past a string without looking at its bytes but for
// quotes and the backslashes before them.
func (s *Scanner) skipString() bool {
	if !s.next('"') {
		return false
	}
	for {
		q := bytes.IndexByte(s.b[s.i:], '"')
		if q < 0 {
			s.i = len(s.b)
			return false
		}
		end := s.i + q
		// The quote ends the string unless an odd number of backslashes
		// escapes it.
		n := 0
		for k := end - 1; k >= s.i && s.b[k] == '\\'; k-- {
			n++
		}
		s.i = end + 1
		if n%2 == 0 {
			return true
		}
	}
}

// str moves past a string and returns its bytes, whether it is plain, and
// whether it ends.
func (s *Scanner) str() (value []byte, plain, ok bool) {
	if !s.next('"') {
		return nil, false, false
	}
	start := s.i
	plain = true
	for s.i < len(s.b) {
		c := s.b[s.i]
		switch {
		case c == '"':
			s.i++
			return s.b[start : s.i-1], plain, true
		case c == '\\':
			plain = false
			s.i++ // the escaped byte is skipped below
		case c < 0x20 || c >= 0x7f:
			plain = false
		}
		s.i++
	}
	return nil, false, false
}

// EqualFoldASCII reports whether b equals s but for the case of ASCII
// letters: how encoding/json matches a plain key to a field name.
func EqualFoldASCII(b []byte, s string) bool {
	if len(b) != len(s) {
		return false
	}
	for i := range b {
		x, y := b[i], s[i]
		if 'A' <= x && x <= 'Z' {
			x += 'a' - 'A'
		}
		if 'A' <= y && y <= 'Z' {
			y += 'a' - 'A'
		}
		if x != y {
			return false
		}
	}
	return true
}
