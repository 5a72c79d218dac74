package webhook

import (
	"encoding/json"

	"github.com/quotaledger/quota/ledger/jsonscan"
)

// readHead reads what routes a review. The object it carries is relayed
// as bytes, never decoded here: the ledger decodes it. scanHead reads the
// head in one pass over the review, checking its grammar, where it can
// vouch for reading what encoding/json would; anything else is left to
// encoding/json, whose answer (and error) stands.
func readHead(body []byte) (reviewHead, error) {
	if head, ok := scanHead(body); ok {
		return head, nil
	}
	var head reviewHead
	err := json.Unmarshal(body, &head)
	return head, err
}

// scanHead reads the head of a valid review whose keys, at the top and in
// the request, are plain, neither repeated nor variants but for case of
// the names it reads (encoding/json matches keys regardless of case and
// keeps the last of repeated ones), and whose values it reads are plain
// strings, or null for the request.
func scanHead(body []byte) (reviewHead, bool) {
	var head reviewHead
	s := jsonscan.New(body)
	var apiVersion, kind, request bool
	walked := s.Members(func(key []byte, plain bool) bool {
		switch {
		case !plain:
			return false
		case string(key) == "apiVersion":
			return once(&apiVersion) && scanString(s, &head.APIVersion)
		case string(key) == "kind":
			return once(&kind) && scanString(s, &head.Kind)
		case string(key) == "request":
			if !once(&request) {
				return false
			}
			if s.Null() {
				return true
			}
			return scanRequestHead(s, &head)
		case jsonscan.EqualFoldASCII(key, "apiVersion") || jsonscan.EqualFoldASCII(key, "kind") || jsonscan.EqualFoldASCII(key, "request"):
			return false
		}
		return s.Skip()
	})
	return head, walked && s.AtEnd()
}

// scanRequestHead reads the uid and namespace of the request at the
// cursor, skipping the rest (the object among it).
func scanRequestHead(s *jsonscan.Scanner, head *reviewHead) bool {
	head.Request = &requestHead{}
	var uid, namespace bool
	return s.Members(func(key []byte, plain bool) bool {
		switch {
		case !plain:
			return false
		case string(key) == "uid":
			return once(&uid) && scanString(s, &head.Request.UID)
		case string(key) == "namespace":
			return once(&namespace) && scanString(s, &head.Request.Namespace)
		case jsonscan.EqualFoldASCII(key, "uid") || jsonscan.EqualFoldASCII(key, "namespace"):
			return false
		}
		return s.Skip()
	})
}

// once reports whether a key is read for the first time, and notes it in
// seen.
func once(seen *bool) bool {
	if *seen {
		return false
	}
	*seen = true
	return true
}

// scanString reads a plain string into dst.
func scanString(s *jsonscan.Scanner, dst *string) bool {
	v, ok := s.String()
	if ok {
		*dst = string(v)
	}
	return ok
}
