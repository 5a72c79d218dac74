package kubeoracle

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"os"
	"path/filepath"
	"sort"
	"sync/atomic"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	quotav1 "k8s.io/apiserver/pkg/quota/v1"
	"k8s.io/apiserver/pkg/quota/v1/generic"
	"k8s.io/client-go/tools/cache"
	testingclock "k8s.io/utils/clock/testing"

	"k8s.io/kubernetes/pkg/quota/v1/evaluator/core"

	"github.com/quotaledger/quota/ledger"
	"github.com/quotaledger/quota/ledger/quantity"
	"github.com/quotaledger/quota/ledger/quota"
	"github.com/quotaledger/quota/projector"
)

// TestQuotaUsedRunningTotals compares a quota's used as the projection
// keeps it with Kubernetes' arithmetic over the same events: a quota and
// a sequence of creates, updates and deletes of pods, claims, services,
// ResourceClaims and counted objects in its namespace, the quota created
// at any point of it.
//
// The ledger's side is a real projector.Projector folding the events
// from a new bbolt file, read back with Quotas as `quota describe` reads
// it. Kubernetes' side is its quota code (kubeRunningUsed). Each used
// quantity is compared as printed, so the format of running totals of
// mixed forms (1Gi and 500M, 100m and 1, exponents), and of figures that
// go back to zero and up again, is compared too.
func TestQuotaUsedRunningTotals(t *testing.T) {
	m := newMismatches(t, "quota used running totals")
	dir := t.TempDir()
	check := func(tree any) outcome { return checkRunningTotals(dir, tree) }
	lowered := 0
	for i := 0; i < cases(t, 3000); i++ {
		r := caseRand(m.seed, m.name, i)
		if out := m.compare(i, genRunningCase(r), check); out.kind == "" && out.detail != "" {
			lowered++
		}
	}
	t.Logf("%d agreeing cases took a non-zero amount off a figure (an update that shrinks, a delete)", lowered)
	m.done()
}

// runningAt is the stream time of every event of a case, and the clock
// of Kubernetes' pod evaluator: an hour before now, so before any
// generated pod's deletion was requested. The projector judges a pod
// being deleted at its deletion request (projector/evaluate.go), the
// evaluator at its clock; at runningAt both judge every pod at the same
// moment, and the comparison is of the sums alone.
var runningAt = now.Add(-time.Hour)

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

// sumGenerators make the objects of a case; sumGenerator picks one, pods
// most often.
var sumGenerators = []func(*rand.Rand) obj{
	func(r *rand.Rand) obj { return genPod(r, podShape{lifecycle: true}) },
	genClaim, genValidService, genResourceClaim, genCounted,
}

func sumGenerator(r *rand.Rand) int {
	return []int{0, 0, 0, 1, 1, 2, 3, 4}[r.IntN(8)]
}

// genRunningCase is a case of TestQuotaUsedRunningTotals: steps, each
// {"upsert": object} or {"delete": the object's kind and name}. An update
// is another object of the same generator, kind and name.
func genRunningCase(r *rand.Rand) obj {
	type live struct {
		generator int
		object    obj
	}
	var objects []live
	var steps []any
	for n := 1 + r.IntN(12); len(steps) < n; {
		if len(objects) == 0 || chance(r, 0.55) {
			g := sumGenerator(r)
			o := sumGenerators[g](r)
			objects = append(objects, live{g, o})
			steps = append(steps, obj{"upsert": o})
			continue
		}
		j := r.IntN(len(objects))
		o := objects[j].object
		if chance(r, 0.5) {
			meta := o["metadata"].(obj)
			steps = append(steps, obj{"delete": obj{"apiVersion": o["apiVersion"], "kind": o["kind"],
				"metadata": obj{"name": meta["name"], "namespace": meta["namespace"]}}})
			objects = append(objects[:j], objects[j+1:]...)
			continue
		}
		for {
			next := sumGenerators[objects[j].generator](r)
			if next["kind"] == o["kind"] {
				next["metadata"].(obj)["name"] = o["metadata"].(obj)["name"]
				objects[j].object = next
				steps = append(steps, obj{"upsert": next})
				break
			}
		}
	}
	at := r.IntN(len(steps) + 1)
	steps = append(steps[:at], append([]any{obj{"upsert": genSumQuota(r)}}, steps[at:]...)...)
	return obj{"steps": steps}
}

