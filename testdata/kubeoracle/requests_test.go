package kubeoracle

import (
	"encoding/json"
	"fmt"
	"reflect"
	"regexp"
	"strings"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	resourcev1 "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/apiserver/pkg/admission"
	"k8s.io/apiserver/pkg/admission/plugin/resourcequota"
	resourcequotaapi "k8s.io/apiserver/pkg/admission/plugin/resourcequota/apis/resourcequota"
	quotav1 "k8s.io/apiserver/pkg/quota/v1"
	"k8s.io/apiserver/pkg/quota/v1/generic"

	"k8s.io/kubernetes/pkg/api/legacyscheme"
	podutil "k8s.io/kubernetes/pkg/api/pod"
	api "k8s.io/kubernetes/pkg/apis/core"
	"k8s.io/kubernetes/pkg/apis/core/validation"
	resourceapi "k8s.io/kubernetes/pkg/apis/resource"
	_ "k8s.io/kubernetes/pkg/apis/resource/install"
	"k8s.io/kubernetes/pkg/quota/v1/evaluator/core"

	"github.com/quotaledger/quota/ledger/object"
	"github.com/quotaledger/quota/ledger/quantity"
	"github.com/quotaledger/quota/ledger/quota"
)

// kubeClaimsDRA is Kubernetes' ResourceClaim evaluator as the admission
// plugin builds it when no DeviceClass is known.
var kubeClaimsDRA = core.NewResourceClaimEvaluator(nil, nil, nil, nil)

// updateStrategy is what the API server's registry does to an update
// before admission: keep what the request may not change from the stored
// object, and validate the result. These follow the registry strategies
// of pods, claims and services (pkg/registry/core/*/strategy.go), which
// this module does not import for their dependencies.
type updateStrategy struct {
	prepare  func(obj, old runtime.Object)
	validate func(obj, old runtime.Object) field.ErrorList
}

func podOptions(p, old *api.Pod) validation.PodValidationOptions {
	opts := podutil.GetValidationOptionsFromPodSpecAndMeta(&p.Spec, &old.Spec, &p.ObjectMeta, &old.ObjectMeta)
	opts.ResourceIsPod = true
	return opts
}

var podUpdates = map[string]updateStrategy{
	"": {
		prepare: func(obj, old runtime.Object) { obj.(*api.Pod).Status = old.(*api.Pod).Status },
		validate: func(obj, old runtime.Object) field.ErrorList {
			p, o := obj.(*api.Pod), old.(*api.Pod)
			return validation.ValidatePodUpdate(p, o, podOptions(p, o))
		},
	},
	"status": {
		prepare: func(obj, old runtime.Object) { obj.(*api.Pod).Spec = old.(*api.Pod).Spec },
		validate: func(obj, old runtime.Object) field.ErrorList {
			p, o := obj.(*api.Pod), old.(*api.Pod)
			return validation.ValidatePodStatusUpdate(p, o, podOptions(p, o))
		},
	},
	// A resize keeps the stored pod but for the containers' resources and
	// resize policies (dropNonResizeUpdates).
	"resize": {
		prepare: func(obj, old runtime.Object) {
			p, o := obj.(*api.Pod), old.(*api.Pod)
			next := o.DeepCopy()
			for i := range next.Spec.Containers {
				for _, c := range p.Spec.Containers {
					if c.Name == next.Spec.Containers[i].Name {
						next.Spec.Containers[i].Resources = c.Resources
						next.Spec.Containers[i].ResizePolicy = c.ResizePolicy
					}
				}
			}
			*p = *next
		},
		validate: func(obj, old runtime.Object) field.ErrorList {
			p, o := obj.(*api.Pod), old.(*api.Pod)
			return validation.ValidatePodResize(p, o, podOptions(p, o))
		},
	},
}

