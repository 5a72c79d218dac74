package kubeoracle

import (
	"testing"

	"github.com/quotaledger/quota/ledger/quota"
)

// TestPodUsageOfStoredPods compares what a stored pod charges: Kubernetes'
// pod evaluator Usage against the ledger's Evaluate, for random pods that
// passed the API server's defaulting, conversion and validation, in any
// phase and possibly being deleted.
func TestPodUsageOfStoredPods(t *testing.T) {
	runStoredPodUsage(t, "stored pod usage", podShape{lifecycle: true}, 6000)
}

// TestPodUsageDuringResize compares what a stored pod charges during an
// in-place resize, with container statuses as the kubelet writes them
// (allocated and actual resources of app containers and sidecars) and the
// resize conditions.
func TestPodUsageDuringResize(t *testing.T) {
	runStoredPodUsage(t, "pod usage during resize", podShape{lifecycle: true, resize: true, kubeletResize: true}, 4000)
}

// TestPodUsageWithAnyResizeStatus compares what a stored pod charges when
// its status is any combination of allocated and actual resources, on any
// container, with or without resize conditions.
func TestPodUsageWithAnyResizeStatus(t *testing.T) {
	runStoredPodUsage(t, "pod usage with any resize status", podShape{resize: true}, 4000)
}

func runStoredPodUsage(t *testing.T, name string, shape podShape, n int) {
	m := newMismatches(t, name)
	skipped := 0
	for i := 0; i < cases(t, n); i++ {
		r := caseRand(m.seed, m.name, i)
		if m.compare(i, genPod(r, shape), checkStoredPodUsage).skip {
			skipped++
		}
	}
	t.Logf("%s: %d pods that fail validation skipped", name, skipped)
	m.done()
}

// TestPodUsageOfRawText compares what a pod charges when its quantities
// are read as written (not yet canonical), so that the print format of
// every form of quantity is compared too.
func TestPodUsageOfRawText(t *testing.T) {
	m := newMismatches(t, "raw pod usage")
	for i := 0; i < cases(t, 6000); i++ {
		r := caseRand(m.seed, m.name, i)
		m.compare(i, genPod(r, podShape{lifecycle: true}), func(tree any) outcome { return checkPodUsage(mustJSON(tree)) })
	}
	m.done()
}

func checkStoredPodUsage(tree any) outcome {
	raw, errs, err := storedPod(mustJSON(tree))
	if err != nil || len(errs) > 0 {
		return outcome{skip: true}
	}
	return checkPodUsage(raw)
}

// checkPodUsage compares Kubernetes' pod evaluator Usage with the ledger's
// Evaluate of the same JSON.
func checkPodUsage(raw []byte) outcome {
	kp, kerr := kubePod(raw)
	o, lerr := decodeLedger(raw)
	if kerr != nil {
		if lerr == nil {
			return outcome{kind: "the ledger reads a pod Kubernetes refuses", detail: kerr.Error()}
		}
		return outcome{}
	}
	if lerr != nil {
		return outcome{kind: "the ledger cannot read the pod", detail: lerr.Error()}
	}
	want, kerr := kubePods.Usage(kp)
	got, lerr := quota.Evaluate(o, now)
	if (kerr != nil) != (lerr != nil) {
		return outcome{kind: "error differs", detail: "kubernetes: " + errString(kerr) + "\nledger: " + errString(lerr)}
	}
	if d := listDiff(want, got.Usage); d != "" {
		return outcome{kind: diffKind(want, got.Usage), detail: d}
	}
	return outcome{}
}

func errString(err error) string {
	if err == nil {
		return "<nil>"
	}
	return err.Error()
}
