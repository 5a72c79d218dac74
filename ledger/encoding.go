package ledger

import (
	"bytes"
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/quotaledger/quota/ledger/jsonscan"
)

// Limits on the identity fields of an event, Kubernetes' own, so that an
// oversized field is caught where it is written.
const (
	// NameLengthMax is the longest object name an event may carry.
	NameLengthMax = 253
	// NamespaceLengthMax is the longest namespace an event may carry.
	NamespaceLengthMax = 63
	// ResourceLengthMax is the longest group-qualified resource name.
	ResourceLengthMax = 317
	// SourceLengthMax is the longest Source an event may carry.
	SourceLengthMax = 4096
)

// Encode returns the stream encoding of ev: its JSON form, stamped with
// EncodingVersion when ev.Version is zero. It refuses an event that
// Validate refuses, so nothing invalid is ever written.
func Encode(ev Event) ([]byte, error) {
	ev.Version = cmp.Or(ev.Version, EncodingVersion)
	if ev.Version != EncodingVersion {
		return nil, fmt.Errorf("encode: %w: version %d, this code writes version %d", ErrInvalidEvent, ev.Version, EncodingVersion)
	}
	if err := ev.Validate(); err != nil {
		return nil, fmt.Errorf("encode: %w", err)
	}
	b, err := json.Marshal(ev)
	if err != nil {
		return nil, fmt.Errorf("encode %s %s: %w", ev.Type, ev.Name, err)
	}
	return b, nil
}

// currentVersionPrefix is how Encode starts every event it writes.
var currentVersionPrefix = []byte(`{"v":1,`)

// DecodeEvent reads one event from its stream encoding and validates it with
// the same rules Encode applies. An event from a newer encoding fails with
// ErrFutureVersion; any other defect fails with ErrInvalidEvent.
func DecodeEvent(b []byte) (Event, error) {
	// The version is read alone first, so that a newer writer's event is
	// reported as such even when its fields would not parse as this
	// version's; Encode's own prefix needs no parse.
	if !bytes.HasPrefix(b, currentVersionPrefix) {
		var head struct {
			Version *int `json:"v"`
		}
		if err := json.Unmarshal(b, &head); err != nil {
			return Event{}, fmt.Errorf("decode: %w: %v", ErrInvalidEvent, err)
		}
		if head.Version == nil {
			return Event{}, fmt.Errorf("decode: %w: no version", ErrInvalidEvent)
		}
		if *head.Version > EncodingVersion {
			return Event{}, fmt.Errorf("decode: %w: version %d, this code reads up to %d", ErrFutureVersion, *head.Version, EncodingVersion)
		}
		if *head.Version < 1 {
			return Event{}, fmt.Errorf("decode: %w: version %d", ErrInvalidEvent, *head.Version)
		}
	}
	ev, ok := scanEvent(b)
	if !ok {
		var err error
		if ev, err = decodeEventJSON(b); err != nil {
			return Event{}, err
		}
	}
	// Either reader has checked the grammar of every object already.
	if err := ev.validate(objectIsJSON); err != nil {
		return Event{}, fmt.Errorf("decode: %w", err)
	}
	return ev, nil
}

// decodeEventJSON decodes an event with encoding/json, refusing unknown
// fields: such a field would mean a writer changed the encoding without
// changing its version.
func decodeEventJSON(b []byte) (Event, error) {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	var ev Event
	if err := dec.Decode(&ev); err != nil {
		return Event{}, fmt.Errorf("decode: %w: %v", ErrInvalidEvent, err)
	}
	if dec.More() {
		return Event{}, fmt.Errorf("decode: %w: data after the event", ErrInvalidEvent)
	}
	return ev, nil
}

// Validate reports every rule ev breaks, in one error wrapping
// ErrInvalidEvent. The rules per type:
//
//   - every type: a known Type, Version 1, Namespace empty or a DNS label,
//     Source at most SourceLengthMax bytes;
//   - Upsert: Resource, Name and a JSON object in Object;
//   - Delete: Resource and Name;
//   - Resync: Resource and no Name; each item a JSON object; each listed
//     name not empty;
//   - Reserve: Namespace and a positive ReservationTTL, and either
//     Resource, Reservation and a JSON object in Object, or Reservations,
//     each with an ID, a Resource, a Name and a JSON object, IDs distinct;
//   - Expire: Namespace and Reservation;
//   - Deadline: Namespace, Resource "pods" and Name;
//   - Progress: no Namespace, and Progress, each point with a Resource, a
//     ResourceVersion and a time, resources distinct.
//
// Release, set only on a Reserve, is "" or ReleaseByFeed.
//
// Fields that belong to other types (Items outside Resync, a Reservation on
// an Upsert, an Object on an Expire) are refused too, so an event means one
// thing only.
func (ev Event) Validate() error { return ev.validate(isJSONObject) }

