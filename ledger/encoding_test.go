package ledger_test

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/quotaledger/quota/ledger"
)

func pod(ns, name string) ledger.Event {
	return ledger.Event{
		Type:            ledger.Upsert,
		Resource:        "pods",
		Namespace:       ns,
		Name:            name,
		UID:             "uid-" + name,
		ResourceVersion: "7",
		Object:          json.RawMessage(`{"kind":"Pod","apiVersion":"v1","metadata":{"name":"` + name + `","namespace":"` + ns + `"}}`),
		Source:          "test",
	}
}

func TestEncodeDecodeRoundTrip(t *testing.T) {
	events := []ledger.Event{
		pod("team-a", "web"),
		{Type: ledger.Delete, Resource: "pods", Namespace: "team-a", Name: "web"},
		{Type: ledger.Upsert, Resource: "storageclasses.storage.k8s.io", Name: "fast", Object: json.RawMessage(`{"kind":"StorageClass"}`)},
		{Type: ledger.Resync, Resource: "pods", Namespace: "team-a", Items: []json.RawMessage{json.RawMessage(`{"a":1}`)}},
		{Type: ledger.Resync, Resource: "pods", Namespace: "team-a"},
		{Type: ledger.Resync, Resource: "pods", Namespace: "team-a", Listed: []string{"web-1", "web-2"}},
		{Type: ledger.Reserve, Resource: "pods", Namespace: "team-a", Reservation: "r1", Object: json.RawMessage(`{}`), ReservationTTL: time.Minute},
		{Type: ledger.Reserve, Namespace: "team-a", ReservationTTL: time.Minute, Reservations: []ledger.Reservation{
			{ID: "r2", Resource: "pods", Name: "a", Object: json.RawMessage(`{"kind":"Pod"}`)},
			{ID: "r3", Resource: "services", Name: "b", Object: json.RawMessage(`{"kind":"Service"}`)},
		}},
		{Type: ledger.Expire, Namespace: "team-a", Reservation: "r1"},
		{Type: ledger.Expire, Namespace: "team-a", Expired: []string{"r2", "r3"}},
		{Type: ledger.Deadline, Namespace: "team-a", Resource: "pods", Name: "stuck", UID: "u1"},
		{Type: ledger.Reserve, Resource: "pods", Namespace: "team-a", Reservation: "r4", Object: json.RawMessage(`{}`), ReservationTTL: time.Minute, Release: ledger.ReleaseByFeed},
		{Type: ledger.Progress, Progress: []ledger.FeedPoint{{Resource: "pods", ResourceVersion: "12", At: time.Date(2026, 11, 28, 10, 0, 0, 5, time.UTC)}, {Resource: "jobs.batch", ResourceVersion: "9", At: time.Date(2026, 11, 28, 10, 0, 1, 0, time.UTC)}}, Source: "export quota-export-0"},
	}
	for _, ev := range events {
		b, err := ledger.Encode(ev)
		if err != nil {
			t.Fatalf("encode %+v: %v", ev, err)
		}
		got, err := ledger.DecodeEvent(b)
		if err != nil {
			t.Fatalf("decode %s: %v", b, err)
		}
		ev.Version = ledger.EncodingVersion
		gb, _ := json.Marshal(got)
		wb, _ := json.Marshal(ev)
		if string(gb) != string(wb) {
			t.Errorf("round trip: got %s, want %s", gb, wb)
		}
	}
}

