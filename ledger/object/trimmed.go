package object

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"

	corev1 "k8s.io/api/core/v1"
	nodev1 "k8s.io/api/node/v1"
	resourcev1 "k8s.io/api/resource/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	storagev1 "k8s.io/api/storage/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// BetaStorageClassAnnotation names a claim's storage class before
// spec.storageClassName existed; quota still prefers it when set.
const BetaStorageClassAnnotation = "volume.beta.kubernetes.io/storage-class"

// DefaultStorageClassAnnotations mark a StorageClass as the cluster's
// default (the GA and the beta spelling); the DefaultStorageClass
// admission plugin gives claims that name no class the default one.
var DefaultStorageClassAnnotations = []string{
	"storageclass.kubernetes.io/is-default-class",
	"storageclass.beta.kubernetes.io/is-default-class",
}

// trimmedMeta is the identity every trimmed object keeps.
type trimmedMeta struct {
	Name                       string            `json:"name,omitempty"`
	GenerateName               string            `json:"generateName,omitempty"`
	Namespace                  string            `json:"namespace,omitempty"`
	UID                        string            `json:"uid,omitempty"`
	DeletionTimestamp          *metav1.Time      `json:"deletionTimestamp,omitempty"`
	DeletionGracePeriodSeconds *int64            `json:"deletionGracePeriodSeconds,omitempty"`
	Annotations                map[string]string `json:"annotations,omitempty"`
	// CreationTimestamp is kept for StorageClasses only: among several
	// default classes, the newest is the default.
	CreationTimestamp *metav1.Time `json:"creationTimestamp,omitempty"`
	// OwnerReferences is kept for a ResourceClaim the scheduler made for a
	// pod's extended resources (ExtendedResourceClaimAnnotation): its
	// controller, the pod, whose own charge covers the claim's.
	OwnerReferences []metav1.OwnerReference `json:"ownerReferences,omitempty"`
}

// trimmedObject is the envelope of every trimmed object. Spec and Status
// hold kind-specific reduced structs, or nothing.
type trimmedObject struct {
	APIVersion string      `json:"apiVersion"`
	Kind       string      `json:"kind"`
	Metadata   trimmedMeta `json:"metadata"`
	Spec       any         `json:"spec,omitempty"`
	Status     any         `json:"status,omitempty"`
	// Flat fields of kinds that keep them at the top level.
	Handler    string             `json:"handler,omitempty"`
	Overhead   *nodev1.Overhead   `json:"overhead,omitempty"`
	Scheduling *nodev1.Scheduling `json:"scheduling,omitempty"`
	Value      *int32             `json:"value,omitempty"`
	// GlobalDefault and Provisioner are kept for the record only.
	GlobalDefault bool   `json:"globalDefault,omitempty"`
	Provisioner   string `json:"provisioner,omitempty"`
}

type trimmedResources struct {
	Requests corev1.ResourceList `json:"requests,omitempty"`
	Limits   corev1.ResourceList `json:"limits,omitempty"`
}

type trimmedContainer struct {
	Name          string                         `json:"name"`
	Resources     *trimmedResources              `json:"resources,omitempty"`
	RestartPolicy *corev1.ContainerRestartPolicy `json:"restartPolicy,omitempty"`
}

type trimmedAffinityTerm struct {
	Namespaces        []string              `json:"namespaces,omitempty"`
	NamespaceSelector *metav1.LabelSelector `json:"namespaceSelector,omitempty"`
}

type trimmedWeightedTerm struct {
	PodAffinityTerm trimmedAffinityTerm `json:"podAffinityTerm"`
}

type trimmedPodAffinity struct {
	Required  []trimmedAffinityTerm `json:"requiredDuringSchedulingIgnoredDuringExecution,omitempty"`
	Preferred []trimmedWeightedTerm `json:"preferredDuringSchedulingIgnoredDuringExecution,omitempty"`
}

type trimmedAffinity struct {
	PodAffinity     *trimmedPodAffinity `json:"podAffinity,omitempty"`
	PodAntiAffinity *trimmedPodAffinity `json:"podAntiAffinity,omitempty"`
}

type trimmedPodSpec struct {
	InitContainers        []trimmedContainer  `json:"initContainers,omitempty"`
	Containers            []trimmedContainer  `json:"containers"`
	ActiveDeadlineSeconds *int64              `json:"activeDeadlineSeconds,omitempty"`
	Affinity              *trimmedAffinity    `json:"affinity,omitempty"`
	PriorityClassName     string              `json:"priorityClassName,omitempty"`
	RuntimeClassName      *string             `json:"runtimeClassName,omitempty"`
	Overhead              corev1.ResourceList `json:"overhead,omitempty"`
	Resources             *trimmedResources   `json:"resources,omitempty"`
}

