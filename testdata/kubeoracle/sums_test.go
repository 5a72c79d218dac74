package kubeoracle

import (
	"errors"
	"math/rand/v2"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	quotav1 "k8s.io/apiserver/pkg/quota/v1"
	"k8s.io/apiserver/pkg/quota/v1/generic"
	"k8s.io/client-go/tools/cache"

	"k8s.io/kubernetes/pkg/quota/v1/evaluator/core"

	"github.com/quotaledger/quota/ledger/quota"
)

// TestQuotaUsedSums compares a quota's used as the quota controller
// computes it, quotav1.CalculateUsage over a registry of the pod,
// service, claim, ResourceClaim and ConfigMap evaluators listing the
// namespace's objects in a fixed order, against the ledger's SumMatching
// of the same objects' charges in the same order (evaluator by evaluator,
// as CalculateUsage sums). Each used quantity is compared as printed, so
// the format of sums of mixed forms (1Gi and 500M, 100m and 1, exponents)
// is compared too. Names no evaluator tracks are left out on both sides
// (the ledger's UsageTracked).
func TestQuotaUsedSums(t *testing.T) {
	m := newMismatches(t, "quota used sums")
	summed := 0
	for i := 0; i < cases(t, 3000); i++ {
		r := caseRand(m.seed, m.name, i)
		var items []any
		for j := 0; j < 1+r.IntN(8); j++ {
			switch r.IntN(8) {
			case 0, 1, 2:
				items = append(items, genPod(r, podShape{lifecycle: true}))
			case 3, 4:
				items = append(items, genClaim(r))
			case 5:
				items = append(items, genValidService(r))
			case 6:
				items = append(items, genResourceClaim(r))
			default:
				items = append(items, genCounted(r))
			}
		}
		if out := m.compare(i, obj{"quota": genSumQuota(r), "items": items}, checkSums); out.kind == "" && out.detail != "" {
			summed++
		}
	}
	t.Logf("%d agreeing cases summed two or more non-zero amounts of a resource", summed)
	m.done()
}

// sumQuotaNames are what the quotas summed over track: every evaluator's
// names, and a bare extended resource no evaluator tracks; the names most
// objects charge (and in the most forms) most often.
var sumQuotaNames = append(append(append(append([]string{"requests.cpu", "requests.cpu", "requests.memory",
	"requests.memory", "limits.cpu", "limits.memory", "requests.storage", "requests.storage", "requests.ephemeral-storage",
	"services.nodeports"}, quotaResourceNames[:14]...),
	storageQuotaNames[:6]...), serviceQuotaNames[:4]...), "count/resourceclaims.resource.k8s.io",
	"gpu.deviceclass.resource.k8s.io/devices", "requests.deviceclass.resource.kubernetes.io/gpu", "configmaps", "count/configmaps")

// genSumQuota is a quota over sumQuotaNames, some restricted by a pod
// scope or a VolumeAttributesClass.
func genSumQuota(r *rand.Rand) obj {
	return genQuotaOver(r, "q", sumQuotaNames, false, func(r *rand.Rand, spec obj) []string {
		switch r.IntN(6) {
		case 0:
			spec["scopes"] = []any{pick(r, "Terminating", "NotTerminating", "NotBestEffort")}
			return []string{"pods", "cpu", "memory", "requests.cpu", "requests.memory", "limits.cpu", "limits.memory"}
		case 1:
			return storageScopes(r, spec)
		}
		return nil
	})
}

// orderedLister lists the same objects in the same order whatever it is
// asked, as an informer's lister would list one namespace.
type orderedLister []runtime.Object

func (l orderedLister) List(labels.Selector) ([]runtime.Object, error)  { return l, nil }
func (l orderedLister) Get(string) (runtime.Object, error)              { return nil, errors.New("not found") }
func (l orderedLister) ByNamespace(string) cache.GenericNamespaceLister { return l }

// sumKinds are the evaluators summed, in the order of the quota
// controller's registry (NewEvaluators).
var sumKinds = []string{"pods", "services", "persistentvolumeclaims", "resourceclaims.resource.k8s.io", "configmaps"}

