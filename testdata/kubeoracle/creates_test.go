package kubeoracle

import (
	"math/rand/v2"
	"testing"
)

// TestAdmitClaimCreate compares the ResourceQuota admission plugin on
// creating a PersistentVolumeClaim: CheckRequest against Admit, verdict
// and message, for quotas on claims, storage, per-class storage and
// claims, some restricted to a VolumeAttributesClass.
func TestAdmitClaimCreate(t *testing.T) {
	runRequests(t, "admit claim create", 4000, genClaimCreate)
}

// TestAdmitServiceCreate compares the same for Services, with quotas on
// services, node ports and load balancers.
func TestAdmitServiceCreate(t *testing.T) {
	runRequests(t, "admit service create", 3000, genServiceCreate)
}

// TestAdmitResourceClaimCreate compares the same for ResourceClaims
// (exact requests, all devices, alternatives), with quotas on the count
// of claims and on devices per DeviceClass.
func TestAdmitResourceClaimCreate(t *testing.T) {
	runRequests(t, "admit resourceclaim create", 3000, genResourceClaimCreate)
}

// TestAdmitCountedObject compares the same for objects quota only counts
// (ConfigMaps, Secrets, Jobs), created or updated, with quotas on legacy
// and count/<resource> names.
func TestAdmitCountedObject(t *testing.T) {
	runRequests(t, "admit counted object", 3000, genCountedRequest)
}

func genClaimCreate(r *rand.Rand) obj {
	return obj{"quotas": genQuotas(r, storageQuotaNames, storageScopes), "object": genClaim(r)}
}

func genServiceCreate(r *rand.Rand) obj {
	return obj{"quotas": genQuotas(r, serviceQuotaNames, nil), "object": genValidService(r)}
}

func genResourceClaimCreate(r *rand.Rand) obj {
	return obj{"quotas": genQuotas(r, deviceQuotaNames, nil), "object": genResourceClaim(r)}
}

func genCountedRequest(r *rand.Rand) obj {
	tree := obj{"quotas": genQuotas(r, countQuotaNames, nil), "object": genCounted(r)}
	if chance(r, 0.2) {
		storedVersion(r, tree["object"].(obj))
		tree["changes"] = []any{change("x", "metadata", "labels", "changed")}
	}
	return tree
}