var claimUpdates = map[string]updateStrategy{
	"": {
		prepare: func(obj, old runtime.Object) {
			obj.(*api.PersistentVolumeClaim).Status = old.(*api.PersistentVolumeClaim).Status
		},
		validate: func(obj, old runtime.Object) field.ErrorList {
			p, o := obj.(*api.PersistentVolumeClaim), old.(*api.PersistentVolumeClaim)
			return validation.ValidatePersistentVolumeClaimUpdate(p, o, validation.ValidationOptionsForPersistentVolumeClaim(p, o))
		},
	},
	"status": {
		prepare: func(obj, old runtime.Object) {
			obj.(*api.PersistentVolumeClaim).Spec = old.(*api.PersistentVolumeClaim).Spec
		},
		validate: func(obj, old runtime.Object) field.ErrorList {
			p, o := obj.(*api.PersistentVolumeClaim), old.(*api.PersistentVolumeClaim)
			return validation.ValidatePersistentVolumeClaimStatusUpdate(p, o, validation.ValidationOptionsForPersistentVolumeClaim(p, o))
		},
	},
}

var serviceUpdates = map[string]updateStrategy{
	"": {
		prepare: func(obj, old runtime.Object) { obj.(*api.Service).Status = old.(*api.Service).Status },
		validate: func(obj, old runtime.Object) field.ErrorList {
			return validation.ValidateServiceUpdate(obj.(*api.Service), old.(*api.Service))
		},
	},
	"status": {
		prepare: func(obj, old runtime.Object) { obj.(*api.Service).Spec = old.(*api.Service).Spec },
		validate: func(obj, old runtime.Object) field.ErrorList {
			return validation.ValidateServiceStatusUpdate(obj.(*api.Service), old.(*api.Service))
		},
	},
}

// resourceClaimUpdates: a ResourceClaim's spec is immutable.
var resourceClaimUpdates = map[string]updateStrategy{
	"": {
		prepare: func(obj, old runtime.Object) {
			obj.(*resourceapi.ResourceClaim).Status = old.(*resourceapi.ResourceClaim).Status
		},
		validate: func(obj, old runtime.Object) field.ErrorList {
			p, o := obj.(*resourceapi.ResourceClaim), old.(*resourceapi.ResourceClaim)
			if !reflect.DeepEqual(p.Spec, o.Spec) {
				return field.ErrorList{field.Invalid(field.NewPath("spec"), "", "field is immutable")}
			}
			return nil
		},
	},
}

// kubeKind is how the API server reads, validates and admits one kind of
// object.
type kubeKind struct {
	resource schema.GroupVersionResource
	kind     schema.GroupVersionKind
	// evaluator is what the quota admission plugin evaluates the kind with.
	evaluator quotav1.Evaluator
	// external and internal make empty objects of the served version and
	// of the API server's internal version; internal is nil for kinds the
	// comparison passes to the plugin as read.
	external func() runtime.Object
	internal func() runtime.Object
	// validate is the validation of a created object.
	validate func(runtime.Object) field.ErrorList
	// updates are the registry's update strategies by subresource; a
	// subresource without one is passed on as requested.
	updates map[string]updateStrategy
}