// runningStep is one step of a case as both sides read it.
type runningStep struct {
	resource string // the ledger's name of the resource, and kubeKinds'
	name     string
	delete   bool
	raw      []byte         // the object as the API server serves it: what the log carries
	ext      runtime.Object // the object as an informer reads it
}

// quotaResource is the resource of a case's quota step.
const quotaResource = "resourcequotas"

// readStep reads one step of a case. stored is false for an object the
// API server would refuse, a step that happens on neither side; ok is
// false for a step that is not one of a case (a shrunk case).
func readStep(tree any) (s runningStep, stored, ok bool) {
	t, _ := tree.(map[string]any)
	it, del := t["delete"]
	if !del {
		it = t["upsert"]
	}
	o, _ := it.(map[string]any)
	meta, _ := o["metadata"].(map[string]any)
	s.name, _ = meta["name"].(string)
	s.delete = del
	if s.name == "" {
		return s, false, false
	}
	if o["kind"] == "ResourceQuota" {
		s.resource, s.raw = quotaResource, mustJSON(o)
		return s, !del, !del
	}
	resource, k := kindOf(o)
	if k == nil {
		return s, false, false
	}
	s.resource = resource
	if del {
		return s, true, true
	}
	if resource == "pods" {
		b, errs, err := storedPod(mustJSON(o))
		if err != nil || len(errs) > 0 {
			return s, false, true
		}
		s.raw = b
	} else {
		in, err := k.readObject(o)
		if err != nil || k.validate != nil && len(k.validate(in)) > 0 {
			return s, false, true
		}
		if s.raw, err = k.served(in); err != nil {
			return s, false, false
		}
	}
	s.ext = k.external()
	if err := jsonUnmarshal(s.raw, s.ext); err != nil {
		return s, false, false
	}
	return s, true, true
}

// readRunningCase reads a case: the steps both sides take, and the quota
// as the informer holds it. A case that is not one of exactly one valid
// quota and objects the ledger names as Kubernetes does is skipped, or
// reported.
func readRunningCase(tree any) ([]runningStep, *corev1.ResourceQuota, *outcome) {
	t, _ := tree.(map[string]any)
	list, _ := t["steps"].([]any)
	var steps []runningStep
	var kq *corev1.ResourceQuota
	for _, it := range list {
		s, stored, ok := readStep(it)
		if !ok {
			return nil, nil, &outcome{skip: true}
		}
		if !stored {
			continue
		}
		if s.resource == quotaResource {
			q, valid, _, err := kubeQuota(s.raw)
			if err != nil || !valid || kq != nil {
				return nil, nil, &outcome{skip: true}
			}
			kq = q
		} else if s.raw != nil {
			o, err := decodeLedger(s.raw)
			if err != nil {
				return nil, nil, &outcome{kind: "the ledger cannot read an object", detail: err.Error()}
			}
			if o.Resource != s.resource {
				return nil, nil, &outcome{kind: "the ledger names a resource otherwise", detail: o.Resource + ", not " + s.resource}
			}
		}
		steps = append(steps, s)
	}
	if kq == nil {
		return nil, nil, &outcome{skip: true}
	}
	return steps, kq, nil
}

func checkRunningTotals(dir string, tree any) outcome {
	steps, kq, out := readRunningCase(tree)
	if out != nil {
		return *out
	}
	want, lowered, err := kubeRunningUsed(steps, kq)
	if err != nil {
		return outcome{kind: "kubernetes fails to sum", detail: err.Error()}
	}
	got, out := ledgerRunningUsed(dir, steps, kq.Name)
	if out != nil {
		return *out
	}
	if d := listDiff(want, got); d != "" {
		return outcome{kind: diffKind(want, got), detail: d}
	}
	if lowered {
		return outcome{detail: "lowered"}
	}
	return outcome{}
}

// runningFiles numbers the projection files of a run.
var runningFiles atomic.Int64

