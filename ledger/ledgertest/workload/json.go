package workload

import (
	"strconv"
	"time"
)

// jsonWriter appends JSON to a byte slice with the commas placed for it.
// Field order is the order of the calls, which keeps the output
// deterministic and close to what the API server prints.
type jsonWriter struct {
	b     []byte
	first bool // no element written yet in the innermost open container
}

func (w *jsonWriter) comma() {
	if !w.first {
		w.b = append(w.b, ',')
	}
	w.first = false
}

// key starts a member of the current object.
func (w *jsonWriter) key(k string) {
	w.comma()
	w.b = append(w.b, '"')
	w.b = append(w.b, k...)
	w.b = append(w.b, '"', ':')
}

// item starts an element of the current array.
func (w *jsonWriter) item() { w.comma() }

func (w *jsonWriter) open()     { w.b = append(w.b, '{'); w.first = true }
func (w *jsonWriter) close()    { w.b = append(w.b, '}'); w.first = false }
func (w *jsonWriter) openArr()  { w.b = append(w.b, '['); w.first = true }
func (w *jsonWriter) closeArr() { w.b = append(w.b, ']'); w.first = false }

// object starts an object-valued member.
func (w *jsonWriter) object(k string) { w.key(k); w.open() }

// array starts an array-valued member.
func (w *jsonWriter) array(k string) { w.key(k); w.openArr() }

// str writes a JSON string, escaping what JSON requires.
func (w *jsonWriter) str(s string) {
	w.b = append(w.b, '"')
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == '"' || c == '\\':
			w.b = append(w.b, '\\', c)
		case c < 0x20:
			w.b = append(w.b, `\u00`...)
			w.b = append(w.b, hexDigits[c>>4], hexDigits[c&0xf])
		default:
			w.b = append(w.b, c)
		}
	}
	w.b = append(w.b, '"')
}

const hexDigits = "0123456789abcdef"

func (w *jsonWriter) kv(k, v string) { w.key(k); w.str(v) }
func (w *jsonWriter) kint(k string, v int64) {
	w.key(k)
	w.b = strconv.AppendInt(w.b, v, 10)
}
func (w *jsonWriter) kbool(k string, v bool) { w.key(k); w.b = strconv.AppendBool(w.b, v) }
func (w *jsonWriter) knull(k string)         { w.key(k); w.b = append(w.b, "null"...) }

// ktime writes a timestamp as the API server does: RFC 3339, UTC, seconds.
func (w *jsonWriter) ktime(k string, t time.Time) {
	w.key(k)
	w.b = append(w.b, '"')
	w.b = t.UTC().AppendFormat(w.b, "2006-01-02T15:04:05Z")
	w.b = append(w.b, '"')
}

// emptyObject writes `"k":{}`.
func (w *jsonWriter) emptyObject(k string) { w.key(k); w.b = append(w.b, '{', '}'); w.first = false }

// strings writes `"k":["a","b"]`.
func (w *jsonWriter) strings(k string, vs ...string) {
	w.array(k)
	for _, v := range vs {
		w.item()
		w.str(v)
	}
	w.closeArr()
}
