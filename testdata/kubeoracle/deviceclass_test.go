package kubeoracle

import (
	"fmt"
	"testing"
)

// TestDeviceClassExtendedResources compares pods asking for an extended
// resource backed by a DRA DeviceClass (deviceclass.resource.kubernetes.io/
// <class>), and quotas tracking requests.deviceclass.resource.kubernetes.io/
// <class>: usage, matching and the admission decision.
func TestDeviceClassExtendedResources(t *testing.T) {
	withDeviceClass = true
	defer func() { withDeviceClass = false }()
	usage := newMismatches(t, "device class usage")
	matches := newMismatches(t, "device class matches")
	admit := newMismatches(t, "device class admission")
	for i := 0; i < cases(t, 2000); i++ {
		r := caseRand(usage.seed, usage.name, i)
		usage.compare(i, genPod(r, podShape{}), checkStoredPodUsage)
		matches.compare(i, obj{"quota": genQuota(r, "q", false), "pod": genPod(r, podShape{})}, checkMatches)
		var quotas []any
		for j := 0; j < 1+r.IntN(2); j++ {
			quotas = append(quotas, genQuota(r, fmt.Sprintf("q%d", j), true))
		}
		pod := genPod(r, podShape{})
		delete(pod["spec"].(obj), "overhead")
		admit.compare(i, obj{"quotas": quotas, "pod": pod}, checkAdmit)
	}
	usage.done()
	matches.done()
	admit.done()
}
