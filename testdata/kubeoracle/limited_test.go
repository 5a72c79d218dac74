package kubeoracle

import (
	"fmt"
	"math/rand/v2"
	"testing"
)

// TestAdmitWithLimitedResources compares admission under a
// limitedResources configuration of the ResourceQuota plugin (entries of
// a resource with matchContains and matchScopes): CheckRequest given the
// configuration against Admit given the same as Limited, for creates and
// updates of pods, claims, services, ResourceClaims and counted objects,
// with no quota at all now and then.
func TestAdmitWithLimitedResources(t *testing.T) {
	runRequests(t, "admit with limited resources", 5000, func(r *rand.Rand) obj {
		var tree obj
		switch r.IntN(8) {
		case 0, 1:
			pod := genPod(r, podShape{})
			delete(pod["spec"].(obj), "overhead")
			var quotas []any
			for j := 0; j < r.IntN(3); j++ {
				quotas = append(quotas, genValidQuota(r, fmt.Sprintf("q%d", j)))
			}
			tree = obj{"quotas": quotas, "object": pod}
		case 2:
			tree = genPodUpdate(r)
		case 3:
			tree = genClaimCreate(r)
		case 4:
			// Status updates of claims differ without limitedResources
			// (TestAdmitClaimUpdate); plain updates only here.
			tree = genClaimUpdate(r)
			tree["subresource"] = ""
		case 5:
			tree = genServiceCreate(r)
		case 6:
			// Without the class's extended resource, which differs
			// without limitedResources (TestAdmitResourceClaimCreate).
			tree = obj{"quotas": genQuotas(r, deviceQuotaNames[:3], nil), "object": genResourceClaim(r)}
		default:
			tree = genCountedRequest(r)
		}
		if chance(r, 0.2) {
			tree["quotas"] = []any{}
		}
		tree["limited"] = genLimited(r)
		return tree
	})
}
