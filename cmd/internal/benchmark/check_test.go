package benchmark

import (
	"testing"
)

// TestReplyChecks runs the measurements' reply checks on replies allowed,
// denied and malformed: the scan's answer agrees with encoding/json's.
func TestReplyChecks(t *testing.T) {
	for _, tc := range []struct {
		reply           string
		review, allowed bool // whether checkAdmissionReview and checkAllowed accept it
	}{
		{`{"kind":"AdmissionReview","apiVersion":"admission.k8s.io/v1","response":{"uid":"u-1","allowed":true}}`, true, true},
		{`{"response":{"uid":"u-1","allowed":false,"status":{"message":"pods \"a\" is forbidden: exceeded quota: q","code":403}}}`, true, false},
		{`{"response":{"allowed":true,"allowed":false}}`, true, false},
		{`{"Response":{"Allowed":true}}`, true, true},
		{`{"response":{"allowed":false},"RESPONSE":{"allowed":true}}`, true, true},
		{`{"response":null}`, false, false},
		{`{"kind":"AdmissionReview"}`, false, false},
		{`{"response":{"allowed":true}`, false, false},
		{`{"response":{"allowed":true}} x`, false, false},
		{`not json`, false, false},
	} {
		if got := checkAdmissionReview([]byte(tc.reply)) == nil; got != tc.review {
			t.Errorf("checkAdmissionReview(%s) accepted %v, want %v", tc.reply, got, tc.review)
		}
		if got := checkAllowed([]byte(tc.reply)) == nil; got != tc.allowed {
			t.Errorf("checkAllowed(%s) accepted %v, want %v", tc.reply, got, tc.allowed)
		}
	}
}

// TestCheckDescribe accepts a describe reply only when it lists quotas
// and carries no error.
func TestCheckDescribe(t *testing.T) {
	for _, tc := range []struct {
		reply string
		ok    bool
	}{
		{`{"list":{"kind":"ResourceQuotaList","apiVersion":"v1","metadata":{"resourceVersion":"7"},"items":[{"metadata":{"name":"q"}}]}}`, true},
		{`{"list":{"kind":"ResourceQuotaList","apiVersion":"v1","metadata":{},"items":[]}}`, false},
		{`{"error":"context deadline exceeded"}`, false},
		{`{"list":{"items":[{}]}`, false},
		{`{}`, false},
		{`not json`, false},
		{`{"list":{"items":[{}]},"list":{"items":[]}}`, false},
		{`{"LIST":{"items":[{}]}}`, true},
		{`{"list":{"items":[{}],"Items":[]}}`, false},
		{`{"list":{"items":[{}]},"Error":"x"}`, false},
		{`{"error":"","list":{"items":[{},{}]}}`, true},
		{`{"error":"x","error":"","list":{"items":[{}]}}`, true},
		{`{"list":{"items":[{]}}`, false},
		{`{"list":{"items":[{}]}} x`, false},
	} {
		if got := checkDescribe([]byte(tc.reply)) == nil; got != tc.ok {
			t.Errorf("checkDescribe(%s) accepted %v, want %v", tc.reply, got, tc.ok)
		}
		// The scan accepts only what encoding/json accepts; the rest it
		// leaves to encoding/json.
		if items, failed, ok := scanDescribe([]byte(tc.reply)); ok && !failed && items > 0 && !tc.ok {
			t.Errorf("scanDescribe(%s) = %d, %v, %v: accepted", tc.reply, items, failed, ok)
		}
	}
	// A reply as the responder writes it is read by the scan alone.
	reply := `{"list":{"kind":"ResourceQuotaList","apiVersion":"v1","metadata":{"resourceVersion":"7"},"items":[{"metadata":{"name":"a"}},{"metadata":{"name":"b"}}]}}`
	if items, failed, ok := scanDescribe([]byte(reply)); !ok || failed || items != 2 {
		t.Errorf("scanDescribe(%s) = %d, %v, %v; want 2, false, true", reply, items, failed, ok)
	}
}

// TestScanReplyReadsTheResponderReplies checks the scan itself on the
// replies the responder writes, which it must read without encoding/json.
func TestScanReplyReadsTheResponderReplies(t *testing.T) {
	for _, tc := range []struct {
		reply                 string
		response, allowed, ok bool
	}{
		{`{"kind":"AdmissionReview","apiVersion":"admission.k8s.io/v1","response":{"uid":"u-1","allowed":true}}`, true, true, true},
		{`{"kind":"AdmissionReview","apiVersion":"admission.k8s.io/v1","response":{"uid":"u-1","allowed":false,"status":{"metadata":{},"status":"Failure","message":"m","reason":"Forbidden","code":403}}}`, true, false, true},
		{`{"response":{"allowed":null}}`, true, false, false},
		{`{"response":{"allowed":true}} x`, true, true, false},
	} {
		response, allowed, ok := scanReply([]byte(tc.reply))
		if response != tc.response || allowed != tc.allowed || ok != tc.ok {
			t.Errorf("scanReply(%s) = %v, %v, %v; want %v, %v, %v", tc.reply, response, allowed, ok, tc.response, tc.allowed, tc.ok)
		}
	}
}

func BenchmarkCheckAdmissionReview(b *testing.B) {
	reply := []byte(`{"kind":"AdmissionReview","apiVersion":"admission.k8s.io/v1","response":{"uid":"6c1c2b8e-5f0e-4a53-9d0c-8a4f5b4f2a11","allowed":true}}`)
	b.ReportAllocs()
	for b.Loop() {
		if err := checkAdmissionReview(reply); err != nil {
			b.Fatal(err)
		}
	}
}
