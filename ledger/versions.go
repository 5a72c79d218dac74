package ledger

import (
	"cmp"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"slices"
)

// SubjectVersions takes a VersionsRequest and replies with a
// VersionsReply: a ledger server's projection says which object versions
// it holds, so that an exporter's relist appends a resync only where the
// cluster's list differs.
const SubjectVersions = "quota.query.versions"

// VersionsRequest asks for the digests of one resource's object
// versions, per namespace.
type VersionsRequest struct {
	Resource string `json:"resource"`
}

// VersionsReply answers a VersionsRequest: Digests maps a namespace (""
// for the cluster scope) to the VersionsDigest of the reported objects of
// the resource the projection holds (reservations left out); a namespace
// with none is left out. Error is set when the query failed.
type VersionsReply struct {
	Error   string            `json:"error,omitempty"`
	Digests map[string]string `json:"digests,omitempty"`
}

// ObjectVersion names one object's state as the cluster versions it:
// what a list from the cluster and the log are compared by before a
// resync is appended.
type ObjectVersion struct {
	Name            string `json:"name"`
	UID             string `json:"uid,omitempty"`
	ResourceVersion string `json:"resourceVersion,omitempty"`
}

// VersionsDigest digests a set of object versions, whatever their order:
// two sets give equal digests exactly when they hold the same versions
// (up to SHA-256 collisions). vs is sorted in place.
func VersionsDigest(vs []ObjectVersion) string {
	slices.SortFunc(vs, func(a, b ObjectVersion) int {
		return cmp.Or(cmp.Compare(a.Name, b.Name), cmp.Compare(a.UID, b.UID), cmp.Compare(a.ResourceVersion, b.ResourceVersion))
	})
	h := sha256.New()
	for _, v := range vs {
		fmt.Fprintf(h, "%s\x00%s\x00%s\n", v.Name, v.UID, v.ResourceVersion)
	}
	return hex.EncodeToString(h.Sum(nil))
}