// validate is Validate with isObject telling whether a raw value is a JSON
// object.
func (ev Event) validate(isObject func([]byte) bool) error {
	c := &checker{ev: &ev, isObject: isObject}
	c.common()
	c.fieldsOfOtherTypes()
	switch ev.Type {
	case Upsert, Delete:
		c.object()
	case Resync:
		c.resync()
	case Reserve:
		c.reserve()
	case Expire:
		c.expire()
	case Deadline:
		c.need(ev.Namespace != "", "namespace")
		c.need(ev.Resource == "pods", `resource "pods"`)
		c.need(ev.Name != "", "name")
		c.refuse(len(ev.Object) > 0, "object")
		c.refuse(len(ev.Items) > 0, "items")
		c.refuse(ev.Reservation != "", "reservation")
		c.refuse(ev.ReservationTTL != 0, "reservationTTL")
	case Progress:
		c.progress()
	case "":
		c.add("no type")
	default:
		c.add("unknown type %q", ev.Type)
	}
	if len(c.problems) == 0 {
		return nil
	}
	what := string(ev.Type)
	if ev.Name != "" {
		what += " " + clip(ev.Resource) + " " + clip(ev.Namespace) + "/" + clip(ev.Name)
	}
	return fmt.Errorf("%w: %s: %s", ErrInvalidEvent, strings.TrimSpace(what), strings.Join(c.problems, "; "))
}

// checker collects the rules an event breaks.
type checker struct {
	ev       *Event
	isObject func([]byte) bool
	problems []string
}

func (c *checker) add(format string, args ...any) {
	c.problems = append(c.problems, fmt.Sprintf(format, args...))
}

// need notes a field the event's type needs; refuse, one it must not have.
func (c *checker) need(ok bool, field string) {
	if !ok {
		c.add("%s needs %s", c.ev.Type, field)
	}
}

func (c *checker) refuse(present bool, field string) {
	if present {
		c.add("%s must not carry %s", c.ev.Type, field)
	}
}

// objectOK notes a raw value present that is not a JSON object.
func (c *checker) objectOK(field string, raw json.RawMessage) {
	if len(raw) > 0 && !c.isObject(raw) {
		c.add("%s is not a JSON object", field)
	}
}

// common checks the rules of every type: version, namespace, the lengths
// and characters of names.
func (c *checker) common() {
	ev := c.ev
	if ev.Version != EncodingVersion {
		c.add("version %d, want %d", ev.Version, EncodingVersion)
	}
	if ev.Namespace != "" {
		if err := ValidateNamespace(ev.Namespace); err != nil {
			c.add("%v", err)
		}
	}
	if len(ev.Name) > NameLengthMax {
		c.add("name is %d bytes, at most %d", len(ev.Name), NameLengthMax)
	}
	if len(ev.Resource) > ResourceLengthMax {
		c.add("resource is %d bytes, at most %d", len(ev.Resource), ResourceLengthMax)
	}
	if strings.ContainsAny(ev.Resource, " \t\r\n/") {
		c.add("resource %q holds a space or a slash", clip(ev.Resource))
	}
	for _, f := range []struct{ field, value string }{{"name", ev.Name}, {"uid", ev.UID}, {"resourceVersion", ev.ResourceVersion}, {"reservation", ev.Reservation}} {
		if hasControl(f.value) {
			c.add("%s %q holds a control character", f.field, clip(f.value))
		}
	}
	if len(ev.Source) > SourceLengthMax {
		c.add("source is %d bytes, at most %d", len(ev.Source), SourceLengthMax)
	}
	if ev.ReservationTTL < 0 {
		c.add("negative reservationTTL %s", ev.ReservationTTL)
	}
}

