package ledger

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/quotaledger/quota/ledger/jsonscan"
)

// EncodedReservation is one reservation in its stream encoding, made by
// EncodeReservation where each request is prepared, so that assembling a
// Reserve event of several (EncodeReserve) on the one goroutine that
// decides them is only a concatenation.
type EncodedReservation struct {
	id   string
	json []byte
}

// ID returns the reservation's ID.
func (e EncodedReservation) ID() string { return e.id }

// EncodeReservation checks r by the rules Validate applies to a
// reservation of a Reserve event and returns its encoding.
func EncodeReservation(r Reservation) (EncodedReservation, error) {
	if problems := reservationProblems("reservation", r, isJSONObject); len(problems) > 0 {
		return EncodedReservation{}, fmt.Errorf("encode: %w: %s", ErrInvalidEvent, strings.Join(problems, "; "))
	}
	if b, ok := appendReservation(r); ok {
		return EncodedReservation{id: r.ID, json: b}, nil
	}
	b, err := json.Marshal(r)
	if err != nil {
		return EncodedReservation{}, fmt.Errorf("encode reservation %s: %w", r.ID, err)
	}
	return EncodedReservation{id: r.ID, json: b}, nil
}

// appendReservation writes r as json.Marshal does when that is a copy: its
// strings need no escaping and its object is compactASCII. It reports
// false for anything else, for json.Marshal to write.
func appendReservation(r Reservation) ([]byte, bool) {
	if !jsonscan.Verbatim(r.ID) || !jsonscan.Verbatim(r.Resource) || !jsonscan.Verbatim(r.Name) || !jsonscan.Verbatim(r.Operation) || !compactASCII(r.Object) {
		return nil, false
	}
	b := make([]byte, 0, len(`{"id":"","resource":"","name":"","object":,"operation":""}`)+len(r.ID)+len(r.Resource)+len(r.Name)+len(r.Object)+len(r.Operation))
	b = append(b, `{"id":"`...)
	b = append(b, r.ID...)
	b = append(b, `","resource":"`...)
	b = append(b, r.Resource...)
	b = append(b, `","name":"`...)
	b = append(b, r.Name...)
	b = append(b, `","object":`...)
	b = append(b, r.Object...)
	if r.Operation != "" {
		b = append(b, `,"operation":"`...)
		b = append(b, r.Operation...)
		b = append(b, '"')
	}
	return append(b, '}'), true
}

// compactASCII reports whether raw holds printable ASCII only, without
// white space and without the characters json.Marshal escapes for HTML:
// what json.Marshal writes of a valid json.RawMessage as it is.
func compactASCII(raw []byte) bool {
	for _, c := range raw {
		if c <= ' ' || c >= 0x7f || c == '<' || c == '>' || c == '&' {
			return false
		}
	}
	return true
}

// Encoded is an event in its stream encoding, made by this package's
// encoders only, for Stream.AppendEncoded.
type Encoded struct {
	namespace string
	what      string
	data      []byte
}

// EncodeReserve returns, checked by the same rules, byte for byte what
// Encode returns for Event{Type: Reserve, Namespace: namespace,
// ReservationTTL: ttl, Release: release, Reservations: …, Source: source}.
func EncodeReserve(namespace string, ttl time.Duration, release, source string, reservations []EncodedReservation) (Encoded, error) {
	var problems []string
	if err := ValidateNamespace(namespace); err != nil {
		problems = append(problems, err.Error())
	}
	if ttl <= 0 {
		problems = append(problems, "reserve needs a positive reservationTTL")
	}
	if release != "" && release != ReleaseByFeed {
		problems = append(problems, fmt.Sprintf("release %q, want %q or none", clip(release), ReleaseByFeed))
	}
	if len(source) > SourceLengthMax {
		problems = append(problems, fmt.Sprintf("source is %d bytes, at most %d", len(source), SourceLengthMax))
	}
	if len(reservations) == 0 {
		problems = append(problems, "reserve needs reservations")
	}
	ids := make(map[string]bool, len(reservations))
	size := 0
	for i, r := range reservations {
		if r.json == nil {
			problems = append(problems, fmt.Sprintf("reservations[%d] was not made by EncodeReservation", i))
		}
		if ids[r.id] {
			problems = append(problems, fmt.Sprintf("reservations[%d] repeats id %q", i, r.id))
		}
		ids[r.id] = true
		size += len(r.json) + 1
	}
	if len(problems) > 0 {
		return Encoded{}, fmt.Errorf("encode: %w: reserve: %s", ErrInvalidEvent, strings.Join(problems, "; "))
	}
	// The layout is json.Marshal's for Event: fields in declaration order,
	// empty ones left out but for resource, which has no omitempty.
	ns, _ := json.Marshal(namespace)
	src, _ := json.Marshal(source)
	b := make([]byte, 0, 128+len(ns)+len(src)+size)
	b = append(b, `{"v":1,"type":"reserve","resource":"","namespace":`...)
	b = append(b, ns...)
	b = append(b, `,"reservationTTL":`...)
	b = strconv.AppendInt(b, int64(ttl), 10)
	if release != "" {
		b = append(b, `,"release":"`...)
		b = append(b, release...)
		b = append(b, '"')
	}
	b = append(b, `,"reservations":[`...)
	for i, r := range reservations {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, r.json...)
	}
	b = append(b, ']')
	if source != "" {
		b = append(b, `,"source":`...)
		b = append(b, src...)
	}
	b = append(b, '}')
	what := fmt.Sprintf("reserve of %d in %s", len(reservations), namespace)
	return Encoded{namespace: namespace, what: what, data: b}, nil
}
