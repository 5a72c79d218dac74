package kubeoracle

import (
	"fmt"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apiserver/pkg/admission"
	"k8s.io/apiserver/pkg/admission/plugin/resourcequota"

	api "k8s.io/kubernetes/pkg/apis/core"

	"github.com/quotaledger/quota/ledger/quantity"
	"github.com/quotaledger/quota/ledger/quota"
)

// TestAdmitPodCreate compares the ResourceQuota admission plugin's
// decision on creating a pod: Kubernetes' CheckRequest against the
// ledger's Admit, allowed or denied and the exact message, for one to four
// random quotas (hard and used in many forms, some with used missing) and
// a random pod manifest that the API server defaults (and would accept).
//
// The quotas are given to Kubernetes in name order (q0 to q3), the
// ledger's deterministic rule for which refusing quota is named
// (Kubernetes' own informer order is a draw).
func TestAdmitPodCreate(t *testing.T) {
	m := newMismatches(t, "admit pod create")
	skipped, denied := 0, 0
	for i := 0; i < cases(t, 8000); i++ {
		r := caseRand(m.seed, m.name, i)
		var quotas []any
		for j := 0; j < 1+r.IntN(4); j++ {
			quotas = append(quotas, genQuota(r, fmt.Sprintf("q%d", j), true))
		}
		pod := genPod(r, podShape{})
		// The RuntimeClass plugin, which sets and checks the overhead, is
		// not run here.
		delete(pod["spec"].(obj), "overhead")
		tree := obj{"quotas": quotas, "pod": pod}
		out := m.compare(i, tree, checkAdmit)
		if out.skip {
			skipped++
		}
		if out.detail != "" && out.kind == "" {
			denied++
		}
	}
	t.Logf("%d cases with an invalid quota or pod skipped; %d compared cases were denials", skipped, denied)
	m.done()
}

func checkAdmit(tree any) outcome {
	t, ok := tree.(map[string]any)
	if !ok || t["pod"] == nil {
		return outcome{skip: true}
	}
	list, _ := t["quotas"].([]any)
	var kubeQuotas []corev1.ResourceQuota
	var states []quota.QuotaState
	for _, qt := range list {
		raw := mustJSON(qt)
		kq, valid, _, err := kubeQuota(raw)
		if err != nil || !valid {
			return outcome{skip: true}
		}
		kubeQuotas = append(kubeQuotas, *kq)
		lq, err := ledgerQuota(raw)
		if err != nil {
			return outcome{kind: "the ledger cannot read the quota", detail: err.Error()}
		}
		used := quota.ResourceList{}
		for k, v := range kq.Status.Used {
			q, err := quantity.FromKube(v)
			if err != nil {
				return outcome{skip: true}
			}
			used[string(k)] = q
		}
		states = append(states, quota.QuotaState{Quota: lq, Used: used})
	}

	manifest := mustJSON(t["pod"])
	internal, err := defaultedInternalPod(manifest)
	if err != nil || len(validatePod(internal)) > 0 {
		return outcome{skip: true}
	}
	prepareForCreate(internal)
	attrs := admission.NewAttributesRecord(internal, nil, api.Kind("Pod").WithVersion("v1"), "ns", internal.Name,
		corev1.Resource("pods").WithVersion("v1"), "", admission.Create, &metav1.CreateOptions{}, false, nil)
	_, kerr := resourcequota.CheckRequest(kubeQuotas, attrs, kubePods, nil)

	o, err := decodeLedger(manifest)
	if err != nil {
		return outcome{kind: "the ledger cannot read the pod", detail: err.Error()}
	}
	if err := quota.Default(o, quota.Environment{}); err != nil {
		return outcome{kind: "the ledger refuses to default the pod", detail: err.Error()}
	}
	if err := quota.Validate(o, nil, quota.Environment{}); err != nil {
		return outcome{kind: "the ledger refuses a pod Kubernetes accepts", detail: err.Error()}
	}
	d := quota.Admit(quota.AdmitRequest{Operation: quota.Create, Object: o, Quotas: states, Now: now, VerdictOnly: true})
	return compareVerdicts(kerr, d)
}
