package ingest

import (
	"crypto/sha256"
	"regexp"
	"testing"

	"github.com/quotaledger/quota/ledger/object"
)

// TestMsgIDIsAShortDigestOfTheEvent checks the message IDs ingest sends:
// 22 base64url characters, the same for the same watch event (and for an
// unchanged manifest), different when the uid, the resourceVersion, the
// watch type or a manifest's content differs. The first ID is pinned:
// IDs of a release must match the previous one's, or a backlog re-sent
// across an upgrade would be appended again.
func TestMsgIDIsAShortDigestOfTheEvent(t *testing.T) {
	pod := func(uid, rv string) *object.Object {
		return &object.Object{Resource: "pods", Namespace: "team-a", Name: "web-1", UID: uid, ResourceVersion: rv}
	}
	var none, other [sha256.Size]byte
	other[0] = 1
	shape := regexp.MustCompile(`^[A-Za-z0-9_-]{22}$`)
	ids := map[string]string{
		"event":                msgID(pod("0b6f1c2e-8d2e-4c7a-9a55-3e0e1f7b2c11", "4711"), "ADDED", none),
		"another uid":          msgID(pod("0b6f1c2e-8d2e-4c7a-9a55-3e0e1f7b2c12", "4711"), "ADDED", none),
		"another version":      msgID(pod("0b6f1c2e-8d2e-4c7a-9a55-3e0e1f7b2c11", "4712"), "ADDED", none),
		"another type":         msgID(pod("0b6f1c2e-8d2e-4c7a-9a55-3e0e1f7b2c11", "4711"), "MODIFIED", none),
		"manifest":             msgID(pod("", ""), "", none),
		"changed manifest":     msgID(pod("", ""), "", other),
		"manifest, other name": msgID(&object.Object{Resource: "pods", Namespace: "team-a", Name: "web-2"}, "", none),
	}
	seen := map[string]string{}
	for what, id := range ids {
		if !shape.MatchString(id) {
			t.Errorf("%s: ID %q is not 22 base64url characters", what, id)
		}
		if prev, ok := seen[id]; ok {
			t.Errorf("%s and %s share the ID %q", what, prev, id)
		}
		seen[id] = what
	}
	if again := msgID(pod("0b6f1c2e-8d2e-4c7a-9a55-3e0e1f7b2c11", "4711"), "ADDED", none); again != ids["event"] {
		t.Errorf("the same event: ID %q, then %q", ids["event"], again)
	}
	if again := msgID(pod("", ""), "", none); again != ids["manifest"] {
		t.Errorf("the same manifest: ID %q, then %q", ids["manifest"], again)
	}
	const pinned = "bWFZyPmFKnYkTMCB8jvnOg" // base64url(SHA-256("0b6f1c2e-8d2e-4c7a-9a55-3e0e1f7b2c11/4711/ADDED")[:16])
	if ids["event"] != pinned {
		t.Errorf("ID of the pinned event: %q, want %q", ids["event"], pinned)
	}
}