// fieldsOfOtherTypes refuses the list fields that belong to one type
// only.
func (c *checker) fieldsOfOtherTypes() {
	ev := c.ev
	c.refuse(ev.Type != Reserve && len(ev.Reservations) > 0, "reservations")
	c.refuse(ev.Type != Expire && len(ev.Expired) > 0, "expired")
	c.refuse(ev.Type != Resync && len(ev.Listed) > 0, "listed")
	c.refuse(ev.Type != Progress && len(ev.Progress) > 0, "progress")
	if ev.Type != Reserve {
		c.refuse(ev.Release != "", "release")
	} else if ev.Release != "" && ev.Release != ReleaseByFeed {
		c.add("release %q, want %q or none", clip(ev.Release), ReleaseByFeed)
	}
}

// progress checks a Progress event: cluster-wide, feed points only.
func (c *checker) progress() {
	ev := c.ev
	c.refuse(ev.Namespace != "", "namespace")
	c.refuse(ev.Resource != "" || ev.Name != "" || ev.UID != "", "an object's identity")
	c.refuse(len(ev.Object) > 0 || len(ev.Items) > 0, "objects")
	c.refuse(ev.Reservation != "" || ev.ReservationTTL != 0, "a reservation")
	c.need(len(ev.Progress) > 0, "progress")
	seen := make(map[string]bool, len(ev.Progress))
	for i, p := range ev.Progress {
		switch {
		case p.Resource == "" || len(p.Resource) > ResourceLengthMax || strings.ContainsAny(p.Resource, " \t\r\n/"):
			c.add("progress[%d] resource %q is not a resource name", i, clip(p.Resource))
		case seen[p.Resource]:
			c.add("progress[%d] repeats resource %q", i, p.Resource)
		}
		seen[p.Resource] = true
		if p.ResourceVersion == "" || hasControl(p.ResourceVersion) {
			c.add("progress[%d] resourceVersion %q is empty or holds a control character", i, clip(p.ResourceVersion))
		}
		if p.At.IsZero() {
			c.add("progress[%d] has no time", i)
		}
	}
}

// object checks an Upsert (which carries its object) or a Delete (which
// may).
func (c *checker) object() {
	ev := c.ev
	c.need(ev.Resource != "", "resource")
	c.need(ev.Name != "", "name")
	if ev.Type == Upsert {
		c.need(len(ev.Object) > 0, "object")
	}
	c.objectOK("object", ev.Object)
	c.refuse(len(ev.Items) > 0, "items")
	c.refuse(ev.Reservation != "", "reservation")
	c.refuse(ev.ReservationTTL != 0, "reservationTTL")
}

func (c *checker) resync() {
	ev := c.ev
	c.need(ev.Resource != "", "resource")
	c.refuse(ev.Name != "", "name")
	c.refuse(ev.UID != "", "uid")
	c.refuse(len(ev.Object) > 0, "object")
	c.refuse(ev.Reservation != "", "reservation")
	c.refuse(ev.ReservationTTL != 0, "reservationTTL")
	for i, name := range ev.Listed {
		switch {
		case name == "":
			c.add("listed[%d] is empty", i)
		case len(name) > NameLengthMax:
			c.add("listed[%d] is %d bytes, at most %d", i, len(name), NameLengthMax)
		case hasControl(name):
			c.add("listed[%d] %q holds a control character", i, name)
		}
	}
	for i, item := range ev.Items {
		c.objectOK(fmt.Sprintf("items[%d]", i), item)
		if len(item) == 0 {
			c.add("items[%d] is empty", i)
		}
	}
}

func (c *checker) reserve() {
	ev := c.ev
	c.need(ev.Namespace != "", "namespace")
	c.need(ev.ReservationTTL > 0, "a positive reservationTTL")
	c.refuse(len(ev.Items) > 0, "items")
	if len(ev.Reservations) == 0 {
		c.need(ev.Resource != "", "resource")
		c.need(ev.Reservation != "", "reservation")
		c.need(len(ev.Object) > 0, "object")
		c.objectOK("object", ev.Object)
		return
	}
	// Several reservations: the single one's fields stay empty, so the
	// event says each thing once.
	c.refuse(ev.Resource != "", "resource beside reservations")
	c.refuse(ev.Name != "", "name beside reservations")
	c.refuse(ev.UID != "", "uid beside reservations")
	c.refuse(ev.Reservation != "", "reservation beside reservations")
	c.refuse(len(ev.Object) > 0, "object beside reservations")
	ids := make(map[string]bool, len(ev.Reservations))
	for i, r := range ev.Reservations {
		field := fmt.Sprintf("reservations[%d]", i)
		if ids[r.ID] && r.ID != "" {
			c.add("%s repeats id %q", field, r.ID)
		}
		ids[r.ID] = true
		c.problems = append(c.problems, reservationProblems(field, r, c.isObject)...)
	}
}

