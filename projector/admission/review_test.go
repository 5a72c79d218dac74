package admission

import (
	"encoding/json"
	"reflect"
	"testing"
)

// reviewInputs are AdmissionReviews at the edges of what scanReview reads.
var reviewInputs = []string{
	`{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","request":{"uid":"u1","kind":{"group":"","version":"v1","kind":"Pod"},"namespace":"team","operation":"CREATE","userInfo":{"username":"a\"b"},"object":{"kind":"Pod","metadata":{"name":"p"}},"oldObject":null,"dryRun":false}}`,
	` { "request" : { "uid" : "u2", "operation" : "UPDATE", "object" : {"a": [1, {"b": "}"}]} , "oldObject" : {"x":1}, "dryRun" : true } } `,
	`{"request":{"uid":"u3","dryRun":null,"object":{}}}`,
	`{"request":{"uid":"u4","object":{}},"request":{"uid":"u5"}}`,
	`{"request":{"uid":"u6","UID":"u7"}}`,
	`{"Request":{"uid":"u8"}}`,
	`{"request":{"uid":"u\u0039"}}`,
	`{"request":{"uid":"u10","object":{}}`,
	`{"request":{"uid":"u11"}} x`,
	`{"request":null}`,
	`{"request":{"uid":12}}`,
	`{"request":{"uid":"u13","dryRun":"yes"}}`,
	`{"request":{"uid":"u14","object":"not an object","namespace":"n"}}`,
	`{}`,
	`[]`,
	`{"request":{"uid":"u15","operation":"CREATE","object":{"apiVersion":"v1"},"object":{"apiVersion":"v2"}}}`,
	`{"request":{"uid":"u16","operation":"CREATE","options":{"dryRun":["All"]},"dryRun":true}}`,
	`{"request":{"uid":"ü","operation":"CREATE"}}`,
	`{"request":{"ünicode":1,"uid":"u17"}}`,
}

// checkReview checks that wherever scanReview reads a review, it reads
// what encoding/json reads.
func checkReview(t *testing.T, data []byte) bool {
	t.Helper()
	got, ok := scanReview(data)
	if !ok {
		return false
	}
	var in struct {
		Request *request `json:"request"`
	}
	if err := json.Unmarshal(data, &in); err != nil {
		t.Fatalf("scanReview reads what encoding/json refuses (%v):\n%s", err, data)
	}
	if !got.valid {
		t.Fatalf("scanReview did not mark the request of a valid review as valid")
	}
	want := *in.Request
	want.valid = true
	if !reflect.DeepEqual(got, &want) {
		t.Fatalf("scanReview and encoding/json differ on\n%s\n got %+v\nwant %+v", data, got, &want)
	}
	return true
}

func TestScanReviewReadsWhatEncodingJSONReads(t *testing.T) {
	read := 0
	for _, in := range reviewInputs {
		if checkReview(t, []byte(in)) {
			read++
		}
	}
	if read < 4 {
		t.Fatalf("scanReview read only %d of the inputs; the check is too weak", read)
	}
}

func FuzzScanReview(f *testing.F) {
	for _, in := range reviewInputs {
		f.Add([]byte(in))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		checkReview(t, data)
	})
}