func checkSums(tree any) outcome {
	t, ok := tree.(map[string]any)
	if !ok || t["quota"] == nil {
		return outcome{skip: true}
	}
	kq, valid, _, err := kubeQuota(mustJSON(t["quota"]))
	if err != nil || !valid {
		return outcome{skip: true}
	}
	lq, err := ledgerQuota(mustJSON(t["quota"]))
	if err != nil {
		return outcome{kind: "the ledger cannot read the quota", detail: err.Error()}
	}
	// Each item as the API server stores it, read by an informer (v1)
	// and by the ledger; an item it would refuse is left out.
	listed := map[string][]runtime.Object{}
	charges := map[string][]quota.Charge{}
	items, _ := t["items"].([]any)
	for _, it := range items {
		resource, k := kindOf(it)
		if k == nil {
			return outcome{skip: true}
		}
		var raw []byte
		if resource == "pods" {
			b, errs, err := storedPod(mustJSON(it))
			if err != nil || len(errs) > 0 {
				continue
			}
			raw = b
		} else {
			in, err := k.readObject(it)
			if err != nil || k.validate != nil && len(k.validate(in)) > 0 {
				continue
			}
			if raw, err = k.served(in); err != nil {
				return outcome{skip: true}
			}
		}
		ext := k.external()
		if err := jsonUnmarshal(raw, ext); err != nil {
			return outcome{skip: true}
		}
		listed[resource] = append(listed[resource], ext)
		o, err := decodeLedger(raw)
		if err != nil {
			return outcome{kind: "the ledger cannot read an object", detail: err.Error()}
		}
		c, err := quota.Evaluate(o, now)
		if err != nil {
			return outcome{kind: "the ledger cannot evaluate an object", detail: err.Error()}
		}
		charges[resource] = append(charges[resource], c)
	}
	lister := func(gvr schema.GroupVersionResource) (cache.GenericLister, error) {
		name := gvr.Resource
		if gvr.Group != "" {
			name += "." + gvr.Group
		}
		return orderedLister(listed[name]), nil
	}
	registry := generic.NewRegistry([]quotav1.Evaluator{
		core.NewPodEvaluator(lister, kubeClock),
		core.NewServiceEvaluator(lister),
		core.NewPersistentVolumeClaimEvaluator(lister),
		core.NewResourceClaimEvaluator(lister, nil, nil, nil),
		generic.NewObjectCountEvaluator(corev1.Resource("configmaps"),
			generic.ListResourceUsingListerFunc(lister, corev1.SchemeGroupVersion.WithResource("configmaps")), "configmaps"),
	})
	want, kerr := quotav1.CalculateUsage("ns", kq.Spec.Scopes, kq.Status.Hard, registry, kq.Spec.ScopeSelector)
	if kerr != nil {
		return outcome{kind: "kubernetes fails to sum", detail: kerr.Error()}
	}
	var ordered []quota.Charge
	for _, k := range sumKinds {
		ordered = append(ordered, charges[k]...)
	}
	all := quota.SumMatching(lq, ordered)
	got := quota.ResourceList{}
	for name, v := range all {
		if tracked, known := quota.UsageTracked(name); tracked && known {
			got[name] = v
		}
	}
	if d := listDiff(want, got); d != "" {
		kind := diffKind(want, got)
		only := true
		for _, line := range strings.Split(d, "\n") {
			only = only && strings.HasPrefix(strings.TrimSpace(line), corev1.ResourceImplicitExtendedClaimsPerClass)
		}
		if only {
			kind += " (only requests.deviceclass.resource.kubernetes.io/<class>)"
		}
		return outcome{kind: kind, detail: d}
	}
	// An agreeing case says whether some used summed two or more
	// non-zero amounts.
	for name := range got {
		n := 0
		for _, c := range ordered {
			if v, ok := c.Usage[name]; ok && lq.Matches(c) && v.Sign() != 0 {
				n++
			}
		}
		if n > 1 {
			return outcome{detail: "summed"}
		}
	}
	return outcome{}
}
