package kubeoracle

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"regexp"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	nodev1 "k8s.io/api/node/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apiserver/pkg/admission"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
	clienttesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/cache"

	"k8s.io/kubernetes/pkg/api/legacyscheme"
	api "k8s.io/kubernetes/pkg/apis/core"
	"k8s.io/kubernetes/pkg/apis/node"
	_ "k8s.io/kubernetes/pkg/apis/node/install"
	nodevalidation "k8s.io/kubernetes/pkg/apis/node/validation"
	"k8s.io/kubernetes/pkg/apis/scheduling"
	_ "k8s.io/kubernetes/pkg/apis/scheduling/install"
	schedulingapiv1 "k8s.io/kubernetes/pkg/apis/scheduling/v1"
	schedulingvalidation "k8s.io/kubernetes/pkg/apis/scheduling/validation"
	"k8s.io/kubernetes/plugin/pkg/admission/priority"
	"k8s.io/kubernetes/plugin/pkg/admission/runtimeclass"
	"k8s.io/kubernetes/plugin/pkg/admission/serviceaccount"

	"github.com/quotaledger/quota/ledger/object"
	"github.com/quotaledger/quota/ledger/quota"
)

// TestPluginsManifest compares the admission plugins that run before
// quota and read other objects of the cluster: ServiceAccount (the pod's
// account must exist), Priority (priorityClassName resolved, the global
// default class, refusals of a missing class or a stated priority or
// preemption policy other than the class's) and RuntimeClass (the class's
// overhead copied into the pod, refusals of a missing class or of an
// overhead other than the class's). Kubernetes runs the plugins
// themselves, fed by informers over a fake clientset holding the random
// classes and accounts; the ledger runs Default and Validate with the same
// objects in its Environment. Both sides must allow or refuse alike, with
// the same message, the same resulting priorityClassName, and the same
// usage (overhead included).
func TestPluginsManifest(t *testing.T) {
	m := newMismatches(t, "plugins")
	skipped, refused, conflicts := 0, 0, 0
	for i := 0; i < cases(t, 3000); i++ {
		r := caseRand(m.seed, m.name, i)
		tree := genPluginCase(r)
		out := m.compare(i, tree, checkPlugins)
		if out.skip {
			skipped++
		}
		if out.kind == "" && out.detail != "" {
			refused++
			if strings.Contains(out.detail, "conflict: runtimeClass.scheduling.nodeSelector") {
				conflicts++
			}
		}
	}
	if conflicts == 0 && cases(t, 3000) >= 1000 {
		t.Errorf("no compared case was a node selector conflict; the generator is too weak")
	}
	t.Logf("%d cases skipped (an invalid class, or a pod refused for what the ledger does not read); %d compared cases were refusals, %d of them node selector conflicts", skipped, refused, conflicts)
	m.done()
}

// genPluginCase is a random pod with the RuntimeClasses, PriorityClasses
// and ServiceAccounts of its cluster.
func genPluginCase(r *rand.Rand) obj {
	var runtimeClasses []any
	var overheads []obj
	for j := 0; j < r.IntN(3); j++ {
		rc := genRuntimeClass(r, fmt.Sprintf("rc-%d", j))
		if o, ok := rc["overhead"].(obj); ok {
			overheads = append(overheads, o["podFixed"].(obj))
		}
		runtimeClasses = append(runtimeClasses, rc)
	}
	var priorityClasses []any
	for _, name := range []string{"high", "low", "mid"} {
		if chance(r, 0.6) {
			priorityClasses = append(priorityClasses, genPriorityClass(r, name))
		}
	}
	accounts := []any{"default"}
	for _, name := range []string{"builder", "runner"} {
		if chance(r, 0.5) {
			accounts = append(accounts, name)
		}
	}

	pod := genPod(r, podShape{})
	spec := pod["spec"].(obj)
	switch {
	case chance(r, 0.5) && len(runtimeClasses) > 0:
		spec["runtimeClassName"] = fmt.Sprintf("rc-%d", r.IntN(len(runtimeClasses)))
	case chance(r, 0.1):
		spec["runtimeClassName"] = pick(r, "missing", "")
	}
	if chance(r, 0.6) {
		delete(spec, "overhead")
	}
	if len(overheads) > 0 && chance(r, 0.3) {
		// An overhead as some class defines it, written again.
		spec["overhead"] = clone(overheads[r.IntN(len(overheads))])
	}
	delete(spec, "priorityClassName")
	switch {
	case chance(r, 0.5) && len(priorityClasses) > 0:
		pc := priorityClasses[r.IntN(len(priorityClasses))].(obj)
		spec["priorityClassName"] = pc["metadata"].(obj)["name"]
	case chance(r, 0.4):
		spec["priorityClassName"] = pick(r, "high", "low", "mid", "system-cluster-critical", "system-node-critical", "", "absent")
	}
	if chance(r, 0.1) {
		spec["priority"] = pick(r, 0, 100, 1000, 2000000000)
	}
	if chance(r, 0.1) {
		spec["preemptionPolicy"] = pick(r, "Never", "PreemptLowerPriority")
	}
	if chance(r, 0.5) {
		field := "serviceAccountName"
		if chance(r, 0.3) {
			field = "serviceAccount" // the deprecated spelling
		}
		if chance(r, 0.8) {
			spec[field] = accounts[r.IntN(len(accounts))]
		} else {
			spec[field] = pick(r, "ghost", "")
		}
	}
	if chance(r, 0.3) {
		// Only zone can conflict with a class's selector, so that a
		// refusal names one label: Kubernetes walks the class's selector
		// in map order and names the first conflict it meets.
		selector := obj{"zone": pick(r, "a", "b")}
		if chance(r, 0.3) {
			selector = obj{}
		}
		if chance(r, 0.3) {
			selector["tier"] = "x"
		}
		if chance(r, 0.3) {
			selector["disk"] = "ssd"
		}
		spec["nodeSelector"] = selector
	}
	return obj{"pod": pod, "runtimeClasses": runtimeClasses, "priorityClasses": priorityClasses, "serviceAccounts": accounts}
}