var kubeKinds = map[string]*kubeKind{
	"pods": {
		resource: corev1.SchemeGroupVersion.WithResource("pods"), kind: api.Kind("Pod").WithVersion("v1"),
		evaluator: kubePods,
		external:  func() runtime.Object { return &corev1.Pod{} },
		internal:  func() runtime.Object { return &api.Pod{} },
		validate:  func(o runtime.Object) field.ErrorList { return validatePod(o.(*api.Pod)) },
		updates:   podUpdates,
	},
	"persistentvolumeclaims": {
		resource: corev1.SchemeGroupVersion.WithResource("persistentvolumeclaims"), kind: api.Kind("PersistentVolumeClaim").WithVersion("v1"),
		evaluator: kubeClaims,
		external:  func() runtime.Object { return &corev1.PersistentVolumeClaim{} },
		internal:  func() runtime.Object { return &api.PersistentVolumeClaim{} },
		validate: func(o runtime.Object) field.ErrorList {
			return validation.ValidatePersistentVolumeClaim(o.(*api.PersistentVolumeClaim), validation.ValidationOptionsForPersistentVolumeClaimCreate())
		},
		updates: claimUpdates,
	},
	"services": {
		resource: corev1.SchemeGroupVersion.WithResource("services"), kind: api.Kind("Service").WithVersion("v1"),
		evaluator: kubeService,
		external:  func() runtime.Object { return &corev1.Service{} },
		internal:  func() runtime.Object { return &api.Service{} },
		validate: func(o runtime.Object) field.ErrorList {
			return validation.ValidateServiceCreate(o.(*api.Service))
		},
		updates: serviceUpdates,
	},
	"resourceclaims.resource.k8s.io": {
		resource: resourcev1.SchemeGroupVersion.WithResource("resourceclaims"), kind: resourceapi.Kind("ResourceClaim").WithVersion("v1"),
		evaluator: kubeClaimsDRA,
		external:  func() runtime.Object { return &resourcev1.ResourceClaim{} },
		internal:  func() runtime.Object { return &resourceapi.ResourceClaim{} },
		// Its validation needs CEL, which this module does not build; the
		// generated claims are valid.
		updates: resourceClaimUpdates,
	},
	"configmaps": {
		resource: corev1.SchemeGroupVersion.WithResource("configmaps"), kind: api.Kind("ConfigMap").WithVersion("v1"),
		evaluator: generic.NewObjectCountEvaluator(corev1.Resource("configmaps"), nil, "configmaps"),
		external:  func() runtime.Object { return &corev1.ConfigMap{} },
	},
	"secrets": {
		resource: corev1.SchemeGroupVersion.WithResource("secrets"), kind: api.Kind("Secret").WithVersion("v1"),
		evaluator: generic.NewObjectCountEvaluator(corev1.Resource("secrets"), nil, "secrets"),
		external:  func() runtime.Object { return &corev1.Secret{} },
	},
	"jobs.batch": {
		resource: batchv1.SchemeGroupVersion.WithResource("jobs"), kind: batchv1.SchemeGroupVersion.WithKind("Job"),
		evaluator: generic.NewObjectCountEvaluator(batchv1.Resource("jobs"), nil, ""),
		external:  func() runtime.Object { return &batchv1.Job{} },
	},
}

// kindOf names the kubeKind of a JSON tree by its kind field.
func kindOf(tree any) (string, *kubeKind) {
	t, _ := tree.(map[string]any)
	k, _ := t["kind"].(string)
	name := map[string]string{
		"Pod": "pods", "PersistentVolumeClaim": "persistentvolumeclaims", "Service": "services",
		"ResourceClaim": "resourceclaims.resource.k8s.io", "ConfigMap": "configmaps", "Secret": "secrets", "Job": "jobs.batch",
	}[k]
	return name, kubeKinds[name]
}

// readObject reads a JSON tree as the API server does: the served version
// defaulted and converted to the internal version (for kinds that have
// one), in the namespace "ns".
func (k *kubeKind) readObject(tree any) (runtime.Object, error) {
	ext := k.external()
	if err := json.Unmarshal(mustJSON(tree), ext); err != nil {
		return nil, err
	}
	if k.internal == nil {
		setNamespace(ext)
		return ext, nil
	}
	legacyscheme.Scheme.Default(ext)
	in := k.internal()
	if err := legacyscheme.Scheme.Convert(ext, in, nil); err != nil {
		return nil, err
	}
	setNamespace(in)
	return in, nil
}

func setNamespace(o runtime.Object) {
	if m, ok := o.(metav1.Object); ok && m.GetNamespace() == "" {
		m.SetNamespace("ns")
	}
}

// served is o as the served version writes it, as JSON: what the ledger
// reads of an object the API server holds.
func (k *kubeKind) served(o runtime.Object) ([]byte, error) {
	out := o
	if k.internal != nil {
		out = k.external()
		if err := legacyscheme.Scheme.Convert(o, out, nil); err != nil {
			return nil, err
		}
	}
	out.GetObjectKind().SetGroupVersionKind(k.resource.GroupVersion().WithKind(k.kind.Kind))
	return json.Marshal(out)
}

