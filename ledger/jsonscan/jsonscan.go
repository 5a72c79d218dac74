package jsonscan

import (
	"strconv"
	"strings"
)

// DepthMax is the deepest nesting of objects and arrays a Scanner accepts,
// encoding/json's limit.
const DepthMax = 10000

// Scanner is a cursor over a JSON document.
type Scanner struct {
	b []byte
	i int
	// depth is the number of objects and arrays the cursor is in.
	depth int
}

// New returns a Scanner at the start of b.
func New(b []byte) *Scanner { return &Scanner{b: b} }

// Members walks the members of the object at the cursor, calling member
// with each key's bytes and whether the key is plain; member must consume
// the value and return true, or return false to stop. Members reports
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

// Fields walks the object at the cursor as Members does, calling read
// with the index in keys (at most 64) of each member's key. It stops, and
// reports false, at a key that is not plain, not one of keys or repeated:
// encoding/json would match a key that differs from a field's name only
// by case, and keep the last of repeated ones.
func (s *Scanner) Fields(keys []string, read func(i int) bool) bool {
	var seen uint64
	return s.Members(func(key []byte, plain bool) bool {
		if !plain {
			return false
		}
		for i, k := range keys {
			if string(key) == k {
				if seen&(1<<i) != 0 {
					return false
				}
				seen |= 1 << i
				return read(i)
			}
		}
		return false
	})
}

// Elements walks the elements of the array at the cursor, calling element
// for each with the cursor at it; element must consume the element and
// return true, or return false to stop. Elements reports whether the array
// was walked to its end.
func (s *Scanner) Elements(element func() bool) bool {
	return s.sequence('[', ']', element)
}

// Len returns the number of elements of the array at the cursor without
// moving past it, to size the slice they are read into. It counts commas
// without checking the grammar: on input that is not valid it may be
// wrong.
func (s *Scanner) Len() int {
	s.space()
	b, i := s.b, s.i+1
	if s.i >= len(b) || b[s.i] != '[' {
		return 0
	}
	for i < len(b) && (b[i] == ' ' || b[i] == '\t' || b[i] == '\r' || b[i] == '\n') {
		i++
	}
	if i >= len(b) || b[i] == ']' {
		return 0
	}
	depth, n := 1, 1
	for ; i < len(b); i++ {
		switch b[i] {
		case '"':
			for i++; i < len(b) && b[i] != '"'; i++ {
				if b[i] == '\\' {
					i++
				}
			}
		case '[', '{':
			depth++
		case ']', '}':
			if depth--; depth == 0 {
				return n
			}
		case ',':
			if depth == 1 {
				n++
			}
		}
	}
	return n
}

