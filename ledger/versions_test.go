package ledger

import "testing"

// TestVersionsDigestIsTheSet: the digest is the same for the same
// versions in any order, and differs when any name, uid or version does.
func TestVersionsDigestIsTheSet(t *testing.T) {
	base := []ObjectVersion{{"a", "u1", "10"}, {"b", "u2", "11"}}
	want := VersionsDigest([]ObjectVersion{base[1], base[0]})
	if got := VersionsDigest(base); got != want {
		t.Fatalf("order changed the digest: %s, %s", got, want)
	}
	for _, other := range [][]ObjectVersion{
		{{"a", "u1", "10"}},
		{{"a", "u1", "10"}, {"b", "u3", "11"}},
		{{"a", "u1", "10"}, {"b", "u2", "12"}},
		{{"a", "u1", "10"}, {"c", "u2", "11"}},
		{{"a", "u1", "1"}, {"0b", "u2", "11"}},
	} {
		if VersionsDigest(other) == want {
			t.Errorf("%v digests as %v", other, base)
		}
	}
}