// genRuntimeClass is a random RuntimeClass, most with an overhead, a few
// with a node selector.
func genRuntimeClass(r *rand.Rand, name string) obj {
	rc := obj{"apiVersion": "node.k8s.io/v1", "kind": "RuntimeClass", "metadata": obj{"name": name}, "handler": "runc"}
	if chance(r, 0.7) {
		rc["overhead"] = obj{"podFixed": resourceList(r, []string{"cpu", "memory", "example.com/gpu"}, 0.6)}
	}
	if chance(r, 0.3) {
		selector := obj{"zone": pick(r, "a", "b")}
		if chance(r, 0.3) {
			selector["tier"] = "x"
		}
		rc["scheduling"] = obj{"nodeSelector": selector}
	}
	return rc
}

// genPriorityClass is a random PriorityClass.
func genPriorityClass(r *rand.Rand, name string) obj {
	pc := obj{"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass", "metadata": obj{"name": name},
		"value": pick(r, -5, 0, 100, 1000, 1000000000)}
	if chance(r, 0.3) {
		pc["globalDefault"] = true
	}
	if chance(r, 0.4) {
		pc["preemptionPolicy"] = pick(r, "Never", "PreemptLowerPriority")
	}
	return pc
}

// storedRuntimeClass is a RuntimeClass as the API server keeps it, or nil
// when its validation refuses it.
func storedRuntimeClass(tree any) *nodev1.RuntimeClass {
	var rc nodev1.RuntimeClass
	if json.Unmarshal(mustJSON(tree), &rc) != nil {
		return nil
	}
	legacyscheme.Scheme.Default(&rc)
	var internal node.RuntimeClass
	if legacyscheme.Scheme.Convert(&rc, &internal, nil) != nil || len(nodevalidation.ValidateRuntimeClass(&internal)) > 0 {
		return nil
	}
	var out nodev1.RuntimeClass
	if json.Unmarshal(mustJSON(&rc), &out) != nil {
		return nil
	}
	return &out
}

// storedPriorityClass is a PriorityClass as the API server keeps it, or
// nil when its validation refuses it.
func storedPriorityClass(tree any) *schedulingv1.PriorityClass {
	var pc schedulingv1.PriorityClass
	if json.Unmarshal(mustJSON(tree), &pc) != nil {
		return nil
	}
	legacyscheme.Scheme.Default(&pc)
	var internal scheduling.PriorityClass
	if legacyscheme.Scheme.Convert(&pc, &internal, nil) != nil || len(schedulingvalidation.ValidatePriorityClass(&internal)) > 0 {
		return nil
	}
	return &pc
}

// kubePlugins are the three plugins, ready to admit, over a fake clientset
// holding objs; stop ends their informers.
type kubePlugins struct {
	serviceAccount *serviceaccount.Plugin
	priority       *priority.Plugin
	runtimeClass   *runtimeclass.RuntimeClass
	stop           func()
}