func (c *checker) expire() {
	ev := c.ev
	c.need(ev.Namespace != "", "namespace")
	c.refuse(len(ev.Object) > 0, "object")
	c.refuse(len(ev.Items) > 0, "items")
	c.refuse(ev.ReservationTTL != 0, "reservationTTL")
	if len(ev.Expired) == 0 {
		c.need(ev.Reservation != "", "reservation")
		return
	}
	c.refuse(ev.Reservation != "", "reservation beside expired")
	ids := make(map[string]bool, len(ev.Expired))
	for i, id := range ev.Expired {
		switch {
		case id == "":
			c.add("expired[%d] is empty", i)
		case hasControl(id):
			c.add("expired[%d] %q holds a control character", i, id)
		case ids[id]:
			c.add("expired[%d] repeats %q", i, id)
		}
		ids[id] = true
	}
}

// clipMax is the most of a name that an error quotes.
const clipMax = 80

// clip is s for an error message: whole when short, else its first
// clipMax bytes (whole characters) and how long it is.
func clip(s string) string {
	if len(s) <= clipMax {
		return s
	}
	n := clipMax
	for n > 0 && !utf8.ValidString(s[:n]) {
		n--
	}
	return fmt.Sprintf("%s...(%d bytes)", s[:n], len(s))
}

// reservationProblems lists what is wrong with one reservation of a
// Reserve event, field naming it; isObject tells whether a raw value is a
// JSON object.
func reservationProblems(field string, r Reservation, isObject func([]byte) bool) []string {
	var problems []string
	switch {
	case r.ID == "":
		problems = append(problems, field+" has no id")
	case hasControl(r.ID):
		problems = append(problems, fmt.Sprintf("%s id %q holds a control character", field, r.ID))
	}
	if r.Resource == "" || len(r.Resource) > ResourceLengthMax || strings.ContainsAny(r.Resource, " \t\r\n/") {
		problems = append(problems, fmt.Sprintf("%s has a bad resource %q", field, r.Resource))
	}
	if r.Name == "" || len(r.Name) > NameLengthMax || hasControl(r.Name) {
		problems = append(problems, fmt.Sprintf("%s has a bad name %q", field, r.Name))
	}
	switch {
	case len(r.Object) == 0:
		problems = append(problems, field+" has no object")
	case !isObject(r.Object):
		problems = append(problems, field+".object is not a JSON object")
	}
	if r.Operation != "" && r.Operation != HoldOperation {
		problems = append(problems, fmt.Sprintf("%s has an unknown operation %q (want none, for a create, or %q)", field, r.Operation, HoldOperation))
	}
	return problems
}

// ValidateNamespace checks that ns is an RFC 1123 DNS label, as Kubernetes
// requires of namespaces: the namespaces the log can hold events of. It
// also guarantees that ns is a single NATS subject token: no dots, spaces
// or wildcards.
func ValidateNamespace(ns string) error {
	if len(ns) > NamespaceLengthMax {
		return fmt.Errorf("namespace is %d bytes, at most %d", len(ns), NamespaceLengthMax)
	}
	for i := 0; i < len(ns); i++ {
		c := ns[i]
		alnum := (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9')
		if alnum {
			continue
		}
		if c == '-' && i > 0 && i < len(ns)-1 {
			continue
		}
		return fmt.Errorf("namespace %q is not a DNS label", ns)
	}
	if ns == "" {
		return errors.New("empty namespace")
	}
	return nil
}

// objectIsJSON is isJSONObject for a value whose grammar has been checked
// already: it is an object when it starts as one.
func objectIsJSON(raw []byte) bool {
	t := bytes.TrimLeft(raw, " \t\r\n")
	return len(t) > 0 && t[0] == '{'
}

// isJSONObject reports whether raw is one valid JSON object, as json.Valid
// would, in about half the time.
func isJSONObject(raw []byte) bool {
	if !objectIsJSON(raw) {
		return false
	}
	s := jsonscan.New(raw)
	return s.Skip() && s.AtEnd()
}

// hasControl reports whether s holds an ASCII control character. Identity
// fields end up in message IDs and headers, which cannot carry them, and no
// Kubernetes name contains one.
func hasControl(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < 0x20 || s[i] == 0x7f {
			return true
		}
	}
	return false
}
