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
		switch eventKeys[f] {
		case "v":
			v, ok := s.Int()
			ev.Version = int(v)
			return ok
		case "type":
			return jsonscan.StringTo(s, &ev.Type)
		case "resource":
			return jsonscan.StringTo(s, &ev.Resource)
		case "namespace":
			return jsonscan.StringTo(s, &ev.Namespace)
		case "name":
			return jsonscan.StringTo(s, &ev.Name)
		case "uid":
			return jsonscan.StringTo(s, &ev.UID)
		case "resourceVersion":
			return jsonscan.StringTo(s, &ev.ResourceVersion)
		case "object":
			return scanRaw(s, &ev.Object)
		case "items":
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
		case "reservation":
			return jsonscan.StringTo(s, &ev.Reservation)
		case "reservationTTL":
			v, ok := s.Int()
			ev.ReservationTTL = time.Duration(v)
			return ok
		case "release":
			return jsonscan.StringTo(s, &ev.Release)
		case "reservations":
			// A null is refused here, as Elements refuses it.
			ev.Reservations = []Reservation{}
			return s.Elements(func() bool {
				r, ok := scanReservation(s)
				ev.Reservations = append(ev.Reservations, r)
				return ok
			})
		default: // "source"
			return jsonscan.StringTo(s, &ev.Source)
		}
	})
	if !walked || !s.AtEnd() {
		return Event{}, false
	}
	return ev, true
}

// eventKeys are the JSON names of an Event's fields.
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
