package admission

import (
	"encoding/json"
	"reflect"
	"testing"

	admissionv1 "k8s.io/api/admission/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
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
	`{"request":{"uid":"u18","object":{"a":01}}}`,
	`{"request":{"uid":"u19","object":{"a":"tab	here"}}}`,
	`{"request":{"uid":"u20"},"x":[1,]}`,
	`{"request":{"uid":"u21","object":{"a":tru}}}`,
	`{"request":{"uid":"u26","operation":"UPDATE","subResource":"resize","requestSubResource":"resize","object":{},"oldObject":{}}}`,
	`{"request":{"uid":"u27","subResource":"status","SubResource":"x"}}`,
	`{"request":{"uid":"u28","subResource":null}}`,
	`{"request":{"uid":"u22","operation":"CREATE","object":{"apiVersion":"v1","kind":"Pod","metadata":{"name":"p","namespace":"team"},"spec":{"containers":[{"name":"c","image":"i","resources":{"requests":{"cpu":"100m"}}}]}}}}`,
	`{"request":{"uid":"u23","operation":"CREATE","object":{"apiVersion":"v1","kind":"PersistentVolumeClaim","metadata":{"name":"c"},"spec":{"resources":{"requests":{"storage":"1Gi"}}}}}}`,
	`{"request":{"uid":"u24","operation":"CREATE","object":{"apiVersion":"v1","kind":"Pod","metadata":{"name":"p"}},"object":{"apiVersion":"v1","kind":"Pod","metadata":{"name":"q"}}}}`,
	`{"request":{"uid":"u25","operation":"CREATE","object":{"kind":"Pod","apiVersion":"v1","metadata":{"name":"p"}}} x`,
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
	if !reflect.DeepEqual(got, in.Request) {
		t.Fatalf("scanReview and encoding/json differ on\n%s\n got %+v\nwant %+v", data, got, in.Request)
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

// TestEncodeReplyIsJSONMarshal compares encodeReply with json.Marshal on
// the replies the responder sends and on a few it never sends.
func TestEncodeReplyIsJSONMarshal(t *testing.T) {
	allowed := func(uid string) *admissionv1.AdmissionReview {
		return reply(types.UID(uid), &admissionv1.AdmissionResponse{Allowed: true})
	}
	reviews := []*admissionv1.AdmissionReview{
		allowed("705ab4f5-6393-11e8-b7cc-42010a800002"),
		allowed(""),
		allowed(`a"b`),
		allowed(`a\b`),
		allowed("<&>"),
		allowed("é"),
		allowed("tab\there"),
		allowed("\x7f"),
		reply("u1", failure(403, metav1.StatusReasonForbidden, `pods "web-1" is forbidden: exceeded quota: q, requested: pods=1, used: pods=1, limited: pods=1`)),
		reply("u2", failure(400, metav1.StatusReasonBadRequest, "bad request: <object> missing")),
		reply("u3", &admissionv1.AdmissionResponse{Allowed: true, Warnings: []string{"w"}}),
		{Response: &admissionv1.AdmissionResponse{UID: "u4", Allowed: true}},
		{},
	}
	for _, review := range reviews {
		got, err := encodeReply(review)
		if err != nil {
			t.Fatal(err)
		}
		want, err := json.Marshal(review)
		if err != nil {
			t.Fatal(err)
		}
		if string(got) != string(want) {
			t.Errorf("encodeReply:\n got %s\nwant %s", got, want)
		}
	}
}