func newKubePlugins(objs []runtime.Object) (*kubePlugins, error) {
	client := fake.NewClientset(objs...)
	// The real client refuses to get an object by an empty name before
	// asking the API server; the fake would answer "not found".
	client.PrependReactor("get", "*", func(a clienttesting.Action) (bool, runtime.Object, error) {
		if g, ok := a.(clienttesting.GetAction); ok && g.GetName() == "" {
			return true, nil, fmt.Errorf("resource name may not be empty")
		}
		return false, nil, nil
	})
	factory := informers.NewSharedInformerFactory(client, 0)
	p := &kubePlugins{
		serviceAccount: serviceaccount.NewServiceAccount(),
		priority:       priority.NewPlugin(),
		runtimeClass:   runtimeclass.NewRuntimeClass(),
	}
	p.serviceAccount.SetExternalKubeClientSet(client)
	p.serviceAccount.SetExternalKubeInformerFactory(factory)
	p.priority.SetExternalKubeClientSet(client)
	p.priority.SetExternalKubeInformerFactory(factory)
	p.runtimeClass.SetExternalKubeClientSet(client)
	p.runtimeClass.SetExternalKubeInformerFactory(factory)
	for _, v := range []admission.InitializationValidator{p.serviceAccount, p.priority, p.runtimeClass} {
		if err := v.ValidateInitialization(); err != nil {
			return nil, err
		}
	}
	synced := []cache.InformerSynced{
		factory.Core().V1().ServiceAccounts().Informer().HasSynced,
		factory.Scheduling().V1().PriorityClasses().Informer().HasSynced,
		factory.Node().V1().RuntimeClasses().Informer().HasSynced,
	}
	stop := make(chan struct{})
	factory.Start(stop)
	p.stop = func() { close(stop); factory.Shutdown() }
	// cache.WaitForCacheSync polls every 100ms; a fake clientset syncs
	// within microseconds, so poll much more often.
	deadline := time.Now().Add(10 * time.Second)
	for _, s := range synced {
		for !s() {
			if time.Now().After(deadline) {
				p.stop()
				return nil, fmt.Errorf("informers did not sync")
			}
			time.Sleep(20 * time.Microsecond)
		}
	}
	return p, nil
}

// kubeError is how the API server reports an error of an admission
// plugin: a status error in its own words, any other as a 500 with the
// bare message.
func kubeError(err error) string {
	var status apierrors.APIStatus
	if s, ok := err.(apierrors.APIStatus); ok {
		status = s
	}
	switch {
	case status != nil && status.Status().Reason == metav1.StatusReasonForbidden:
		return "forbidden: " + err.Error()
	case status != nil && status.Status().Reason == metav1.StatusReasonInvalid:
		return "invalid: " + err.Error()
	}
	return "error: " + err.Error()
}

