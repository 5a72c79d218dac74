package kubeoracle

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	resourcev1 "k8s.io/api/resource/v1"

	"github.com/quotaledger/quota/ledger/quota"
)

// TestResourceClaimUsage compares what a ResourceClaim charges:
// Kubernetes' claim evaluator Usage (as the admission plugin builds it,
// knowing no DeviceClass) against the ledger's Evaluate, for claims of
// exact requests (a count, all devices, the default mode) and of
// alternatives, over two device classes, as the API server stores them.
func TestResourceClaimUsage(t *testing.T) {
	m := newMismatches(t, "resourceclaim usage")
	k := kubeKinds["resourceclaims.resource.k8s.io"]
	for i := 0; i < cases(t, 3000); i++ {
		r := caseRand(m.seed, m.name, i)
		m.compare(i, genResourceClaim(r), func(tree any) outcome {
			in, err := k.readObject(tree)
			if err != nil {
				return outcome{skip: true}
			}
			raw, err := k.served(in)
			if err != nil {
				return outcome{skip: true}
			}
			var c resourcev1.ResourceClaim
			out := checkUsage(mustJSONRaw(raw), &c, func() (corev1.ResourceList, error) { return kubeClaimsDRA.Usage(&c) })
			if out.kind == "" {
				return out
			}
			// Kubernetes also charges each class's devices as the
			// extended resource of the class (DRAExtendedResource);
			// compared without those, does the rest agree?
			rest := checkUsage(mustJSONRaw(raw), &c, func() (corev1.ResourceList, error) {
				l, err := kubeClaimsDRA.Usage(&c)
				for k := range l {
					if strings.HasPrefix(string(k), corev1.ResourceImplicitExtendedClaimsPerClass) {
						delete(l, k)
					}
				}
				return l, err
			})
			if rest.kind == "" {
				out.kind = "only kubernetes has requests.deviceclass.resource.kubernetes.io/<class>; the rest agrees"
			}
			return out
		})
	}
	m.done()
}

// TestQuotaMatchesClaim compares whether a quota is charged for a
// PersistentVolumeClaim: the claim evaluator's Matches against the
// ledger's Quota.Matches, for quotas on storage restricted or not by the
// VolumeAttributesClass scope (Exists, DoesNotExist, In, NotIn) and claims
// naming a class in spec, status or a modification in progress.
func TestQuotaMatchesClaim(t *testing.T) {
	m := newMismatches(t, "quota matches claim")
	for i := 0; i < cases(t, 4000); i++ {
		r := caseRand(m.seed, m.name, i)
		c := genClaim(r)
		status, _ := c["status"].(obj)
		if status == nil {
			status = obj{}
		}
		if chance(r, 0.3) {
			status["currentVolumeAttributesClassName"] = pick(r, "fast", "slow", "")
		}
		if chance(r, 0.2) {
			status["modifyVolumeStatus"] = obj{"targetVolumeAttributesClassName": pick(r, "fast", "slow", ""), "status": "InProgress"}
		}
		if len(status) > 0 {
			c["status"] = status
		}
		tree := obj{"quota": genQuotaOver(r, "q", storageQuotaNames, false, storageScopes), "claim": c}
		m.compare(i, tree, checkClaimMatches)
	}
	m.done()
}

func checkClaimMatches(tree any) outcome {
	t, ok := tree.(map[string]any)
	if !ok || t["quota"] == nil || t["claim"] == nil {
		return outcome{skip: true}
	}
	kq, valid, _, err := kubeQuota(mustJSON(t["quota"]))
	if err != nil || !valid {
		return outcome{skip: true}
	}
	k := kubeKinds["persistentvolumeclaims"]
	in, err := k.readObject(t["claim"])
	if err != nil {
		return outcome{skip: true}
	}
	raw, err := k.served(in)
	if err != nil {
		return outcome{skip: true}
	}
	var c corev1.PersistentVolumeClaim
	if err := jsonUnmarshal(raw, &c); err != nil {
		return outcome{skip: true}
	}
	want, kerr := kubeClaims.Matches(kq, &c)
	if kerr != nil {
		return outcome{kind: "kubernetes fails to match", detail: kerr.Error()}
	}
	lq, err := ledgerQuota(mustJSON(t["quota"]))
	if err != nil {
		return outcome{kind: "the ledger cannot read the quota", detail: err.Error()}
	}
	o, err := decodeLedger(raw)
	if err != nil {
		return outcome{kind: "the ledger cannot read the claim", detail: err.Error()}
	}
	ch, err := quota.Evaluate(o, now)
	if err != nil {
		return outcome{kind: "the ledger cannot evaluate the claim", detail: err.Error()}
	}
	if got := lq.Matches(ch); got != want {
		kind := "kubernetes matches, the ledger does not"
		if got {
			kind = "the ledger matches, kubernetes does not"
		}
		return outcome{kind: kind, detail: "ledger scope facts: " + string(mustJSON(ch.Scope))}
	}
	return outcome{}
}