type trimmedContainerStatus struct {
	Name               string              `json:"name"`
	AllocatedResources corev1.ResourceList `json:"allocatedResources,omitempty"`
	Resources          *trimmedResources   `json:"resources,omitempty"`
}

type trimmedCondition struct {
	Type   corev1.PodConditionType `json:"type"`
	Status corev1.ConditionStatus  `json:"status,omitempty"`
	Reason string                  `json:"reason,omitempty"`
}

type trimmedPodStatus struct {
	Phase                 corev1.PodPhase          `json:"phase,omitempty"`
	QOSClass              corev1.PodQOSClass       `json:"qosClass,omitempty"`
	Conditions            []trimmedCondition       `json:"conditions,omitempty"`
	InitContainerStatuses []trimmedContainerStatus `json:"initContainerStatuses,omitempty"`
	ContainerStatuses     []trimmedContainerStatus `json:"containerStatuses,omitempty"`
}

type trimmedPVCSpec struct {
	Resources                 trimmedResources `json:"resources"`
	StorageClassName          *string          `json:"storageClassName,omitempty"`
	VolumeAttributesClassName *string          `json:"volumeAttributesClassName,omitempty"`
}

type trimmedModifyVolumeStatus struct {
	TargetVolumeAttributesClassName string `json:"targetVolumeAttributesClassName,omitempty"`
}

type trimmedPVCStatus struct {
	AllocatedResources               corev1.ResourceList        `json:"allocatedResources,omitempty"`
	CurrentVolumeAttributesClassName *string                    `json:"currentVolumeAttributesClassName,omitempty"`
	ModifyVolumeStatus               *trimmedModifyVolumeStatus `json:"modifyVolumeStatus,omitempty"`
}

type trimmedServicePort struct {
	Port     int32 `json:"port,omitempty"`
	NodePort int32 `json:"nodePort,omitempty"`
}

type trimmedServiceSpec struct {
	Type                          corev1.ServiceType   `json:"type,omitempty"`
	Ports                         []trimmedServicePort `json:"ports,omitempty"`
	AllocateLoadBalancerNodePorts *bool                `json:"allocateLoadBalancerNodePorts,omitempty"`
}

// Trimmed returns the object's JSON reduced to the fields quota accounting
// reads, from the typed value (defaulting included). Decode(Trimmed())
// evaluates to the same charges as the original, and two states that
// differ only in fields quota ignores give equal bytes: the
// resourceVersion, which changes on every write, is left to the event.
func (o *Object) Trimmed() ([]byte, error) {
	t, err := o.trimmed()
	if err != nil {
		return nil, err
	}
	b, err := json.Marshal(t)
	if err != nil {
		return nil, fmt.Errorf("trim %s %q: %w", o.Kind, o.displayName(), err)
	}
	return b, nil
}

// trimmed returns the reduced form Trimmed encodes.
func (o *Object) trimmed() (*trimmedObject, error) {
	t := trimmedObject{
		APIVersion: o.APIVersion,
		Kind:       o.Kind,
		Metadata: trimmedMeta{
			Name:                       o.Name,
			GenerateName:               o.GenerateName,
			Namespace:                  o.Namespace,
			UID:                        o.UID,
			DeletionGracePeriodSeconds: o.DeletionGracePeriodSeconds,
		},
	}
	if o.DeletionTimestamp != nil {
		t.Metadata.DeletionTimestamp = &metav1.Time{Time: *o.DeletionTimestamp}
	}
	switch v := o.Value.(type) {
	case nil:
	case *corev1.Pod:
		t.Spec, t.Status = trimPod(v)
	case *corev1.PersistentVolumeClaim:
		if class, ok := v.Annotations[BetaStorageClassAnnotation]; ok {
			t.Metadata.Annotations = map[string]string{BetaStorageClassAnnotation: class}
		}
		t.Spec, t.Status = trimPVC(v)
	case *corev1.Service:
		t.Spec = trimService(v)
	case *resourcev1.ResourceClaim:
		t.APIVersion = claimAPIVersion
		t.Spec = trimClaim(v)
		trimClaimMeta(v, &t.Metadata)
	case *corev1.ResourceQuota:
		// The status is the cluster's own count, rewritten on every
		// admission; usage is computed from the objects, so keeping it
		// would only grow the log.
		t.Spec = &v.Spec
	case *corev1.LimitRange:
		t.Spec = &v.Spec
	case *nodev1.RuntimeClass:
		t.Handler = v.Handler
		t.Overhead = v.Overhead
		// Admission reads the node selector, whose labels a pod may not
		// give another value; the tolerations merged into a pod refuse
		// nothing and charge nothing.
		if sc := v.Scheduling; sc != nil && len(sc.NodeSelector) > 0 {
			t.Scheduling = &nodev1.Scheduling{NodeSelector: sc.NodeSelector}
		}
	case *schedulingv1.PriorityClass:
		value := v.Value
		t.Value = &value
		t.GlobalDefault = v.GlobalDefault
	case *storagev1.StorageClass:
		t.Provisioner = v.Provisioner
		trimStorageClassMeta(v, &t.Metadata)
	default:
		return nil, fmt.Errorf("trim %s: unexpected value type %T", o.Kind, o.Value)
	}
	return &t, nil
}