func TestEventValidateRules(t *testing.T) {
	obj := json.RawMessage(`{"kind":"Pod"}`)
	cases := []struct {
		name string
		ev   ledger.Event
		want string // a fragment of the error; "" means valid
	}{
		{"upsert needs a name", ledger.Event{Type: ledger.Upsert, Resource: "pods", Namespace: "a", Object: obj}, "needs name"},
		{"upsert needs a resource", ledger.Event{Type: ledger.Upsert, Namespace: "a", Name: "x", Object: obj}, "needs resource"},
		{"upsert needs an object", ledger.Event{Type: ledger.Upsert, Resource: "pods", Namespace: "a", Name: "x"}, "needs object"},
		{"upsert object must be a JSON object", ledger.Event{Type: ledger.Upsert, Resource: "pods", Namespace: "a", Name: "x", Object: json.RawMessage(`[1]`)}, "not a JSON object"},
		{"upsert must not carry items", ledger.Event{Type: ledger.Upsert, Resource: "pods", Namespace: "a", Name: "x", Object: obj, Items: []json.RawMessage{obj}}, "must not carry items"},
		{"upsert must not carry a reservation", ledger.Event{Type: ledger.Upsert, Resource: "pods", Namespace: "a", Name: "x", Object: obj, Reservation: "r"}, "must not carry reservation"},
		{"cluster-scoped upsert has no namespace", ledger.Event{Type: ledger.Upsert, Resource: "storageclasses.storage.k8s.io", Name: "fast", Object: obj}, ""},
		{"namespace must be a DNS label", ledger.Event{Type: ledger.Upsert, Resource: "pods", Namespace: "a.b", Name: "x", Object: obj}, "not a DNS label"},
		{"namespace must not be a wildcard", ledger.Event{Type: ledger.Upsert, Resource: "pods", Namespace: "*", Name: "x", Object: obj}, "not a DNS label"},
		{"namespace must not be the cluster token", ledger.Event{Type: ledger.Upsert, Resource: "pods", Namespace: "_cluster", Name: "x", Object: obj}, "not a DNS label"},
		{"namespace must not end with a dash", ledger.Event{Type: ledger.Upsert, Resource: "pods", Namespace: "a-", Name: "x", Object: obj}, "not a DNS label"},
		{"namespace at most 63 bytes", ledger.Event{Type: ledger.Upsert, Resource: "pods", Namespace: strings.Repeat("a", 64), Name: "x", Object: obj}, "at most 63"},
		{"delete needs a name", ledger.Event{Type: ledger.Delete, Resource: "pods", Namespace: "a"}, "needs name"},
		{"delete may carry the last object", ledger.Event{Type: ledger.Delete, Resource: "pods", Namespace: "a", Name: "x", Object: obj}, ""},
		{"resync must not carry a name", ledger.Event{Type: ledger.Resync, Resource: "pods", Namespace: "a", Name: "x"}, "must not carry name"},
		{"resync items must be objects", ledger.Event{Type: ledger.Resync, Resource: "pods", Namespace: "a", Items: []json.RawMessage{json.RawMessage(`1`)}}, "items[0] is not a JSON object"},
		{"a split resync lists names", ledger.Event{Type: ledger.Resync, Resource: "pods", Namespace: "a", Listed: []string{"x", "y"}}, ""},
		{"listed names are not empty and hold no control character", ledger.Event{Type: ledger.Resync, Resource: "pods", Namespace: "a", Listed: []string{"", "x\n"}}, `listed[0] is empty; listed[1] "x\n" holds a control character`},
		{"only a resync lists names", ledger.Event{Type: ledger.Upsert, Resource: "pods", Namespace: "a", Name: "x", Object: obj, Listed: []string{"y"}}, "must not carry listed"},
		{"reserve needs a positive ttl", ledger.Event{Type: ledger.Reserve, Resource: "pods", Namespace: "a", Reservation: "r", Object: obj}, "positive reservationTTL"},
		{"reserve needs a namespace", ledger.Event{Type: ledger.Reserve, Resource: "pods", Reservation: "r", Object: obj, ReservationTTL: time.Second}, "needs namespace"},
		{"several reservations", ledger.Event{Type: ledger.Reserve, Namespace: "a", ReservationTTL: time.Second, Reservations: []ledger.Reservation{{ID: "r", Resource: "pods", Name: "x", Object: obj}, {ID: "s", Resource: "pods", Name: "y", Object: obj}}}, ""},
		{"reservations need distinct ids", ledger.Event{Type: ledger.Reserve, Namespace: "a", ReservationTTL: time.Second, Reservations: []ledger.Reservation{{ID: "r", Resource: "pods", Name: "x", Object: obj}, {ID: "r", Resource: "pods", Name: "y", Object: obj}}}, `reservations[1] repeats id "r"`},
		{"each reservation needs a name and an object", ledger.Event{Type: ledger.Reserve, Namespace: "a", ReservationTTL: time.Second, Reservations: []ledger.Reservation{{ID: "r", Resource: "pods"}}}, `reservations[0] has a bad name ""; reservations[0] has no object`},
		{"a reservation object must be a JSON object", ledger.Event{Type: ledger.Reserve, Namespace: "a", ReservationTTL: time.Second, Reservations: []ledger.Reservation{{ID: "r", Resource: "pods", Name: "x", Object: json.RawMessage(`"x"`)}}}, "reservations[0].object is not a JSON object"},
		{"reservations exclude the single reservation's fields", ledger.Event{Type: ledger.Reserve, Namespace: "a", Reservation: "q", Object: obj, ReservationTTL: time.Second, Reservations: []ledger.Reservation{{ID: "r", Resource: "pods", Name: "x", Object: obj}}}, "must not carry reservation beside reservations"},
		{"only a reserve carries reservations", ledger.Event{Type: ledger.Upsert, Resource: "pods", Namespace: "a", Name: "x", Object: obj, Reservations: []ledger.Reservation{{ID: "r", Resource: "pods", Name: "x", Object: obj}}}, "must not carry reservations"},
		{"expire needs a reservation", ledger.Event{Type: ledger.Expire, Namespace: "a"}, "needs reservation"},
		{"expire must not carry a ttl", ledger.Event{Type: ledger.Expire, Namespace: "a", Reservation: "r", ReservationTTL: time.Second}, "must not carry reservationTTL"},
		{"a deadline is a pod's", ledger.Event{Type: ledger.Deadline, Namespace: "a", Resource: "services", Name: "x"}, `needs resource "pods"`},
		{"a deadline names its pod", ledger.Event{Type: ledger.Deadline, Namespace: "a", Resource: "pods"}, "needs name"},
		{"a deadline carries no object", ledger.Event{Type: ledger.Deadline, Namespace: "a", Resource: "pods", Name: "x", Object: json.RawMessage(`{}`)}, "must not carry object"},
		{"expire of several", ledger.Event{Type: ledger.Expire, Namespace: "a", Expired: []string{"r", "s"}}, ""},
		{"expired exclude the single reservation", ledger.Event{Type: ledger.Expire, Namespace: "a", Reservation: "q", Expired: []string{"r"}}, "must not carry reservation beside expired"},
		{"expired ids are distinct and not empty", ledger.Event{Type: ledger.Expire, Namespace: "a", Expired: []string{"r", "", "r", "x\n"}}, `expired[1] is empty; expired[2] repeats "r"; expired[3] "x\n" holds a control character`},
		{"only an expire carries expired", ledger.Event{Type: ledger.Delete, Resource: "pods", Namespace: "a", Name: "x", Expired: []string{"r"}}, "must not carry expired"},
		{"only a reserve carries a release", ledger.Event{Type: ledger.Expire, Namespace: "a", Reservation: "r", Release: ledger.ReleaseByFeed}, "must not carry release"},
		{"a release is the feed's or none", ledger.Event{Type: ledger.Reserve, Resource: "pods", Namespace: "a", Reservation: "r", Object: obj, ReservationTTL: time.Second, Release: "clock"}, `release "clock", want "feed" or none`},
		{"progress is cluster-wide", ledger.Event{Type: ledger.Progress, Namespace: "a", Progress: []ledger.FeedPoint{{Resource: "pods", ResourceVersion: "1", At: time.Unix(1, 0)}}}, "must not carry namespace"},
		{"progress needs points", ledger.Event{Type: ledger.Progress}, "needs progress"},
		{"progress points are whole and distinct", ledger.Event{Type: ledger.Progress, Progress: []ledger.FeedPoint{{Resource: "pods", ResourceVersion: "1", At: time.Unix(1, 0)}, {Resource: "pods"}, {Resource: "a/b", ResourceVersion: "2", At: time.Unix(1, 0)}}}, `progress[1] repeats resource "pods"; progress[1] resourceVersion "" is empty or holds a control character; progress[1] has no time; progress[2] resource "a/b" is not a resource name`},
		{"only a progress carries points", ledger.Event{Type: ledger.Delete, Resource: "pods", Namespace: "a", Name: "x", Progress: []ledger.FeedPoint{{Resource: "pods", ResourceVersion: "1", At: time.Unix(1, 0)}}}, "must not carry progress"},
		{"type is required", ledger.Event{Resource: "pods", Namespace: "a", Name: "x"}, "no type"},
		{"type must be known", ledger.Event{Type: "create", Resource: "pods", Namespace: "a", Name: "x"}, `unknown type "create"`},
		{"every violation is reported", ledger.Event{Type: ledger.Upsert, Namespace: "A"}, "needs resource; upsert needs name; upsert needs object"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := ledger.Encode(c.ev)
			if c.want == "" {
				if err != nil {
					t.Fatalf("got %v, want valid", err)
				}
				return
			}
			if err == nil || !errors.Is(err, ledger.ErrInvalidEvent) || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("got %v, want ErrInvalidEvent containing %q", err, c.want)
			}
		})
	}
}