// kubeAndLedgerQuotas reads a list of quota trees for both sides:
// Kubernetes' quotas as the informer holds them, and the ledger's states
// with the same used, in list order (name order: the ledger names the
// first refusing quota by name). ok is false when a quota is
// one the API server refuses or has a used the ledger cannot hold.
func kubeAndLedgerQuotas(list []any) ([]corev1.ResourceQuota, []quota.QuotaState, bool, *outcome) {
	var kubeQuotas []corev1.ResourceQuota
	var states []quota.QuotaState
	for _, qt := range list {
		raw := mustJSON(qt)
		kq, valid, _, err := kubeQuota(raw)
		if err != nil || !valid {
			return nil, nil, false, nil
		}
		kubeQuotas = append(kubeQuotas, *kq)
		lq, err := ledgerQuota(raw)
		if err != nil {
			return nil, nil, false, &outcome{kind: "the ledger cannot read the quota", detail: err.Error()}
		}
		used := quota.ResourceList{}
		for k, v := range kq.Status.Used {
			q, err := quantity.FromKube(v)
			if err != nil {
				return nil, nil, false, nil
			}
			used[string(k)] = q
		}
		states = append(states, quota.QuotaState{Quota: lq, Used: used})
	}
	return kubeQuotas, states, true, nil
}

// limitedLists reads a limitedResources tree for both sides.
func limitedLists(tree any) ([]resourcequotaapi.LimitedResource, []quota.LimitedResource, error) {
	if tree == nil {
		return nil, nil, nil
	}
	raw := mustJSON(tree)
	var kube []resourcequotaapi.LimitedResource
	if err := json.Unmarshal(raw, &kube); err != nil {
		return nil, nil, err
	}
	var ledger []quota.LimitedResource
	if err := json.Unmarshal(raw, &ledger); err != nil {
		return nil, nil, err
	}
	return kube, ledger, nil
}

