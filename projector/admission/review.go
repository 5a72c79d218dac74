package admission

import (
	"encoding/json"

	admissionv1 "k8s.io/api/admission/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/quotaledger/quota/ledger/jsonscan"
)

// decodeRequest reads the request of an AdmissionReview. It takes the
// request's fields from the document without decoding the rest when
// scanRequest can vouch for reading what encoding/json would, and decodes
// the document otherwise.
func decodeRequest(data []byte) (*request, error) {
	if req, ok := scanReview(data); ok {
		return req, nil
	}
	var in struct {
		Request *request `json:"request"`
	}
	if err := json.Unmarshal(data, &in); err != nil {
		return nil, err
	}
	return in.Request, nil
}

// scanReview reads the request of a valid AdmissionReview whose keys, at
// the top and in the request, are plain, neither repeated nor variants of
// the names it reads but for case (encoding/json matches keys regardless of
// case and keeps the last of repeated ones), and whose uid, namespace and
// operation are plain strings. Anything else, invalid JSON included (the
// scan checks the grammar of the whole review), it leaves to encoding/json.
func scanReview(data []byte) (*request, bool) {
	s := jsonscan.New(data)
	var req *request
	walked := s.Members(func(key []byte, plain bool) bool {
		switch {
		case !plain:
			return false
		case string(key) == "request":
			if req != nil {
				return false
			}
			req = &request{}
			return scanRequest(s, req)
		case jsonscan.EqualFoldASCII(key, "request"):
			return false
		}
		return s.Skip()
	})
	if !walked || req == nil || !s.AtEnd() {
		return nil, false
	}
	return req, true
}

// requestFields are the request fields scanRequest reads.
var requestFields = []string{"uid", "namespace", "operation", "object", "oldObject", "dryRun", "subResource"}

func scanRequest(s *jsonscan.Scanner, req *request) bool {
	seen := make(map[string]bool, len(requestFields))
	return s.Members(func(key []byte, plain bool) bool {
		if !plain {
			return false
		}
		name := ""
		for _, f := range requestFields {
			if string(key) == f {
				name = f
			} else if jsonscan.EqualFoldASCII(key, f) {
				return false
			}
		}
		if name == "" {
			return s.Skip()
		}
		if seen[name] {
			return false
		}
		seen[name] = true
		switch name {
		case "uid", "namespace", "operation", "subResource":
			v, ok := s.String()
			if !ok {
				return false
			}
			switch name {
			case "uid":
				req.UID = types.UID(v)
			case "namespace":
				req.Namespace = string(v)
			case "subResource":
				req.SubResource = string(v)
			default:
				req.Operation = admissionv1.Operation(v)
			}
			return true
		case "object":
			raw, ok := s.Raw()
			req.Object = raw
			return ok
		case "oldObject":
			raw, ok := s.Raw()
			req.OldObject = raw
			return ok
		default: // dryRun
			lit, ok := s.Literal()
			if !ok {
				return false
			}
			switch lit {
			case "true", "false":
				v := lit == "true"
				req.DryRun = &v
			}
			return true
		}
	})
}

// encodeReply encodes review as json.Marshal does, writing the common
// reply, an allowed one with nothing else to say, without reflection.
func encodeReply(review *admissionv1.AdmissionReview) ([]byte, error) {
	const (
		head = `{"kind":"AdmissionReview","apiVersion":"admission.k8s.io/v1","response":{"uid":"`
		tail = `","allowed":true}}`
	)
	resp := review.Response
	plain := review.Kind == "AdmissionReview" && review.APIVersion == "admission.k8s.io/v1" && review.Request == nil &&
		resp != nil && resp.Allowed && resp.Result == nil && resp.Patch == nil && resp.PatchType == nil &&
		resp.AuditAnnotations == nil && resp.Warnings == nil && jsonscan.Verbatim(string(resp.UID))
	if !plain {
		return json.Marshal(review)
	}
	b := make([]byte, 0, len(head)+len(resp.UID)+len(tail))
	b = append(b, head...)
	b = append(b, resp.UID...)
	return append(b, tail...), nil
}