func TestDecodeEventRules(t *testing.T) {
	cases := []struct {
		name    string
		raw     string
		wantErr error
		want    string
	}{
		{"future version is named", `{"v":2,"type":"teleport","whatever":[1]}`, ledger.ErrFutureVersion, "version 2"},
		{"missing version", `{"type":"delete","resource":"pods","namespace":"a","name":"x"}`, ledger.ErrInvalidEvent, "no version"},
		{"version zero", `{"v":0,"type":"delete","resource":"pods","namespace":"a","name":"x"}`, ledger.ErrInvalidEvent, "version 0"},
		{"not JSON", `not json`, ledger.ErrInvalidEvent, ""},
		{"unknown field", `{"v":1,"type":"delete","resource":"pods","namespace":"a","name":"x","colour":"red"}`, ledger.ErrInvalidEvent, "colour"},
		{"trailing data", `{"v":1,"type":"delete","resource":"pods","namespace":"a","name":"x"} {}`, ledger.ErrInvalidEvent, "data after the event"},
		{"rules of the type apply when reading", `{"v":1,"type":"delete","resource":"pods","namespace":"a"}`, ledger.ErrInvalidEvent, "needs name"},
		{"valid delete", `{"v":1,"type":"delete","resource":"pods","namespace":"a","name":"x"}`, nil, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := ledger.DecodeEvent([]byte(c.raw))
			if c.wantErr == nil {
				if err != nil {
					t.Fatalf("got %v, want nil", err)
				}
				return
			}
			if !errors.Is(err, c.wantErr) || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("got %v, want %v containing %q", err, c.wantErr, c.want)
			}
		})
	}
}