// trimClaimMeta keeps of an extended resource's claim the annotation
// that marks it and the controller that made it.
func trimClaimMeta(v *resourcev1.ResourceClaim, m *trimmedMeta) {
	value, ok := v.Annotations[resourcev1.ExtendedResourceClaimAnnotation]
	if !ok {
		return
	}
	m.Annotations = map[string]string{resourcev1.ExtendedResourceClaimAnnotation: value}
	if ref := metav1.GetControllerOfNoCopy(v); ref != nil {
		m.OwnerReferences = []metav1.OwnerReference{{
			APIVersion: ref.APIVersion, Kind: ref.Kind, Name: ref.Name, UID: ref.UID, Controller: ref.Controller,
		}}
	}
}

// trimStorageClassMeta keeps of a storage class what picks the default
// class: its default annotations and its creation time.
func trimStorageClassMeta(v *storagev1.StorageClass, m *trimmedMeta) {
	for _, key := range DefaultStorageClassAnnotations {
		if value, ok := v.Annotations[key]; ok {
			if m.Annotations == nil {
				m.Annotations = map[string]string{}
			}
			m.Annotations[key] = value
		}
	}
	if !v.CreationTimestamp.IsZero() {
		ts := v.CreationTimestamp.Rfc3339Copy()
		m.CreationTimestamp = &ts
	}
}

func trimResources(r corev1.ResourceRequirements) *trimmedResources {
	if len(r.Requests) == 0 && len(r.Limits) == 0 {
		return nil
	}
	return &trimmedResources{Requests: r.Requests, Limits: r.Limits}
}

func trimContainers(cs []corev1.Container) []trimmedContainer {
	out := make([]trimmedContainer, len(cs))
	for i := range cs {
		out[i] = trimmedContainer{
			Name:          cs[i].Name,
			Resources:     trimResources(cs[i].Resources),
			RestartPolicy: cs[i].RestartPolicy,
		}
	}
	return out
}

// trimPodAffinity keeps of affinity terms what the
// CrossNamespacePodAffinity scope reads.
func trimPodAffinity(required []corev1.PodAffinityTerm, preferred []corev1.WeightedPodAffinityTerm) *trimmedPodAffinity {
	term := func(t *corev1.PodAffinityTerm) trimmedAffinityTerm {
		return trimmedAffinityTerm{Namespaces: t.Namespaces, NamespaceSelector: t.NamespaceSelector}
	}
	out := &trimmedPodAffinity{}
	for i := range required {
		out.Required = append(out.Required, term(&required[i]))
	}
	for i := range preferred {
		out.Preferred = append(out.Preferred, trimmedWeightedTerm{PodAffinityTerm: term(&preferred[i].PodAffinityTerm)})
	}
	return out
}

func trimContainerStatuses(ss []corev1.ContainerStatus) []trimmedContainerStatus {
	var out []trimmedContainerStatus
	for i := range ss {
		s := trimmedContainerStatus{Name: ss[i].Name, AllocatedResources: ss[i].AllocatedResources}
		if ss[i].Resources != nil {
			s.Resources = &trimmedResources{Requests: ss[i].Resources.Requests, Limits: ss[i].Resources.Limits}
		}
		if len(s.AllocatedResources) == 0 && s.Resources == nil {
			// A status without resources reads the same as no status.
			continue
		}
		out = append(out, s)
	}
	return out
}

