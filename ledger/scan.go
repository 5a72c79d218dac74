package ledger

import (
	"encoding/json"
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
	walked := s.Fields(eventKeys[:], func(f int) bool {
		switch f {
		case fieldVersion:
			v, ok := s.Int()
			ev.Version = int(v)
			return ok
		case fieldType:
			return jsonscan.StringTo(s, &ev.Type)
		case fieldResource:
			return jsonscan.StringTo(s, &ev.Resource)
		case fieldNamespace:
			return jsonscan.StringTo(s, &ev.Namespace)
		case fieldName:
			return jsonscan.StringTo(s, &ev.Name)
		case fieldUID:
			return jsonscan.StringTo(s, &ev.UID)
		case fieldResourceVersion:
			return jsonscan.StringTo(s, &ev.ResourceVersion)
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
			return jsonscan.StringTo(s, &ev.Reservation)
		case fieldReservationTTL:
			v, ok := s.Int()
			ev.ReservationTTL = time.Duration(v)
			return ok
		case fieldRelease:
			return jsonscan.StringTo(s, &ev.Release)
		case fieldReservations:
			// A null is refused here, as Elements refuses it.
			ev.Reservations = []Reservation{}
			return s.Elements(func() bool {
				r, ok := scanReservation(s)
				ev.Reservations = append(ev.Reservations, r)
				return ok
			})
		default: // fieldSource
			return jsonscan.StringTo(s, &ev.Source)
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

var reservationKeys = []string{"id", "resource", "name", "object", "operation"}

// scanReservation reads one reservation; a null is refused, as Fields
// refuses it.
func scanReservation(s *jsonscan.Scanner) (Reservation, bool) {
	var r Reservation
	walked := s.Fields(reservationKeys, func(f int) bool {
		switch f {
		case 0:
			return jsonscan.StringTo(s, &r.ID)
		case 1:
			return jsonscan.StringTo(s, &r.Resource)
		case 2:
			return jsonscan.StringTo(s, &r.Name)
		case 3:
			return scanRaw(s, &r.Object)
		default:
			return jsonscan.StringTo(s, &r.Operation)
		}
	})
	return r, walked
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
