package kubeoracle

import (
	"encoding/json"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/quotaledger/quota/ledger/quota"
)

// TestClaimUsage compares what a PersistentVolumeClaim charges:
// Kubernetes' claim evaluator Usage against the ledger's Evaluate, for
// random claims (requests in many forms, class from the beta annotation
// or spec.storageClassName, expansion in progress).
func TestClaimUsage(t *testing.T) {
	m := newMismatches(t, "claim usage")
	for i := 0; i < cases(t, 6000); i++ {
		r := caseRand(m.seed, m.name, i)
		m.compare(i, genClaim(r), func(tree any) outcome {
			var c corev1.PersistentVolumeClaim
			return checkUsage(tree, &c, func() (corev1.ResourceList, error) { return kubeClaims.Usage(&c) })
		})
	}
	m.done()
}

// TestServiceUsage compares what a Service charges: Kubernetes' service
// evaluator Usage against the ledger's Evaluate, for random services of
// every type, with and without node ports.
func TestServiceUsage(t *testing.T) {
	m := newMismatches(t, "service usage")
	for i := 0; i < cases(t, 4000); i++ {
		r := caseRand(m.seed, m.name, i)
		m.compare(i, genService(r), func(tree any) outcome {
			var s corev1.Service
			return checkUsage(tree, &s, func() (corev1.ResourceList, error) { return kubeService.Usage(&s) })
		})
	}
	m.done()
}

// checkUsage reads tree into into as an informer does, and compares
// Kubernetes' usage of it with the ledger's.
func checkUsage(tree any, into runtime.Object, usage func() (corev1.ResourceList, error)) outcome {
	raw := mustJSON(tree)
	if err := json.Unmarshal(raw, into); err != nil {
		return outcome{skip: true}
	}
	want, kerr := usage()
	o, err := decodeLedger(raw)
	if err != nil {
		return outcome{kind: "the ledger cannot read the object", detail: err.Error()}
	}
	got, lerr := quota.Evaluate(o, now)
	if (kerr != nil) != (lerr != nil) {
		return outcome{kind: "error differs", detail: "kubernetes: " + errString(kerr) + "\nledger: " + errString(lerr)}
	}
	if d := listDiff(want, got.Usage); d != "" {
		return outcome{kind: diffKind(want, got.Usage), detail: d}
	}
	return outcome{}
}