// ledgerRunningUsed folds the steps, one event each at runningAt, into a
// new projection and reads the quota's used back as `quota describe`
// does (projector.Quotas), as ledger quantities.
func ledgerRunningUsed(dir string, steps []runningStep, name string) (quota.ResourceList, *outcome) {
	path := filepath.Join(dir, fmt.Sprintf("projection-%d.db", runningFiles.Add(1)))
	defer os.Remove(path)
	p, err := projector.Open(projector.Config{Path: path, NoSync: true, Logger: slog.New(slog.DiscardHandler)}, nil)
	if err != nil {
		return nil, &outcome{kind: "the projection does not open", detail: err.Error()}
	}
	defer p.Close()
	records := make([]ledger.Record, 0, len(steps))
	for i, s := range steps {
		ev := ledger.Event{Version: ledger.EncodingVersion, Type: ledger.Upsert, Resource: s.resource, Namespace: "ns", Name: s.name, Object: s.raw}
		if s.delete {
			ev.Type, ev.Object = ledger.Delete, nil
		}
		records = append(records, ledger.Record{Seq: uint64(i + 1), Subject: ledger.Subject("ns"), Namespace: "ns", Time: runningAt, Event: ev})
	}
	if err := p.Apply(context.Background(), records); err != nil {
		return nil, &outcome{kind: "the projector fails", detail: err.Error()}
	}
	if n := p.Skipped(); n > 0 {
		return nil, &outcome{kind: "the projector skips a record", detail: fmt.Sprintf("%d skipped", n)}
	}
	list, err := p.Quotas("ns", name, false)
	if err != nil {
		return nil, &outcome{kind: "the projector cannot read the quota", detail: err.Error()}
	}
	got := quota.ResourceList{}
	for k, v := range list.Items[0].Status.Used {
		q, err := quantity.Parse(v.String())
		if err != nil || q.String() != v.String() {
			return nil, &outcome{kind: "the ledger reads a figure it printed otherwise", detail: fmt.Sprintf("%s=%s: %v", k, v.String(), err)}
		}
		got[string(k)] = q
	}
	return got, nil
}

// kubeRunningUsed is the quota's used as Kubernetes' quota code keeps it
// over the steps. When the quota is created, quotav1.CalculateUsage sums
// the objects present, listed in the projection's key order (resource,
// then name; Kubernetes' own order is its informers', a draw). Each later
// change of an object then adds, with quotav1.Add, the quotav1.Subtract
// of its new and old usage, each masked to the quota's hard names and
// only where the evaluator's Matches takes the object: the admission
// plugin's arithmetic, signed. After every step each figure is read back
// from its printed form, as status.used is stored. lowered says whether a
// non-zero amount was taken off a figure.
func kubeRunningUsed(steps []runningStep, kq *corev1.ResourceQuota) (used corev1.ResourceList, lowered bool, err error) {
	live := map[string]runningStep{}
	hard := quotav1.ResourceNames(kq.Status.Hard)
	evaluators := kubeEvaluators(nil)
	for _, s := range steps {
		if s.resource == quotaResource {
			if used, err = kubeCreatedUsed(kq, live); err != nil {
				return nil, false, err
			}
			continue
		}
		key := s.resource + "/" + s.name
		old, had := live[key]
		if s.delete {
			delete(live, key)
		} else {
			live[key] = s
		}
		if used == nil || !had && s.delete {
			continue
		}
		evaluator := evaluators[s.resource]
		var oldPart, newPart corev1.ResourceList
		if had {
			if oldPart, err = kubePart(evaluator, kq, hard, old.ext); err != nil {
				return nil, false, err
			}
		}
		if !s.delete {
			if newPart, err = kubePart(evaluator, kq, hard, s.ext); err != nil {
				return nil, false, err
			}
		}
		delta := quotav1.Subtract(newPart, oldPart)
		for _, v := range delta {
			lowered = lowered || v.Sign() < 0
		}
		if used, err = settled(quotav1.Add(used, delta)); err != nil {
			return nil, false, err
		}
	}
	return used, lowered, nil
}

// kubePart is what the object ext adds to the quota kq: its usage masked
// to the quota's hard names, when the evaluator matches it to the quota.
func kubePart(e quotav1.Evaluator, kq *corev1.ResourceQuota, hard []corev1.ResourceName, ext runtime.Object) (corev1.ResourceList, error) {
	match, err := e.Matches(kq, ext)
	if err != nil || !match {
		return nil, err
	}
	usage, err := e.Usage(ext)
	if err != nil {
		return nil, err
	}
	return quotav1.Mask(usage, hard), nil
}

