package kubeoracle

import (
	"encoding/json"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
	quotav1 "k8s.io/apiserver/pkg/quota/v1"
	testingclock "k8s.io/utils/clock/testing"

	"k8s.io/kubernetes/pkg/api/legacyscheme"
	podutil "k8s.io/kubernetes/pkg/api/pod"
	api "k8s.io/kubernetes/pkg/apis/core"
	"k8s.io/kubernetes/pkg/apis/core/helper/qos"
	_ "k8s.io/kubernetes/pkg/apis/core/install"
	"k8s.io/kubernetes/pkg/apis/core/validation"
	"k8s.io/kubernetes/pkg/quota/v1/evaluator/core"
)

// Kubernetes' evaluators, as kube-apiserver and the quota controller build
// them, on a clock stopped at now.
var (
	kubeClock   = testingclock.NewFakeClock(now)
	kubePods    = core.NewPodEvaluator(nil, kubeClock)
	kubeClaims  = core.NewPersistentVolumeClaimEvaluator(nil)
	kubeService = core.NewServiceEvaluator(nil)
)

var _ quotav1.Evaluator = kubePods

// kubePod reads raw into a v1 pod as an informer does.
func kubePod(raw []byte) (*corev1.Pod, error) {
	var p corev1.Pod
	if err := json.Unmarshal(raw, &p); err != nil {
		return nil, err
	}
	return &p, nil
}

// storedPod is what kube-apiserver keeps of a created pod: the manifest
// read as v1, defaulted, converted to the internal type and back, and
// written out as JSON. It also returns the internal pod's validation
// errors: a pod that fails them is never stored.
func storedPod(raw []byte) ([]byte, field.ErrorList, error) {
	p, err := kubePod(raw)
	if err != nil {
		return nil, nil, err
	}
	legacyscheme.Scheme.Default(p)
	var internal api.Pod
	if err := legacyscheme.Scheme.Convert(p, &internal, nil); err != nil {
		return nil, nil, err
	}
	errs := validatePod(&internal)
	prepareForCreate(&internal)
	var out corev1.Pod
	if err := legacyscheme.Scheme.Convert(&internal, &out, nil); err != nil {
		return nil, nil, err
	}
	out.APIVersion, out.Kind = "v1", "Pod"
	b, err := json.Marshal(&out)
	return b, errs, err
}

// prepareForCreate is what the pod registry sets on a new pod before
// validating admission (quota) runs: phase Pending and the QoS class.
// Status a test gave the pod (the kubelet's, later) is kept.
func prepareForCreate(p *api.Pod) {
	if p.Status.Phase == "" {
		p.Status.Phase = api.PodPending
	}
	if p.Status.QOSClass == "" {
		p.Status.QOSClass = qos.GetPodQOS(p)
	}
}

// validatePod is the API server's validation of a new pod.
func validatePod(p *api.Pod) field.ErrorList {
	opts := podutil.GetValidationOptionsFromPodSpecAndMeta(&p.Spec, nil, &p.ObjectMeta, nil)
	return validation.ValidatePodCreate(p, opts)
}

// defaultedInternalPod is what the admission chain sees of a created pod:
// the manifest read as v1, defaulted and converted to the internal type.
func defaultedInternalPod(raw []byte) (*api.Pod, error) {
	p, err := kubePod(raw)
	if err != nil {
		return nil, err
	}
	legacyscheme.Scheme.Default(p)
	var internal api.Pod
	if err := legacyscheme.Scheme.Convert(p, &internal, nil); err != nil {
		return nil, err
	}
	if internal.Namespace == "" {
		internal.Namespace = "ns"
	}
	return &internal, nil
}

func errSummary(errs field.ErrorList) string {
	if len(errs) == 0 {
		return ""
	}
	return fmt.Sprint(errs.ToAggregate())
}