func TestEncodeRefusesOtherVersions(t *testing.T) {
	ev := pod("a", "x")
	ev.Version = 2
	if _, err := ledger.Encode(ev); !errors.Is(err, ledger.ErrInvalidEvent) {
		t.Fatalf("got %v, want ErrInvalidEvent", err)
	}
}

func FuzzDecodeEvent(f *testing.F) {
	reservations := []ledger.Reservation{{ID: "r1", Resource: "pods", Name: "a", Object: json.RawMessage(`{"kind":"Pod"}`)}, {ID: "r2", Resource: "pods", Name: "b", Object: json.RawMessage(`{}`)}}
	for _, ev := range []ledger.Event{pod("a", "x"), {Type: ledger.Expire, Namespace: "a", Reservation: "r"},
		{Type: ledger.Reserve, Namespace: "a", ReservationTTL: time.Minute, Reservations: reservations, Source: "admission"}} {
		b, err := ledger.Encode(ev)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Add([]byte(`{"v":2}`))
	f.Add([]byte(`{"v":1,"type":"resync","resource":"pods","items":[{},null]}`))
	f.Add([]byte(`{"v":-1}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		ev, err := ledger.DecodeEvent(b)
		if err != nil {
			return
		}
		// What decodes must encode again and decode to the same event.
		again, err := ledger.Encode(ev)
		if err != nil {
			t.Fatalf("decoded event does not encode: %v", err)
		}
		ev2, err := ledger.DecodeEvent(again)
		if err != nil {
			t.Fatalf("re-encoded event does not decode: %v", err)
		}
		b1, _ := json.Marshal(ev)
		b2, _ := json.Marshal(ev2)
		if string(b1) != string(b2) {
			t.Fatalf("round trip: got %s, want %s", b2, b1)
		}
	})
}

// TestEncodeReserveIsEncode checks that a Reserve event assembled from
// reservations encoded one by one is byte for byte the event Encode
// writes, and decodes to it.
func TestEncodeReserveIsEncode(t *testing.T) {
	obj := func(name string) json.RawMessage {
		return json.RawMessage(`{"apiVersion":"v1","kind":"Pod","metadata":{"name":"` + name + `","annotations":{"a":"\u003cb\u003e \u0026 é"}}}`)
	}
	// Objects a reservation copies as they are (compact printable ASCII,
	// escapes included), and ones json.Marshal rewrites or that take its
	// path (white space between tokens or in a string, an HTML character,
	// characters outside ASCII).
	copied := []json.RawMessage{
		json.RawMessage(`{"apiVersion":"v1","kind":"Pod","metadata":{"name":"e"},"spec":{"containers":[{"name":"c","resources":{"requests":{"cpu":"250m"}}}]}}`),
		json.RawMessage(`{"kind":"\u0050od"}`), json.RawMessage(`{"kind":"a\u2028b"}`), json.RawMessage(`{"kind":"a\/b"}`),
	}
	marshalled := []json.RawMessage{
		json.RawMessage(`{"kind": "Pod"}`), json.RawMessage("{\n\"kind\":\"Pod\"}"), json.RawMessage(`{"kind":"a b"}`),
		json.RawMessage(`{"kind":"<Pod>"}`), json.RawMessage(`{"kind":"Pöd"}`), json.RawMessage("{\"kind\":\"a\u2028b\"}"),
	}
	var edges []ledger.Reservation
	for i, o := range append(copied, marshalled...) {
		edges = append(edges, ledger.Reservation{ID: "e" + string(rune('0'+i)), Resource: "pods", Name: "e" + string(rune('0'+i)), Object: o})
	}
	groups := [][]ledger.Reservation{
		edges,
		{{ID: "r1", Resource: "pods", Name: "a", Object: obj("a")}},
		{{ID: "r2", Resource: "pods", Name: "b", Object: obj("b")}, {ID: "r<3>&", Resource: "services", Name: "c", Object: obj("c")}, {ID: "é", Resource: "jobs.batch", Name: "d", Object: obj("d")}},
		{{ID: "u1", Resource: "persistentvolumeclaims", Name: "data", Object: copied[0], Operation: ledger.HoldOperation}, {ID: "r4", Resource: "pods", Name: "e", Object: obj("e")}},
	}
	for i, source := range []string{"admission", "", `a "quoted" <source>`} {
		release := ""
		if i == 1 {
			release = ledger.ReleaseByFeed
		}
		for _, group := range groups {
			var encoded []ledger.EncodedReservation
			for _, r := range group {
				e, err := ledger.EncodeReservation(r)
				if err != nil {
					t.Fatal(err)
				}
				encoded = append(encoded, e)
			}
			got, err := ledger.EncodeReserve("team-a", 90*time.Second, release, source, encoded)
			if err != nil {
				t.Fatal(err)
			}
			ev := ledger.Event{Type: ledger.Reserve, Namespace: "team-a", ReservationTTL: 90 * time.Second, Release: release, Reservations: group, Source: source}
			want, err := ledger.Encode(ev)
			if err != nil {
				t.Fatal(err)
			}
			if string(got.Bytes()) != string(want) {
				t.Fatalf("EncodeReserve:\n got %s\nwant %s", got.Bytes(), want)
			}
			if _, err := ledger.DecodeEvent(got.Bytes()); err != nil {
				t.Fatal(err)
			}
		}
	}
	r, _ := ledger.EncodeReservation(ledger.Reservation{ID: "r", Resource: "pods", Name: "a", Object: obj("a")})
	for _, c := range []struct {
		name string
		ns   string
		ttl  time.Duration
		rs   []ledger.EncodedReservation
		want string
	}{
		{"a repeated id", "team-a", time.Second, []ledger.EncodedReservation{r, r}, `repeats id "r"`},
		{"no reservations", "team-a", time.Second, nil, "needs reservations"},
		{"a bad namespace", "Team", time.Second, []ledger.EncodedReservation{r}, "not a DNS label"},
		{"no ttl", "team-a", 0, []ledger.EncodedReservation{r}, "positive reservationTTL"},
		{"a zero reservation", "team-a", time.Second, []ledger.EncodedReservation{{}}, "not made by EncodeReservation"},
	} {
		if _, err := ledger.EncodeReserve(c.ns, c.ttl, "", "s", c.rs); err == nil || !errors.Is(err, ledger.ErrInvalidEvent) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: got %v, want ErrInvalidEvent with %q", c.name, err, c.want)
		}
	}
	if _, err := ledger.EncodeReserve("team-a", time.Second, "never", "s", []ledger.EncodedReservation{r}); err == nil || !strings.Contains(err.Error(), `release "never"`) {
		t.Errorf("an unknown release: got %v", err)
	}
	if _, err := ledger.EncodeReservation(ledger.Reservation{ID: "r", Resource: "pods", Name: "a", Object: json.RawMessage(`[1]`)}); err == nil || !strings.Contains(err.Error(), "not a JSON object") {
		t.Errorf("a reservation of a non-object: got %v", err)
	}
	if _, err := ledger.EncodeReservation(ledger.Reservation{ID: "r", Resource: "pods", Name: "a", Object: obj("a"), Operation: "DELETE"}); err == nil || !strings.Contains(err.Error(), `unknown operation "DELETE"`) {
		t.Errorf("a reservation of a delete: got %v", err)
	}
}

// FuzzEncodeReserve checks EncodeReservation and EncodeReserve against
// Encode on reservations of arbitrary objects and identities.
func FuzzEncodeReserve(f *testing.F) {
	f.Add(`{"kind":"Pod","metadata":{"name":"a"}}`, "r1", "a")
	f.Add(`{"kind": "Pod"}`, "r<2>", "b")
	f.Add("{\"kind\":\"P\u00f6d\"}", "é", "c")
	f.Add(`{"a":[1,2.5e3,true,null,{"b":"\u2028"}]}`, "r", "d")
	f.Fuzz(func(t *testing.T, object, id, name string) {
		r := ledger.Reservation{ID: id, Resource: "pods", Name: name, Object: json.RawMessage(object)}
		e, err := ledger.EncodeReservation(r)
		if err != nil {
			return
		}
		got, err := ledger.EncodeReserve("team-a", time.Minute, "", "fuzz", []ledger.EncodedReservation{e})
		if err != nil {
			t.Fatal(err)
		}
		want, err := ledger.Encode(ledger.Event{Type: ledger.Reserve, Namespace: "team-a", ReservationTTL: time.Minute, Reservations: []ledger.Reservation{r}, Source: "fuzz"})
		if err != nil {
			t.Fatalf("Encode refuses what EncodeReservation accepts: %v", err)
		}
		if string(got.Bytes()) != string(want) {
			t.Fatalf("EncodeReserve:\n got %s\nwant %s", got.Bytes(), want)
		}
	})
}

// TestValidateClipsLongNames checks that an error about an event quotes
// an oversized name, namespace or resource by its start and length only.
func TestValidateClipsLongNames(t *testing.T) {
	long := strings.Repeat("é", 20000) // 40 000 bytes, two to a character
	for _, ev := range []ledger.Event{
		{Version: ledger.EncodingVersion, Type: ledger.Upsert, Resource: "configmaps", Namespace: "ns", Name: long, Object: []byte(`{}`)},
		{Version: ledger.EncodingVersion, Type: ledger.Upsert, Resource: long, Namespace: "ns", Name: "x", Object: []byte(`{}`)},
		{Version: ledger.EncodingVersion, Type: ledger.Upsert, Resource: "configmaps", Namespace: long, Name: "x", Object: []byte(`{}`)},
	} {
		err := ev.Validate()
		if !errors.Is(err, ledger.ErrInvalidEvent) {
			t.Fatalf("Validate: %v, want ErrInvalidEvent", err)
		}
		msg := err.Error()
		if len(msg) > 400 || !strings.Contains(msg, "...(40000 bytes)") || !utf8.ValidString(msg) {
			t.Errorf("error of %d bytes, want the long value clipped to its start and length in valid UTF-8: %.300s", len(msg), msg)
		}
	}
}
