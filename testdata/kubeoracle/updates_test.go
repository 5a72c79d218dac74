package kubeoracle

import (
	"math/rand/v2"
	"strings"
	"testing"
)

// TestAdmitPodUpdate compares the ResourceQuota admission plugin on
// updates of stored pods: plain updates (which it evaluates only when they
// move the pod between the Terminating and NotTerminating scopes), the
// resize subresource, the status subresource and others. Whether the
// plugin evaluates the request at all (the evaluator's Handles) is
// compared first, then CheckRequest's verdict and message against Admit's,
// with the stored pod as the old object.
func TestAdmitPodUpdate(t *testing.T) {
	runRequests(t, "admit pod update", 8000, genPodUpdate)
}

// TestAdmitClaimUpdate compares the same for PersistentVolumeClaims:
// expansions and shrinks of the request, changes of the
// VolumeAttributesClass, and status updates (allocated size, current and
// target classes), against quotas on storage, storage classes and the
// VolumeAttributesClass scope.
func TestAdmitClaimUpdate(t *testing.T) {
	runRequests(t, "admit claim update", 4000, genClaimUpdate)
}

// TestAdmitServiceUpdate compares the same for Services: changes of type,
// of ports and of node port allocation.
func TestAdmitServiceUpdate(t *testing.T) {
	runRequests(t, "admit service update", 3000, genServiceUpdate)
}

// runRequests compares n generated admission requests with checkRequest.
func runRequests(t *testing.T, name string, n int, gen func(*rand.Rand) obj) {
	m := newMismatches(t, name)
	skipped := 0
	agreed := map[string]int{}
	for i := 0; i < cases(t, n); i++ {
		r := caseRand(m.seed, m.name, i)
		out := m.compare(i, gen(r), checkRequest)
		if out.skip {
			skipped++
		}
		if out.detail != "" && out.kind == "" {
			agreed[agreedKind(out.detail)]++
		}
	}
	t.Logf("%s: %d cases the API server refuses before admission skipped; agreed verdicts: %v", name, skipped, agreed)
	m.done()
}

// agreedKind names an agreed verdict: the reason of a denial, "allowed"
// after evaluation, or "not evaluated".
func agreedKind(msg string) string {
	for _, k := range []string{"print form only", "exceeded quota", "status unknown", "failed quota", "insufficient quota to consume",
		"insufficient quota to match these scopes", "usage is negative", "prior version", "allowed", "not evaluated"} {
		if strings.Contains(msg, k) {
			return k
		}
	}
	return "other"
}
