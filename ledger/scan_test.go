package ledger

import (
	"encoding/json"
	"reflect"
	"testing"
	"time"
)

// scanInputs are events at the edges of what scanEvent reads.
func scanInputs(t testing.TB) [][]byte {
	var out [][]byte
	for _, ev := range []Event{
		{Type: Upsert, Resource: "pods", Namespace: "team", Name: "web-1", UID: "u1", ResourceVersion: "42",
			Object: json.RawMessage(`{"apiVersion":"v1","kind":"Pod","metadata":{"name":"web-1"},"spec":{"containers":[]}}`), Source: "pods.jsonl:3"},
		{Type: Delete, Resource: "pods", Namespace: "team", Name: "web-1"},
		{Type: Resync, Resource: "pods", Namespace: "team", Items: []json.RawMessage{json.RawMessage(`{}`), json.RawMessage(`{"a":[1,2]}`)}},
		{Type: Reserve, Resource: "pods", Namespace: "team", Name: "p", Reservation: "r0", ReservationTTL: time.Minute, Object: json.RawMessage(`{"kind":"Pod"}`)},
		{Type: Reserve, Namespace: "team", ReservationTTL: 90 * time.Second, Source: "admission", Reservations: []Reservation{
			{ID: "r1", Resource: "pods", Name: "a", Object: json.RawMessage(`{"kind":"Pod"}`)},
			{ID: "r2", Resource: "pods", Name: "b", Object: json.RawMessage(`{}`)},
			{ID: "r3", Resource: "persistentvolumeclaims", Name: "c", Object: json.RawMessage(`{}`), Operation: HoldOperation}}},
		{Type: Expire, Namespace: "team", Reservation: "r1", Source: "reservation sweep"},
	} {
		b, err := Encode(ev)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, b)
	}
	for _, s := range []string{
		`{"v":1,"type":"resync","resource":"pods","items":[{},null]}`,
		`{"v":1,"type":"resync","resource":"pods","items":null}`,
		`{"v":1,"type":"resync","resource":"pods","items":[]}`,
		`{"v":1,"type":"upsert","resource":"pods","name":"a","object":null}`,
		`{"v":1,"type":"reserve","namespace":"n","reservationTTL":60000000000,"reservations":[]}`,
		`{"v":1,"type":"reserve","namespace":"n","reservationTTL":60000000000,"reservations":null}`,
		`{"v":1,"type":"reserve","namespace":"n","reservationTTL":60000000000,"reservations":[null]}`,
		`{"v":1,"type":"reserve","namespace":"n","reservationTTL":6e10,"reservations":[]}`,
		`{"v":1,"type":"reserve","namespace":"n","reservationTTL":1.5}`,
		`{"v":1,"type":"upsert","resource":"pods","name":"a","Name":"b"}`,
		`{"v":1,"type":"upsert","resource":"pods","name":"a","name":"b"}`,
		`{"v":1,"type":"upsert","resource":"pods","name":"a\u0041"}`,
		`{"v":1,"type":"upsert","resource":"pods","name":"a","extra":1}`,
		`{"v":1,"type":"upsert","resource":"pods","name":"a"} {}`,
		`{"v":1,"type":"upsert","resource":"pods","name":"a"}}`,
		`{"v":1,"type":"upsert","resource":"pods","name":"a","object":{"x":01}}`,
		`{"v":1,"type":"upsert","resource":"pods","name":5}`,
		`{"v":1,"type":"reserve","namespace":"n","reservationTTL":1,"reservations":[{"id":"a","ID":"b"}]}`,
		`{"v":1,"type":"reserve","namespace":"n","reservationTTL":1,"reservations":[{"id":"a","extra":1}]}`,
		`{"v":1,"type":"reserve","namespace":"n","reservationTTL":1,"reservations":[{"id":"a","object":null}]}`,
		`{"v":1,"type":"reserve","namespace":"n","reservationTTL":1,"reservations":[{"id":"a","operation":"UPDATE","operation":"x"}]}`,
		` {"v":1 , "type" : "delete" , "resource":"pods","name":"a" } `,
		`{"v":99999999999999999999}`,
		`{"v":-0,"type":"delete"}`,
	} {
		out = append(out, []byte(s))
	}
	return out
}

// checkScanEvent checks that wherever scanEvent reads an event, the
// encoding/json decoder reads the same one.
func checkScanEvent(t *testing.T, b []byte) bool {
	t.Helper()
	got, ok := scanEvent(b)
	if !ok {
		return false
	}
	want, err := decodeEventJSON(b)
	if err != nil {
		t.Fatalf("scanEvent reads what encoding/json refuses (%v):\n%s", err, b)
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("scanEvent and encoding/json differ on\n%s\n got %#v\nwant %#v", b, got, want)
	}
	return true
}

func TestScanEventReadsWhatEncodingJSONReads(t *testing.T) {
	read := 0
	for _, b := range scanInputs(t) {
		if checkScanEvent(t, b) {
			read++
		}
	}
	if read < 12 {
		t.Fatalf("scanEvent read only %d inputs; the check is too weak", read)
	}
}

func FuzzScanEvent(f *testing.F) {
	for _, b := range scanInputs(f) {
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		checkScanEvent(t, b)
	})
}

// BenchmarkDecodeEvent decodes a Reserve event of eight reservations of
// trimmed pods, as the projector reads them under admission load: through
// DecodeEvent (the scan) and through encoding/json alone.
func BenchmarkDecodeEvent(b *testing.B) {
	pod := json.RawMessage(`{"apiVersion":"v1","kind":"Pod","metadata":{"name":"web","namespace":"team","uid":"8d2a4c"},"spec":{"containers":[{"name":"app","resources":{"limits":{"cpu":"500m","memory":"1Gi"},"requests":{"cpu":"250m","memory":"512Mi"}}}]}}`)
	var rs []Reservation
	for i := range 8 {
		rs = append(rs, Reservation{ID: "r" + string(rune('a'+i)), Resource: "pods", Name: "web-" + string(rune('a'+i)), Object: pod})
	}
	raw, err := Encode(Event{Type: Reserve, Namespace: "team", ReservationTTL: time.Minute, Reservations: rs, Source: "admission"})
	if err != nil {
		b.Fatal(err)
	}
	b.Run("DecodeEvent", func(b *testing.B) {
		b.ReportAllocs()
		b.SetBytes(int64(len(raw)))
		for b.Loop() {
			if _, err := DecodeEvent(raw); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("encoding-json", func(b *testing.B) {
		b.ReportAllocs()
		b.SetBytes(int64(len(raw)))
		for b.Loop() {
			if _, err := decodeEventJSON(raw); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// BenchmarkEncodeReservation encodes a reservation of a trimmed pod:
// copied (EncodeReservation) and through json.Marshal.
func BenchmarkEncodeReservation(b *testing.B) {
	r := Reservation{ID: "8d2a4c7e-1f0b-4b7a-9c55-1d2e3f4a5b6c", Resource: "pods", Name: "web-7f9c",
		Object: json.RawMessage(`{"apiVersion":"v1","kind":"Pod","metadata":{"name":"web-7f9c","namespace":"team","uid":"8d2a4c"},"spec":{"containers":[{"name":"app","resources":{"limits":{"cpu":"500m","memory":"1Gi"},"requests":{"cpu":"250m","memory":"512Mi"}}}]}}`)}
	b.Run("EncodeReservation", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := EncodeReservation(r); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("encoding-json", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := json.Marshal(r); err != nil {
				b.Fatal(err)
			}
		}
	})
}