// kubeCreatedUsed is the quota's used as the quota controller first
// computes it: CalculateUsage over the live objects, evaluator by
// evaluator in resource order and each resource's objects in name order.
func kubeCreatedUsed(kq *corev1.ResourceQuota, live map[string]runningStep) (corev1.ResourceList, error) {
	keys := make([]string, 0, len(live))
	for k := range live {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	listed := map[string][]runtime.Object{}
	for _, k := range keys {
		s := live[k]
		listed[s.resource] = append(listed[s.resource], s.ext)
	}
	evaluators := kubeEvaluators(listed)
	var registry orderedRegistry
	for _, name := range sortedKeys(evaluators) {
		registry = append(registry, evaluators[name])
	}
	used, err := quotav1.CalculateUsage("ns", kq.Spec.Scopes, kq.Status.Hard, registry, kq.Spec.ScopeSelector)
	if err != nil {
		return nil, err
	}
	return settled(used)
}

// kubeEvaluators are the evaluators of the kinds a case holds, by the
// ledger's name of their resource, listing what listed holds.
func kubeEvaluators(listed map[string][]runtime.Object) map[string]quotav1.Evaluator {
	lister := func(gvr schema.GroupVersionResource) (cache.GenericLister, error) {
		name := gvr.Resource
		if gvr.Group != "" {
			name += "." + gvr.Group
		}
		return orderedLister(listed[name]), nil
	}
	counted := func(gvr schema.GroupVersionResource, legacy string) quotav1.Evaluator {
		return generic.NewObjectCountEvaluator(gvr.GroupResource(), generic.ListResourceUsingListerFunc(lister, gvr), corev1.ResourceName(legacy))
	}
	return map[string]quotav1.Evaluator{
		"pods":                           core.NewPodEvaluator(lister, testingclock.NewFakeClock(runningAt)),
		"services":                       core.NewServiceEvaluator(lister),
		"persistentvolumeclaims":         core.NewPersistentVolumeClaimEvaluator(lister),
		"resourceclaims.resource.k8s.io": core.NewResourceClaimEvaluator(lister, nil, nil, nil),
		"configmaps":                     counted(corev1.SchemeGroupVersion.WithResource("configmaps"), "configmaps"),
		"secrets":                        counted(corev1.SchemeGroupVersion.WithResource("secrets"), "secrets"),
		"jobs.batch":                     counted(batchv1.SchemeGroupVersion.WithResource("jobs"), ""),
	}
}

// settled is l as status.used holds it once stored and read back: each
// quantity parsed from its printed form.
func settled(l corev1.ResourceList) (corev1.ResourceList, error) {
	out := make(corev1.ResourceList, len(l))
	for k, v := range l {
		q, err := resource.ParseQuantity(v.String())
		if err != nil {
			return nil, fmt.Errorf("%s=%s does not parse back: %w", k, v.String(), err)
		}
		out[k] = q
	}
	return out, nil
}

// orderedRegistry lists its evaluators in the order given, where
// generic.NewRegistry lists them in map order. Nothing adds to it or
// removes from it.
type orderedRegistry []quotav1.Evaluator

func (r orderedRegistry) Add(quotav1.Evaluator)     {}
func (r orderedRegistry) Remove(quotav1.Evaluator)  {}
func (r orderedRegistry) List() []quotav1.Evaluator { return r }
func (r orderedRegistry) Get(gr schema.GroupResource) quotav1.Evaluator {
	for _, e := range r {
		if e.GroupResource() == gr {
			return e
		}
	}
	return nil
}

// orderedLister lists the same objects in the same order whatever it is
// asked, as an informer's lister would list one namespace.
type orderedLister []runtime.Object

func (l orderedLister) List(labels.Selector) ([]runtime.Object, error)  { return l, nil }
func (l orderedLister) Get(string) (runtime.Object, error)              { return nil, errors.New("not found") }
func (l orderedLister) ByNamespace(string) cache.GenericNamespaceLister { return l }
