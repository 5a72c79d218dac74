package ledger

import (
	"encoding/json"
	"strconv"
	"time"

	"github.com/quotaledger/quota/ledger/jsonscan"
)

// scanEvent reads an event of this encoding version as DecodeEvent's
// encoding/json decoder reads it (unknown fields refused), in one pass and
// without reflection: the projector and replay decode every event of the
// stream. It reports false, leaving the event to encoding/json (which
// then also words any error), wherever it cannot vouch for reading the
// same: a key that is not plain, repeated, unknown or a field's name in
// other case, a string that is not plain, a number that is not an integer,
// a null list or reservation, or anything that is not valid JSON.
// TestScanEventReadsWhatEncodingJSONReads and FuzzScanEvent compare the
// two.
func scanEvent(b []byte) (Event, bool) {
	s := jsonscan.New(b)
	var ev Event
	var seen uint32
	walked := s.Members(func(key []byte, plain bool) bool {
		f := eventField(key, plain)
		if f < 0 || seen&(1<<f) != 0 {
			return false
		}
		seen |= 1 << f
		switch f {
		case fieldVersion:
			v, ok := scanInt(s)
			ev.Version = int(v)
			return ok
		case fieldType:
			return scanString(s, &ev.Type)
		case fieldResource:
			return scanString(s, &ev.Resource)
		case fieldNamespace:
			return scanString(s, &ev.Namespace)
		case fieldName:
			return scanString(s, &ev.Name)
		case fieldUID:
			return scanString(s, &ev.UID)
		case fieldResourceVersion:
			return scanString(s, &ev.ResourceVersion)
		case fieldObject:
			return scanRaw(s, &ev.Object)
		case fieldItems:
			if s.Null() {
				return true
			}
			ev.Items = []json.RawMessage{}
			return s.Elements(func() bool {
				var item json.RawMessage
				ok := scanRaw(s, &item)
				ev.Items = append(ev.Items, item)
				return ok
			})
		case fieldReservation:
			return scanString(s, &ev.Reservation)
		case fieldReservationTTL:
			v, ok := scanInt(s)
			ev.ReservationTTL = time.Duration(v)
			return ok
		case fieldRelease:
			return scanString(s, &ev.Release)
		case fieldReservations:
			if s.Null() {
				return false
			}
			ev.Reservations = []Reservation{}
			return s.Elements(func() bool {
				r, ok := scanReservation(s)
				ev.Reservations = append(ev.Reservations, r)
				return ok
			})
		default: // fieldSource
			return scanString(s, &ev.Source)
		}
	})
	if !walked || !s.AtEnd() {
		return Event{}, false
	}
	return ev, true
}

// The fields of an Event, as scanEvent numbers them.
const (
	fieldVersion = iota
	fieldType
	fieldResource
	fieldNamespace
	fieldName
	fieldUID
	fieldResourceVersion
	fieldObject
	fieldItems
	fieldReservation
	fieldReservationTTL
	fieldRelease
	fieldReservations
	fieldSource
)

// eventKeys are the JSON names of the fields, by number.
var eventKeys = [...]string{"v", "type", "resource", "namespace", "name", "uid", "resourceVersion",
	"object", "items", "reservation", "reservationTTL", "release", "reservations", "source"}

// eventField returns the number of the field a plain key names exactly, or
// -1 for any other key (encoding/json would match a key that differs only
// by case, or refuse an unknown one).
func eventField(key []byte, plain bool) int {
	if !plain {
		return -1
	}
	for i, k := range eventKeys {
		if string(key) == k {
			return i
		}
	}
	return -1
}

func scanReservation(s *jsonscan.Scanner) (Reservation, bool) {
	var r Reservation
	if s.Null() {
		return r, false
	}
	var seen uint8
	walked := s.Members(func(key []byte, plain bool) bool {
		if !plain {
			return false
		}
		f := -1
		for i, k := range [...]string{"id", "resource", "name", "object", "operation"} {
			if string(key) == k {
				f = i
			}
		}
		if f < 0 || seen&(1<<f) != 0 {
			return false
		}
		seen |= 1 << f
		switch f {
		case 0:
			return scanString(s, &r.ID)
		case 1:
			return scanString(s, &r.Resource)
		case 2:
			return scanString(s, &r.Name)
		case 3:
			return scanRaw(s, &r.Object)
		default:
			return scanString(s, &r.Operation)
		}
	})
	return r, walked
}

// scanString reads a plain string into dst.
func scanString[T ~string](s *jsonscan.Scanner, dst *T) bool {
	v, ok := s.String()
	if ok {
		*dst = T(v)
	}
	return ok
}

// scanRaw copies the value at the cursor into dst, as json.RawMessage's
// UnmarshalJSON does (a null included).
func scanRaw(s *jsonscan.Scanner, dst *json.RawMessage) bool {
	v, ok := s.Raw()
	if ok {
		*dst = append(json.RawMessage(nil), v...)
	}
	return ok
}

// scanInt reads an integer as encoding/json reads a number into an int64.
func scanInt(s *jsonscan.Scanner) (int64, bool) {
	v, ok := s.Raw()
	if !ok || len(v) == 0 || !(v[0] == '-' || '0' <= v[0] && v[0] <= '9') {
		return 0, false
	}
	n, err := strconv.ParseInt(string(v), 10, 64)
	return n, err == nil
}