func checkPlugins(tree any) outcome {
	t, ok := tree.(map[string]any)
	if !ok || t["pod"] == nil {
		return outcome{skip: true}
	}
	var kubeObjs []runtime.Object
	env := quota.Environment{RuntimeClasses: map[string]*nodev1.RuntimeClass{}}
	list, _ := t["runtimeClasses"].([]any)
	for _, rt := range list {
		rc := storedRuntimeClass(rt)
		if rc == nil || env.RuntimeClasses[rc.Name] != nil {
			return outcome{skip: true}
		}
		env.RuntimeClasses[rc.Name] = rc
		kubeObjs = append(kubeObjs, rc.DeepCopy())
	}
	// The API server makes the system classes in every cluster; the
	// ledger ingests them as any other.
	for _, pc := range schedulingapiv1.SystemPriorityClasses() {
		legacyscheme.Scheme.Default(pc)
		env.PriorityClasses = append(env.PriorityClasses, pc)
	}
	list, _ = t["priorityClasses"].([]any)
	for _, pt := range list {
		pc := storedPriorityClass(pt)
		if pc == nil {
			return outcome{skip: true}
		}
		env.PriorityClasses = append(env.PriorityClasses, pc)
	}
	defaults := map[int32]bool{}
	for _, pc := range env.PriorityClasses {
		if pc.GlobalDefault {
			if defaults[pc.Value] {
				// Two default classes of the same value: Kubernetes
				// picks one in informer order.
				return outcome{skip: true}
			}
			defaults[pc.Value] = true
		}
		kubeObjs = append(kubeObjs, pc.DeepCopy())
	}
	list, _ = t["serviceAccounts"].([]any)
	for _, a := range list {
		name, _ := a.(string)
		if name == "" {
			return outcome{skip: true}
		}
		env.ServiceAccounts = append(env.ServiceAccounts, name)
		kubeObjs = append(kubeObjs, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns"}})
	}
	if !contains(env.ServiceAccounts, "default") {
		// The ledger takes the default account to exist; Kubernetes
		// looks for it ten times, for a second or two.
		return outcome{skip: true}
	}
	manifest := mustJSON(t["pod"])

	// Kubernetes: defaulting and conversion, the mutating plugins in the
	// API server's order, the registry's preparation, validation, the
	// validating plugins in the same order, usage.
	ip, err := defaultedInternalPod(manifest)
	if err != nil {
		return outcome{skip: true}
	}
	plugins, err := newKubePlugins(kubeObjs)
	if err != nil {
		return outcome{kind: "kubernetes' plugins do not start", detail: err.Error()}
	}
	defer plugins.stop()
	ctx := context.Background()
	attrs := admission.NewAttributesRecord(ip, nil, api.Kind("Pod").WithVersion("v1"), "ns", ip.Name,
		api.Resource("pods").WithVersion("v1"), "", admission.Create, &metav1.CreateOptions{}, false, nil)
	kubeOut := ""
	var kubeItems []string
	for _, p := range []admission.MutationInterface{plugins.serviceAccount, plugins.priority, plugins.runtimeClass} {
		if err := p.Admit(ctx, attrs, nil); err != nil {
			kubeOut = kubeError(err)
			break
		}
	}
	if kubeOut == "" {
		out, items, skip := kubeValidation(ip)
		if skip {
			return outcome{skip: true}
		}
		kubeOut, kubeItems = out, append(kubeItems, items...)
	}
	if kubeOut == "" {
		for _, p := range []admission.ValidationInterface{plugins.serviceAccount, plugins.priority, plugins.runtimeClass} {
			if err := p.Validate(ctx, attrs, nil); err != nil {
				kubeOut = kubeError(err)
				break
			}
		}
	}

	// The ledger: Default, Validate.
	o, err := decodeLedger(manifest)
	if err != nil {
		return outcome{kind: "the ledger cannot read the pod", detail: err.Error()}
	}
	ledgerOut := ""
	if err := quota.Default(o, env); err != nil {
		ledgerOut = ledgerError(o, err)
	} else if err := quota.Validate(o, nil, env); err != nil {
		ledgerOut = ledgerError(o, err)
	}
	if kind := verdictKind(kubeOut, kubeItems, ledgerOut); kind != "" {
		if kubeOut != "" {
			kind += " (kubernetes: " + messageShape(kubeOut) + ")"
		}
		return outcome{kind: kind, detail: "kubernetes: " + kubeOut + "\nledger:     " + ledgerOut}
	}
	if kubeOut != "" {
		return outcome{detail: kubeOut}
	}
	lp := o.Value.(*corev1.Pod)
	if ip.Spec.PriorityClassName != lp.Spec.PriorityClassName {
		return outcome{kind: "priorityClassName differs", detail: fmt.Sprintf("kubernetes: %q\nledger:     %q", ip.Spec.PriorityClassName, lp.Spec.PriorityClassName)}
	}
	want, err := kubePods.Usage(ip)
	if err != nil {
		return outcome{kind: "kubernetes cannot evaluate the pod", detail: err.Error()}
	}
	got, err := quota.Evaluate(o, now)
	if err != nil {
		return outcome{kind: "the ledger cannot evaluate the pod", detail: err.Error()}
	}
	if d := listDiff(want, got.Usage); d != "" {
		return outcome{kind: "usage: " + diffKind(want, got.Usage), detail: d}
	}
	return outcome{}
}

// ledgerError writes a refusal of Default or Validate as the API server
// would report it.
func ledgerError(o *object.Object, err error) string {
	switch e := err.(type) {
	case *quota.InvalidError:
		return "invalid: " + e.Error()
	case *quota.RefusedError:
		return "forbidden: " + quota.ForbiddenPrefix(o) + e.Error()
	}
	return "error: " + err.Error()
}

// messageShape is a message with names, quantities and numbers left out,
// and cut short, so that mismatches group by the rule that refused.
func messageShape(msg string) string {
	msg = quotedOrNumber.ReplaceAllString(msg, "_")
	if len(msg) > 80 {
		msg = msg[:80] + "..."
	}
	return msg
}

var quotedOrNumber = regexp.MustCompile(`"[^"]*"|[0-9]+[A-Za-z]*`)