// trimPod returns the trimmed spec and status of p, the status nil (not
// a nil pointer, which omitempty would print) when it holds nothing.
func trimPod(p *corev1.Pod) (spec *trimmedPodSpec, status any) {
	spec = &trimmedPodSpec{
		InitContainers:        trimContainers(p.Spec.InitContainers),
		Containers:            trimContainers(p.Spec.Containers),
		ActiveDeadlineSeconds: p.Spec.ActiveDeadlineSeconds,
		PriorityClassName:     p.Spec.PriorityClassName,
		RuntimeClassName:      p.Spec.RuntimeClassName,
		Overhead:              p.Spec.Overhead,
	}
	if p.Spec.Resources != nil {
		spec.Resources = &trimmedResources{Requests: p.Spec.Resources.Requests, Limits: p.Spec.Resources.Limits}
	}
	if a := p.Spec.Affinity; a != nil && (a.PodAffinity != nil || a.PodAntiAffinity != nil) {
		spec.Affinity = &trimmedAffinity{}
		if pa := a.PodAffinity; pa != nil {
			spec.Affinity.PodAffinity = trimPodAffinity(pa.RequiredDuringSchedulingIgnoredDuringExecution, pa.PreferredDuringSchedulingIgnoredDuringExecution)
		}
		if pa := a.PodAntiAffinity; pa != nil {
			spec.Affinity.PodAntiAffinity = trimPodAffinity(pa.RequiredDuringSchedulingIgnoredDuringExecution, pa.PreferredDuringSchedulingIgnoredDuringExecution)
		}
	}
	st := &trimmedPodStatus{
		Phase:                 p.Status.Phase,
		QOSClass:              p.Status.QOSClass,
		InitContainerStatuses: trimContainerStatuses(p.Status.InitContainerStatuses),
		ContainerStatuses:     trimContainerStatuses(p.Status.ContainerStatuses),
	}
	for _, c := range p.Status.Conditions {
		// Only a pending resize changes what quota charges.
		if c.Type == corev1.PodResizePending {
			st.Conditions = append(st.Conditions, trimmedCondition{Type: c.Type, Status: c.Status, Reason: c.Reason})
		}
	}
	if st.Phase == "" && st.QOSClass == "" && st.Conditions == nil && st.InitContainerStatuses == nil && st.ContainerStatuses == nil {
		return spec, nil
	}
	return spec, st
}

// trimPVC returns the trimmed spec and status of c, as trimPod.
func trimPVC(c *corev1.PersistentVolumeClaim) (spec *trimmedPVCSpec, status any) {
	spec = &trimmedPVCSpec{
		Resources:                 trimmedResources{Requests: c.Spec.Resources.Requests, Limits: c.Spec.Resources.Limits},
		StorageClassName:          c.Spec.StorageClassName,
		VolumeAttributesClassName: c.Spec.VolumeAttributesClassName,
	}
	st := &trimmedPVCStatus{
		AllocatedResources:               c.Status.AllocatedResources,
		CurrentVolumeAttributesClassName: c.Status.CurrentVolumeAttributesClassName,
	}
	if m := c.Status.ModifyVolumeStatus; m != nil && m.TargetVolumeAttributesClassName != "" {
		st.ModifyVolumeStatus = &trimmedModifyVolumeStatus{TargetVolumeAttributesClassName: m.TargetVolumeAttributesClassName}
	}
	if st.AllocatedResources == nil && st.CurrentVolumeAttributesClassName == nil && st.ModifyVolumeStatus == nil {
		return spec, nil
	}
	return spec, st
}

func trimService(s *corev1.Service) *trimmedServiceSpec {
	spec := &trimmedServiceSpec{Type: s.Spec.Type, AllocateLoadBalancerNodePorts: s.Spec.AllocateLoadBalancerNodePorts}
	spec.Ports = make([]trimmedServicePort, len(s.Spec.Ports))
	for i, p := range s.Spec.Ports {
		spec.Ports[i] = trimmedServicePort{Port: p.Port, NodePort: p.NodePort}
	}
	return spec
}

// metadataKey is where every trimmed object's metadata begins: the
// trimmed envelope always prints apiVersion, kind, then metadata.
var metadataKey = []byte(`"metadata":{`)

// WithResourceVersion puts rv into a trimmed object's metadata, which
// Trimmed leaves out (so that equal states give equal bytes): a listed
// object carries its version this way, which the projection fences
// resyncs by. An empty rv leaves trimmed as it is.
func WithResourceVersion(trimmed []byte, rv string) []byte {
	i := bytes.Index(trimmed, metadataKey)
	if rv == "" || i < 0 {
		return trimmed
	}
	at := i + len(metadataKey)
	field := `"resourceVersion":` + strconv.Quote(rv)
	if trimmed[at] != '}' {
		field += ","
	}
	out := make([]byte, 0, len(trimmed)+len(field))
	out = append(out, trimmed[:at]...)
	out = append(out, field...)
	return append(out, trimmed[at:]...)
}