// checkRequest compares one admission request. The tree holds "quotas",
// "object" (created, or the stored object an update starts from),
// "changes" (for an update: edits of the stored object, see applyChanges),
// "subresource" and "limited" (limitedResources).
//
// Both sides see the same objects: Kubernetes the internal objects after
// defaulting and the registry's update strategy, the ledger the served
// JSON of the same objects. Cases the API server would refuse before
// admission are skipped.
func checkRequest(tree any) outcome {
	t, ok := tree.(map[string]any)
	if !ok || t["object"] == nil {
		return outcome{skip: true}
	}
	resource, k := kindOf(t["object"])
	if k == nil {
		return outcome{skip: true}
	}
	list, _ := t["quotas"].([]any)
	kubeQuotas, states, ok, bad := kubeAndLedgerQuotas(list)
	if bad != nil {
		return *bad
	}
	if !ok {
		return outcome{skip: true}
	}
	kubeLimited, ledgerLimited, err := limitedLists(t["limited"])
	if err != nil {
		return outcome{skip: true}
	}
	subresource, _ := t["subresource"].(string)

	stored, err := k.readObject(t["object"])
	if err != nil {
		return outcome{skip: true}
	}
	if k.validate != nil && len(k.validate(stored)) > 0 {
		return outcome{skip: true}
	}
	changes, update := t["changes"].([]any)
	switch o := stored.(type) {
	case *api.Pod:
		prepareForCreate(o)
	case *api.PersistentVolumeClaim:
		// What the registry clears on create; a stored claim keeps it.
		if !update {
			o.Status = api.PersistentVolumeClaimStatus{}
		}
	case *api.Service:
		if !update {
			o.Status = api.ServiceStatus{}
		}
	}

	op := admission.Create
	var obj, old runtime.Object = stored, nil
	var opts runtime.Object = &metav1.CreateOptions{}
	if update {
		op = admission.Update
		opts = &metav1.UpdateOptions{}
		old = stored
		storedJSON, err := k.served(stored)
		if err != nil {
			return outcome{skip: true}
		}
		var next any
		if json.Unmarshal(storedJSON, &next) != nil {
			return outcome{skip: true}
		}
		applyChanges(next, changes)
		if obj, err = k.readObject(next); err != nil {
			return outcome{skip: true}
		}
		if s, ok := k.updates[subresource]; ok {
			s.prepare(obj, old)
			if len(s.validate(obj, old)) > 0 {
				return outcome{skip: true}
			}
		}
	}
	name := obj.(metav1.Object).GetName()
	attrs := admission.NewAttributesRecord(obj, old, k.kind, "ns", name, k.resource, subresource, op, opts, false, nil)
	kubeHandles := k.evaluator.Handles(attrs)
	_, kerr := resourcequota.CheckRequest(kubeQuotas, attrs, k.evaluator, kubeLimited)

	req := quota.AdmitRequest{Operation: quota.Create, Subresource: subresource, Quotas: states, Limited: ledgerLimited, Now: now, VerdictOnly: true}
	if req.Object, err = ledgerObject(k, obj); err != nil {
		return outcome{kind: "the ledger cannot read the object", detail: err.Error()}
	}
	if update {
		req.Operation = quota.Update
		if req.OldObject, err = ledgerObject(k, old); err != nil {
			return outcome{kind: "the ledger cannot read the stored object", detail: err.Error()}
		}
	}
	decision := quota.Admit(req)
	verdict := compareVerdicts(kerr, decision)
	if verdict.kind == "message differs" && sameFigures(kerr.Error(), decision.Message) {
		// Kubernetes' plugin holds the objects as they were read, with
		// each quantity's spelling (1.1Gi is BinarySI, 1e1
		// DecimalExponent); the ledger reads them as the API server
		// serializes them (1181116006400m, 10), as it does from a
		// webhook, and a sum prints in its first term's format. When
		// Kubernetes, given the same serialized objects, says what the
		// ledger says, the difference is only in how a figure prints
		// (README limitations, "Print formats").
		if again, err := kubeCheckServed(k, obj, old, attrs, kubeQuotas, kubeLimited); err == nil && again == decision.Message {
			verdict = outcome{detail: "print form only: " + kerr.Error()}
		}
	}
	if ledgerHandles := ledgerEvaluates(req); kubeHandles != ledgerHandles {
		// Whether the request is evaluated at all is compared first; the
		// kind says whether the verdicts differ as well.
		kind := "kubernetes evaluates the request, the ledger does not"
		if ledgerHandles {
			kind = "the ledger evaluates the request, kubernetes does not"
		}
		kind = fmt.Sprintf("%s (%s %s%s)", kind, op, resource, slashed(subresource))
		detail := fmt.Sprintf("kubernetes Handles: %v, ledger: %v", kubeHandles, ledgerHandles)
		if verdict.kind != "" {
			kind += ", and " + verdict.kind
			detail += "\n" + verdict.detail
		}
		return outcome{kind: kind, detail: detail}
	}
	switch {
	case verdict.kind != "" || verdict.detail != "":
	case kubeHandles:
		verdict.detail = "allowed"
	default:
		verdict.detail = "not evaluated"
	}
	return verdict
}

func slashed(sub string) string {
	if sub == "" {
		return ""
	}
	return "/" + sub
}

// ledgerObject is the ledger's reading of the served JSON of o.
func ledgerObject(k *kubeKind, o runtime.Object) (*object.Object, error) {
	raw, err := k.served(o)
	if err != nil {
		return nil, err
	}
	return decodeLedger(raw)
}

// ledgerEvaluates reports whether the ledger's Admit evaluates req at all:
// it is asked again with a single quota that tracks the object's count
// and has no used, which refuses every request Admit evaluates.
func ledgerEvaluates(req quota.AdmitRequest) bool {
	probe := obj{"apiVersion": "v1", "kind": "ResourceQuota", "metadata": obj{"name": "probe", "namespace": "ns"},
		"spec": obj{"hard": obj{"count/" + req.Object.Resource: "1000"}}}
	q, err := ledgerQuota(mustJSON(probe))
	if err != nil {
		panic(err)
	}
	req.Quotas = []quota.QuotaState{{Quota: q}}
	req.Limited = nil
	d := quota.Admit(req)
	return !d.Allowed && strings.Contains(d.Message, "status unknown for quota: probe")
}

