package kubeoracle

import (
	"encoding/json"
	"testing"

	corev1 "k8s.io/api/core/v1"

	"k8s.io/kubernetes/pkg/api/legacyscheme"
	api "k8s.io/kubernetes/pkg/apis/core"
	"k8s.io/kubernetes/pkg/apis/core/validation"

	"github.com/quotaledger/quota/ledger/quota"
)

// kubeQuota reads a quota as an informer does once the quota controller
// has copied spec.hard to status.hard, and reports whether the API
// server's validation would have accepted its spec.
func kubeQuota(raw []byte) (*corev1.ResourceQuota, bool, string, error) {
	var q corev1.ResourceQuota
	if err := json.Unmarshal(raw, &q); err != nil {
		return nil, false, "", err
	}
	q.Status.Hard = q.Spec.Hard.DeepCopy()
	var internal api.ResourceQuota
	if err := legacyscheme.Scheme.Convert(&q, &internal, nil); err != nil {
		return nil, false, "", err
	}
	errs := validation.ValidateResourceQuota(&internal)
	return &q, len(errs) == 0, errSummary(errs), nil
}

// ledgerQuota reads a quota as the ledger does.
func ledgerQuota(raw []byte) (*quota.Quota, error) {
	o, err := decodeLedger(raw)
	if err != nil {
		return nil, err
	}
	return quota.FromObject(o)
}

// TestQuotaValidity compares which random quotas the API server's
// ValidateResourceQuota accepts with the quotas FromObject marks valid.
func TestQuotaValidity(t *testing.T) {
	m := newMismatches(t, "quota validity")
	for i := 0; i < cases(t, 6000); i++ {
		r := caseRand(m.seed, m.name, i)
		m.compare(i, genQuota(r, "q", false), checkQuotaValidity)
	}
	m.done()
}

func checkQuotaValidity(tree any) outcome {
	raw := mustJSON(tree)
	_, valid, why, err := kubeQuota(raw)
	if err != nil {
		return outcome{skip: true}
	}
	q, err := ledgerQuota(raw)
	if err != nil {
		return outcome{kind: "the ledger cannot read the quota", detail: err.Error()}
	}
	ledgerValid := q.Invalid == ""
	switch {
	case valid && !ledgerValid:
		return outcome{kind: "the ledger refuses a quota Kubernetes accepts", detail: q.Invalid}
	case !valid && ledgerValid:
		return outcome{kind: "the ledger accepts a quota Kubernetes refuses", detail: why}
	}
	return outcome{}
}

// TestQuotaMatchesPod compares whether a quota is charged for a pod:
// Kubernetes' pod evaluator Matches against the ledger's Quota.Matches of
// the pod's charge, for random valid quotas (resources, scopes and scope
// selectors) and random stored pods.
func TestQuotaMatchesPod(t *testing.T) {
	m := newMismatches(t, "quota matches pod")
	skipped := 0
	for i := 0; i < cases(t, 10000); i++ {
		r := caseRand(m.seed, m.name, i)
		tree := obj{"quota": genQuota(r, "q", false), "pod": genPod(r, podShape{lifecycle: true})}
		if m.compare(i, tree, checkMatches).skip {
			skipped++
		}
	}
	t.Logf("%d cases with an invalid quota or pod skipped", skipped)
	m.done()
}

func checkMatches(tree any) outcome {
	t, ok := tree.(map[string]any)
	if !ok || t["quota"] == nil || t["pod"] == nil {
		return outcome{skip: true}
	}
	kq, valid, _, err := kubeQuota(mustJSON(t["quota"]))
	if err != nil || !valid {
		return outcome{skip: true}
	}
	raw, errs, err := storedPod(mustJSON(t["pod"]))
	if err != nil || len(errs) > 0 {
		return outcome{skip: true}
	}
	kp, err := kubePod(raw)
	if err != nil {
		return outcome{skip: true}
	}
	want, kerr := kubePods.Matches(kq, kp)
	lq, err := ledgerQuota(mustJSON(t["quota"]))
	if err != nil {
		return outcome{kind: "the ledger cannot read the quota", detail: err.Error()}
	}
	o, err := decodeLedger(raw)
	if err != nil {
		return outcome{kind: "the ledger cannot read the pod", detail: err.Error()}
	}
	c, err := quota.Evaluate(o, now)
	if err != nil {
		return outcome{kind: "the ledger cannot evaluate the pod", detail: err.Error()}
	}
	got := lq.Matches(c)
	if kerr != nil {
		return outcome{kind: "kubernetes fails to match", detail: kerr.Error()}
	}
	if want != got {
		kind := "kubernetes matches, the ledger does not"
		if got {
			kind = "the ledger matches, kubernetes does not"
		}
		return outcome{kind: kind, detail: "ledger scope facts: " + string(mustJSON(c.Scope))}
	}
	return outcome{}
}
