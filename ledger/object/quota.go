package object

import (
	"bytes"
	"encoding/json"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// DecodeForQuota reads an object as Decode does, except that a pod's typed
// value holds only the fields quota accounting reads: those Trimmed keeps
// and that defaulting, evaluation and admission read, with its identity.
// Everything else of a pod (managed fields, volumes, environment, most of
// its status) is skipped instead of decoded, which makes it several times
// cheaper on the objects a cluster sends. Wherever Decode succeeds,
// DecodeForQuota does too, with the same identity and the same Trimmed
// bytes, so every charge and verdict is the same
// (TestDecodeForQuotaTrimsAsDecode and FuzzDecodeForQuota hold it to
// that). It does not check what it skips: a pod whose skipped fields are
// malformed (a number where its volumes belong) decodes here and fails in
// Decode. Use Decode where the whole object is wanted.
func DecodeForQuota(raw []byte) (*Object, error) {
	if len(raw) > SizeMax {
		return nil, fmt.Errorf("decode object: %d bytes: %w", len(raw), ErrTooLarge)
	}
	trimmed := bytes.TrimSpace(raw)
	if len(trimmed) == 0 || trimmed[0] != '{' {
		return nil, fmt.Errorf("decode object: %w", ErrNotObject)
	}
	if o := decodeFast(trimmed); o != nil {
		return o, nil
	}
	if o := decodeQuotaPod(trimmed); o != nil {
		return o, nil
	}
	return Decode(trimmed)
}

// quotaContainer is the part of a container quota reads.
type quotaContainer struct {
	Name          string                         `json:"name"`
	Resources     corev1.ResourceRequirements    `json:"resources"`
	RestartPolicy *corev1.ContainerRestartPolicy `json:"restartPolicy"`
}

// quotaContainerStatus is the part of a container status quota reads.
type quotaContainerStatus struct {
	Name               string                       `json:"name"`
	AllocatedResources corev1.ResourceList          `json:"allocatedResources"`
	Resources          *corev1.ResourceRequirements `json:"resources"`
}

// quotaPod is the part of a pod quota reads, under the JSON names of
// corev1.Pod, so that encoding/json fills each field exactly as it fills
// the pod's own.
type quotaPod struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	Metadata   struct {
		Name                       string       `json:"name"`
		GenerateName               string       `json:"generateName"`
		Namespace                  string       `json:"namespace"`
		UID                        types.UID    `json:"uid"`
		ResourceVersion            string       `json:"resourceVersion"`
		DeletionTimestamp          *metav1.Time `json:"deletionTimestamp"`
		DeletionGracePeriodSeconds *int64       `json:"deletionGracePeriodSeconds"`
	} `json:"metadata"`
	Spec struct {
		InitContainers        []quotaContainer             `json:"initContainers"`
		Containers            []quotaContainer             `json:"containers"`
		ActiveDeadlineSeconds *int64                       `json:"activeDeadlineSeconds"`
		Affinity              *corev1.Affinity             `json:"affinity"`
		PriorityClassName     string                       `json:"priorityClassName"`
		Priority              *int32                       `json:"priority"`
		RuntimeClassName      *string                      `json:"runtimeClassName"`
		Overhead              corev1.ResourceList          `json:"overhead"`
		Resources             *corev1.ResourceRequirements `json:"resources"`
	} `json:"spec"`
	Status struct {
		Phase                 corev1.PodPhase        `json:"phase"`
		QOSClass              corev1.PodQOSClass     `json:"qosClass"`
		Conditions            []corev1.PodCondition  `json:"conditions"`
		InitContainerStatuses []quotaContainerStatus `json:"initContainerStatuses"`
		ContainerStatuses     []quotaContainerStatus `json:"containerStatuses"`
	} `json:"status"`
}

// decodeQuotaPod is DecodeForQuota for a core v1 pod. It returns nil for
// anything else, or when the decode fails (Decode then words the error).
func decodeQuotaPod(trimmed []byte) *Object {
	apiVersion, kind, ok := typeMeta(trimmed)
	if !ok || apiVersion != "v1" || kind != "Pod" {
		return nil
	}
	var p quotaPod
	if err := json.Unmarshal(trimmed, &p); err != nil || p.APIVersion != apiVersion || p.Kind != kind {
		return nil
	}
	var h header
	h.APIVersion, h.Kind = p.APIVersion, p.Kind
	m := &p.Metadata
	h.Metadata.Name, h.Metadata.GenerateName, h.Metadata.Namespace = m.Name, m.GenerateName, m.Namespace
	h.Metadata.UID, h.Metadata.ResourceVersion = string(m.UID), m.ResourceVersion
	h.Metadata.DeletionTimestamp, h.Metadata.DeletionGracePeriodSeconds = m.DeletionTimestamp, m.DeletionGracePeriodSeconds
	o, _, _, err := identify(&h)
	if err != nil {
		return nil
	}
	pod := &corev1.Pod{
		TypeMeta: metav1.TypeMeta{APIVersion: p.APIVersion, Kind: p.Kind},
		ObjectMeta: metav1.ObjectMeta{
			Name: m.Name, GenerateName: m.GenerateName, Namespace: m.Namespace, UID: m.UID,
			ResourceVersion: m.ResourceVersion, DeletionTimestamp: m.DeletionTimestamp,
			DeletionGracePeriodSeconds: m.DeletionGracePeriodSeconds,
		},
		Spec: corev1.PodSpec{
			InitContainers:        containers(p.Spec.InitContainers),
			Containers:            containers(p.Spec.Containers),
			ActiveDeadlineSeconds: p.Spec.ActiveDeadlineSeconds,
			Affinity:              p.Spec.Affinity,
			PriorityClassName:     p.Spec.PriorityClassName,
			Priority:              p.Spec.Priority,
			RuntimeClassName:      p.Spec.RuntimeClassName,
			Overhead:              p.Spec.Overhead,
			Resources:             p.Spec.Resources,
		},
		Status: corev1.PodStatus{
			Phase:                 p.Status.Phase,
			QOSClass:              p.Status.QOSClass,
			Conditions:            p.Status.Conditions,
			InitContainerStatuses: containerStatuses(p.Status.InitContainerStatuses),
			ContainerStatuses:     containerStatuses(p.Status.ContainerStatuses),
		},
	}
	o.Value = pod
	o.syncMeta()
	return o
}

func containers(in []quotaContainer) []corev1.Container {
	if in == nil {
		return nil
	}
	out := make([]corev1.Container, len(in))
	for i, c := range in {
		out[i] = corev1.Container{Name: c.Name, Resources: c.Resources, RestartPolicy: c.RestartPolicy}
	}
	return out
}

func containerStatuses(in []quotaContainerStatus) []corev1.ContainerStatus {
	if in == nil {
		return nil
	}
	out := make([]corev1.ContainerStatus, len(in))
	for i, s := range in {
		out[i] = corev1.ContainerStatus{Name: s.Name, AllocatedResources: s.AllocatedResources, Resources: s.Resources}
	}
	return out
}