// compareVerdicts compares CheckRequest's error with the ledger's
// decision: allowed or not, and the exact message.
func compareVerdicts(kerr error, d quota.Decision) outcome {
	want := "allowed"
	if kerr != nil {
		want = kerr.Error()
	}
	got := "allowed"
	if !d.Allowed {
		got = d.Message
	}
	if want != got {
		kind := "message differs"
		switch {
		case kerr == nil:
			kind = "kubernetes allows, the ledger denies"
		case d.Allowed:
			kind = "kubernetes denies, the ledger allows"
		}
		return outcome{kind: kind, detail: "kubernetes: " + want + "\nledger:     " + got}
	}
	if kerr != nil {
		return outcome{detail: want}
	}
	return outcome{}
}

// applyChanges edits a JSON tree in place: each change is {"path": [keys
// and list indexes], "value": v} to set a value, or without "value" to
// remove it. A change whose path does not exist is ignored.
func applyChanges(tree any, changes []any) {
	for _, c := range changes {
		m, _ := c.(map[string]any)
		path, _ := m["path"].([]any)
		if len(path) == 0 {
			continue
		}
		v, set := m["value"]
		setPath(tree, path, v, set)
	}
}

func setPath(tree any, path []any, v any, set bool) {
	cur := tree
	for i, step := range path {
		last := i == len(path)-1
		switch node := cur.(type) {
		case map[string]any:
			key, _ := step.(string)
			if last {
				if set {
					node[key] = clone(v)
				} else {
					delete(node, key)
				}
				return
			}
			next, ok := node[key]
			if !ok && set {
				next = map[string]any{}
				node[key] = next
			}
			cur = next
		case []any:
			idx := -1
			switch s := step.(type) {
			case int:
				idx = s
			case float64:
				idx = int(s)
			}
			if idx < 0 || idx >= len(node) {
				return
			}
			if last {
				if set {
					node[idx] = clone(v)
				}
				return
			}
			cur = node[idx]
		default:
			return
		}
	}
}

// mustJSONRaw reads JSON text into a tree.
func mustJSONRaw(raw []byte) any {
	var tree any
	if err := json.Unmarshal(raw, &tree); err != nil {
		panic(err)
	}
	return tree
}

func jsonUnmarshal(raw []byte, into any) error { return json.Unmarshal(raw, into) }

// kubeCheckServed asks Kubernetes' CheckRequest again, with obj and old
// read back from the JSON the API server serializes them to (what the
// ledger reads), and returns its refusal ("allowed" when it allows).
func kubeCheckServed(k *kubeKind, obj, old runtime.Object, attrs admission.Attributes, quotas []corev1.ResourceQuota, limited []resourcequotaapi.LimitedResource) (string, error) {
	reread := func(o runtime.Object) (runtime.Object, error) {
		if o == nil {
			return nil, nil
		}
		raw, err := k.served(o)
		if err != nil {
			return nil, err
		}
		var tree any
		if err := json.Unmarshal(raw, &tree); err != nil {
			return nil, err
		}
		return k.readObject(tree)
	}
	obj2, err := reread(obj)
	if err != nil {
		return "", err
	}
	old2, err := reread(old)
	if err != nil {
		return "", err
	}
	attrs2 := admission.NewAttributesRecord(obj2, old2, attrs.GetKind(), attrs.GetNamespace(), attrs.GetName(), attrs.GetResource(),
		attrs.GetSubresource(), attrs.GetOperation(), attrs.GetOperationOptions(), attrs.IsDryRun(), nil)
	if _, err := resourcequota.CheckRequest(quotas, attrs2, k.evaluator, limited); err != nil {
		return err.Error(), nil
	}
	return "allowed", nil
}

// quotaFigure matches a figure of a quota refusal: "name=quantity".
var quotaFigure = regexp.MustCompile(`=([^,\s]+)`)

// sameFigures reports whether two refusals say the same once each figure
// is replaced by its value, whatever its printed form.
func sameFigures(a, b string) bool {
	values := func(msg string) string {
		return quotaFigure.ReplaceAllStringFunc(msg, func(m string) string {
			q, err := resource.ParseQuantity(m[1:])
			if err != nil {
				return m
			}
			return "=" + q.AsDec().String()
		})
	}
	return values(a) == values(b)
}