// sequence walks the comma-separated items between open and close.
func (s *Scanner) sequence(open, close byte, item func() bool) bool {
	s.space()
	if !s.next(open) {
		return false
	}
	if s.depth++; s.depth > DepthMax {
		return false
	}
	for first := true; ; first = false {
		s.space()
		if s.next(close) {
			s.depth--
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
	return s.word("null")
}

// String reads a string value and returns its bytes; ok is false unless it
// is plain.
func (s *Scanner) String() (value []byte, ok bool) {
	s.space()
	v, plain, ok := s.str()
	return v, ok && plain
}

// StringTo reads a plain string into dst, whose bytes encoding/json
// copies as they are.
func StringTo[T ~string](s *Scanner, dst *T) bool {
	v, ok := s.String()
	if ok {
		*dst = T(v)
	}
	return ok
}

// Int reads an integer as encoding/json reads a number into an int64: a
// fraction, an exponent, a value out of range or any other value is
// refused.
func (s *Scanner) Int() (int64, bool) {
	v, ok := s.Raw()
	if !ok || v[0] != '-' && (v[0] < '0' || v[0] > '9') {
		return 0, false
	}
	n, err := strconv.ParseInt(string(v), 10, 64)
	return n, err == nil
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
		if s.word(lit) {
			return lit, true
		}
	}
	return "", false
}

// Skip moves past the value at the cursor, checking its grammar.
func (s *Scanner) Skip() bool {
	// open holds the objects ('{') and arrays ('[') the value has opened
	// and not closed yet, innermost last.
	var buf [32]byte
	open := buf[:0]
	for {
		// A value is expected.
		s.space()
		if s.i >= len(s.b) {
			return false
		}
		switch c := s.b[s.i]; c {
		case '{', '[':
			s.i++
			s.space()
			if s.next(c + 2) { // '}' and ']' follow '{' and '[' by two
				break
			}
			if s.depth+len(open)+1 > DepthMax {
				return false
			}
			open = append(open, c)
			if c == '{' && !s.key() {
				return false
			}
			continue
		case '"':
			if _, _, ok := s.str(); !ok {
				return false
			}
		case 't':
			if !s.word("true") {
				return false
			}
		case 'f':
			if !s.word("false") {
				return false
			}
		case 'n':
			if !s.word("null") {
				return false
			}
		default:
			if !s.number() {
				return false
			}
		}
		// A value ended: close what it ends, up to the next value.
		for {
			if len(open) == 0 {
				return true
			}
			s.space()
			inner := open[len(open)-1]
			if s.next(',') {
				if inner == '{' && !s.key() {
					return false
				}
				break
			}
			if !s.next(inner + 2) {
				return false
			}
			open = open[:len(open)-1]
		}
	}
}

// key moves past a member's key and the colon after it.
func (s *Scanner) key() bool {
	s.space()
	if _, _, ok := s.str(); !ok {
		return false
	}
	s.space()
	return s.next(':')
}

// word moves past the literal w.
func (s *Scanner) word(w string) bool {
	if len(s.b)-s.i < len(w) || string(s.b[s.i:s.i+len(w)]) != w {
		return false
	}
	s.i += len(w)
	return true
}

// number moves past a number: -?(0|[1-9][0-9]*)(.[0-9]+)?([eE][+-]?[0-9]+)?
func (s *Scanner) number() bool {
	s.next('-')
	switch {
	case s.next('0'):
	case s.i < len(s.b) && '1' <= s.b[s.i] && s.b[s.i] <= '9':
		s.digits()
	default:
		return false
	}
	if s.next('.') && !s.digits() {
		return false
	}
	if s.next('e') || s.next('E') {
		if !s.next('+') {
			s.next('-')
		}
		if !s.digits() {
			return false
		}
	}
	return true
}

// digits moves past one or more decimal digits.
func (s *Scanner) digits() bool {
	start := s.i
	for s.i < len(s.b) && '0' <= s.b[s.i] && s.b[s.i] <= '9' {
		s.i++
	}
	return s.i > start
}

// AtEnd reports whether only white space is left.
func (s *Scanner) AtEnd() bool {
	s.space()
	return s.i == len(s.b)
}

func (s *Scanner) space() {
	if s.i < len(s.b) && s.b[s.i] > ' ' {
		return // compact JSON: no white space at all
	}
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

// str moves past a string and returns its bytes (escapes left as they
// are), whether it is plain, and whether it is a well-formed string.
// Like encoding/json, it does not require the bytes to be valid UTF-8.
func (s *Scanner) str() (value []byte, plain, ok bool) {
	if !s.next('"') {
		return nil, false, false
	}
	b, start := s.b, s.i
	plain = true
	for i := start; i < len(b); {
		c := b[i]
		if printable[c] {
			i++
			continue
		}
		switch {
		case c == '"':
			s.i = i + 1
			return b[start:i], plain, true
		case c == '\\':
			plain = false
			s.i = i
			if !s.escape() {
				return nil, false, false
			}
			i = s.i
			continue
		case c < 0x20:
			return nil, false, false
		}
		plain = false
		i++
	}
	s.i = len(b)
	return nil, false, false
}

// printable holds the bytes of plain strings: printable ASCII but for the
// quote and the backslash.
var printable = func() (t [256]bool) {
	for c := 0x20; c < 0x7f; c++ {
		t[c] = c != '"' && c != '\\'
	}
	return t
}()

// escape moves past an escape sequence within a string.
func (s *Scanner) escape() bool {
	s.i++ // the backslash
	if s.i >= len(s.b) {
		return false
	}
	switch s.b[s.i] {
	case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
		s.i++
		return true
	case 'u':
		s.i++
		for range 4 {
			if s.i >= len(s.b) || !isHex(s.b[s.i]) {
				return false
			}
			s.i++
		}
		return true
	}
	return false
}

func isHex(c byte) bool {
	return '0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F'
}

// Verbatim reports whether json.Marshal writes s between quotes as it is:
// printable ASCII but for the quote, the backslash and the characters it
// escapes for HTML (<, > and &). Hand-written encoders use it to copy
// such strings and leave any other to encoding/json.
func Verbatim(s string) bool {
	for i := range len(s) {
		switch c := s[i]; {
		case c < 0x20 || c >= 0x7f, c == '"', c == '\\', c == '<', c == '>', c == '&':
			return false
		}
	}
	return true
}

// EqualFoldASCII reports whether b, a plain key, equals s but for the
// case of letters: how encoding/json matches a key to a field name.
func EqualFoldASCII(b []byte, s string) bool { return strings.EqualFold(string(b), s) }
