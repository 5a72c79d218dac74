package object

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	gojson "github.com/goccy/go-json"

	corev1 "k8s.io/api/core/v1"
	nodev1 "k8s.io/api/node/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// SizeMax is the largest JSON document Decode accepts. The API server
// refuses requests above 3 MiB; a little headroom covers watch framing.
const SizeMax = 4 << 20

// Object is one Kubernetes object as the ledger keeps it: its identity and,
// for the kinds whose fields quota accounting reads, the typed value.
type Object struct {
	APIVersion string
	Kind       string
	// Group is the API group, empty for the core group.
	Group string
	// Resource is the group-qualified plural resource, as quota names it in
	// count/<resource>: "pods", "jobs.batch", "widgets.example.com".
	Resource        string
	Namespace       string // empty for cluster-scoped kinds
	Name            string
	GenerateName    string
	UID             string
	ResourceVersion string
	// DeletionTimestamp is set once the object is being deleted (finalizers
	// or a grace period hold it); nil otherwise.
	DeletionTimestamp *time.Time
	// DeletionGracePeriodSeconds accompanies DeletionTimestamp.
	DeletionGracePeriodSeconds *int64
	// Value is the typed object (*corev1.Pod, *corev1.PersistentVolumeClaim,
	// ...) for kinds that quota reads beyond identity; nil for the others.
	Value runtime.Object

	clusterScoped bool
	// builtin says the kind is one of knownKinds, whose scope the ledger
	// knows; another kind's is taken from how it arrives
	// (TakeClusterScoped).
	builtin bool
}

// kindInfo is what the ledger knows of a built-in kind.
type kindInfo struct {
	resource      string // plural, without the group
	clusterScoped bool
	// decode, when set, makes Decode keep a typed value of the kind, read
	// from the object's JSON of version apiVersion.
	decode func(raw []byte, apiVersion string) (runtime.Object, error)
}

// typed reads an object into the k8s.io/api type T.
func typed[T any, P interface {
	*T
	runtime.Object
}](raw []byte, _ string) (runtime.Object, error) {
	v, err := unmarshal[T](raw)
	if err != nil {
		return nil, err
	}
	return P(v), nil
}

// unmarshal decodes raw into a new T with github.com/goccy/go-json, which
// reads the k8s.io/api types about three times as fast as encoding/json
// and agrees with it (FuzzUnmarshalAgrees). On an error encoding/json
// decodes again, so that its answer and its words stand.
func unmarshal[T any](raw []byte) (*T, error) {
	v := new(T)
	if gojson.Unmarshal(raw, v) == nil {
		return v, nil
	}
	v = new(T)
	if err := json.Unmarshal(raw, v); err != nil {
		return nil, err
	}
	return v, nil
}

type groupKind struct{ group, kind string }

// knownKinds lists the built-in kinds whose plural or scope cannot be
// guessed from the kind alone, and the kinds quota reads. Everything else
// is treated as a namespaced kind with the guessed plural, which is what
// the API server does for most custom resources.
var knownKinds = map[groupKind]kindInfo{
	{"", "Pod"}:                            {resource: "pods", decode: typed[corev1.Pod]},
	{"", "PersistentVolumeClaim"}:          {resource: "persistentvolumeclaims", decode: typed[corev1.PersistentVolumeClaim]},
	{"", "Service"}:                        {resource: "services", decode: typed[corev1.Service]},
	{"", "ResourceQuota"}:                  {resource: "resourcequotas", decode: typed[corev1.ResourceQuota]},
	{"", "LimitRange"}:                     {resource: "limitranges", decode: typed[corev1.LimitRange]},
	{"node.k8s.io", "RuntimeClass"}:        {resource: "runtimeclasses", clusterScoped: true, decode: typed[nodev1.RuntimeClass]},
	{"scheduling.k8s.io", "PriorityClass"}: {resource: "priorityclasses", clusterScoped: true, decode: typed[schedulingv1.PriorityClass]},
	{"storage.k8s.io", "StorageClass"}:     {resource: "storageclasses", clusterScoped: true, decode: typed[storagev1.StorageClass]},

	{"", "ConfigMap"}:                                                    {resource: "configmaps"},
	{"", "Secret"}:                                                       {resource: "secrets"},
	{"", "ReplicationController"}:                                        {resource: "replicationcontrollers"},
	{"", "ServiceAccount"}:                                               {resource: "serviceaccounts"},
	{"", "Endpoints"}:                                                    {resource: "endpoints"},
	{"", "Event"}:                                                        {resource: "events"},
	{"", "PodTemplate"}:                                                  {resource: "podtemplates"},
	{"", "Binding"}:                                                      {resource: "bindings"},
	{"", "Namespace"}:                                                    {resource: "namespaces", clusterScoped: true},
	{"", "Node"}:                                                         {resource: "nodes", clusterScoped: true},
	{"", "PersistentVolume"}:                                             {resource: "persistentvolumes", clusterScoped: true},
	{"", "ComponentStatus"}:                                              {resource: "componentstatuses", clusterScoped: true},
	{"apps", "Deployment"}:                                               {resource: "deployments"},
	{"apps", "ReplicaSet"}:                                               {resource: "replicasets"},
	{"apps", "StatefulSet"}:                                              {resource: "statefulsets"},
	{"apps", "DaemonSet"}:                                                {resource: "daemonsets"},
	{"apps", "ControllerRevision"}:                                       {resource: "controllerrevisions"},
	{"batch", "Job"}:                                                     {resource: "jobs"},
	{"batch", "CronJob"}:                                                 {resource: "cronjobs"},
	{"autoscaling", "HorizontalPodAutoscaler"}:                           {resource: "horizontalpodautoscalers"},
	{"policy", "PodDisruptionBudget"}:                                    {resource: "poddisruptionbudgets"},
	{"networking.k8s.io", "Ingress"}:                                     {resource: "ingresses"},
	{"networking.k8s.io", "NetworkPolicy"}:                               {resource: "networkpolicies"},
	{"networking.k8s.io", "IngressClass"}:                                {resource: "ingressclasses", clusterScoped: true},
	{"networking.k8s.io", "IPAddress"}:                                   {resource: "ipaddresses", clusterScoped: true},
	{"networking.k8s.io", "ServiceCIDR"}:                                 {resource: "servicecidrs", clusterScoped: true},
	{"discovery.k8s.io", "EndpointSlice"}:                                {resource: "endpointslices"},
	{"events.k8s.io", "Event"}:                                           {resource: "events"},
	{"coordination.k8s.io", "Lease"}:                                     {resource: "leases"},
	{"rbac.authorization.k8s.io", "Role"}:                                {resource: "roles"},
	{"rbac.authorization.k8s.io", "RoleBinding"}:                         {resource: "rolebindings"},
	{"rbac.authorization.k8s.io", "ClusterRole"}:                         {resource: "clusterroles", clusterScoped: true},
	{"rbac.authorization.k8s.io", "ClusterRoleBinding"}:                  {resource: "clusterrolebindings", clusterScoped: true},
	{"storage.k8s.io", "CSIDriver"}:                                      {resource: "csidrivers", clusterScoped: true},
	{"storage.k8s.io", "CSINode"}:                                        {resource: "csinodes", clusterScoped: true},
	{"storage.k8s.io", "VolumeAttachment"}:                               {resource: "volumeattachments", clusterScoped: true},
	{"storage.k8s.io", "VolumeAttributesClass"}:                          {resource: "volumeattributesclasses", clusterScoped: true},
	{"storage.k8s.io", "CSIStorageCapacity"}:                             {resource: "csistoragecapacities"},
	{"certificates.k8s.io", "CertificateSigningRequest"}:                 {resource: "certificatesigningrequests", clusterScoped: true},
	{"apiextensions.k8s.io", "CustomResourceDefinition"}:                 {resource: "customresourcedefinitions", clusterScoped: true},
	{"apiregistration.k8s.io", "APIService"}:                             {resource: "apiservices", clusterScoped: true},
	{"admissionregistration.k8s.io", "ValidatingWebhookConfiguration"}:   {resource: "validatingwebhookconfigurations", clusterScoped: true},
	{"admissionregistration.k8s.io", "MutatingWebhookConfiguration"}:     {resource: "mutatingwebhookconfigurations", clusterScoped: true},
	{"admissionregistration.k8s.io", "ValidatingAdmissionPolicy"}:        {resource: "validatingadmissionpolicies", clusterScoped: true},
	{"admissionregistration.k8s.io", "ValidatingAdmissionPolicyBinding"}: {resource: "validatingadmissionpolicybindings", clusterScoped: true},
	{"admissionregistration.k8s.io", "MutatingAdmissionPolicy"}:          {resource: "mutatingadmissionpolicies", clusterScoped: true},
	{"admissionregistration.k8s.io", "MutatingAdmissionPolicyBinding"}:   {resource: "mutatingadmissionpolicybindings", clusterScoped: true},
	{"flowcontrol.apiserver.k8s.io", "FlowSchema"}:                       {resource: "flowschemas", clusterScoped: true},
	{"flowcontrol.apiserver.k8s.io", "PriorityLevelConfiguration"}:       {resource: "prioritylevelconfigurations", clusterScoped: true},
	{"resource.k8s.io", "ResourceClaim"}:                                 {resource: "resourceclaims", decode: decodeClaim},
	{"resource.k8s.io", "ResourceClaimTemplate"}:                         {resource: "resourceclaimtemplates"},
	{"resource.k8s.io", "DeviceClass"}:                                   {resource: "deviceclasses", clusterScoped: true},
	{"resource.k8s.io", "ResourceSlice"}:                                 {resource: "resourceslices", clusterScoped: true},
}

// header is the part of every object Decode reads before choosing a type.
type header struct {
	APIVersion string     `json:"apiVersion"`
	Kind       string     `json:"kind"`
	Metadata   headerMeta `json:"metadata"`
}

// headerMeta is the part of an object's metadata that header holds.
type headerMeta struct {
	Name                       string       `json:"name"`
	GenerateName               string       `json:"generateName"`
	Namespace                  string       `json:"namespace"`
	UID                        string       `json:"uid"`
	ResourceVersion            string       `json:"resourceVersion"`
	DeletionTimestamp          *metav1.Time `json:"deletionTimestamp"`
	DeletionGracePeriodSeconds *int64       `json:"deletionGracePeriodSeconds"`
}

// Decode reads one Kubernetes object from JSON. A namespaced object may
// come without a namespace (a manifest); SetNamespace supplies it.
func Decode(raw []byte) (*Object, error) {
	if len(raw) > SizeMax {
		return nil, fmt.Errorf("decode object: %w: %d bytes, at most %d (%d MiB)", ErrTooLarge, len(raw), SizeMax, SizeMax>>20)
	}
	trimmed := bytes.TrimSpace(raw)
	if len(trimmed) == 0 || trimmed[0] != '{' {
		return nil, fmt.Errorf("decode object: %w", ErrNotObject)
	}
	if o := decodeTrimmed(trimmed); o != nil {
		return o, nil
	}
	return decodeTyped(trimmed)
}

// identify checks the header every object needs and builds the Object's
// identity from it, with what the ledger knows of the kind.
func identify(h *header) (*Object, kindInfo, error) {
	if h.Kind == "" {
		return nil, kindInfo{}, fmt.Errorf("decode object: %w", ErrMissingKind)
	}
	if h.APIVersion == "" {
		return nil, kindInfo{}, fmt.Errorf("decode object %s: %w", h.Kind, ErrMissingAPIVersion)
	}
	gv, err := schema.ParseGroupVersion(h.APIVersion)
	if err != nil || gv.Version == "" {
		return nil, kindInfo{}, fmt.Errorf("decode object %s: apiVersion %q: %w", h.Kind, h.APIVersion, ErrMalformed)
	}
	if h.Metadata.Name == "" && h.Metadata.GenerateName == "" {
		return nil, kindInfo{}, fmt.Errorf("decode object %s: %w", h.Kind, ErrMissingName)
	}
	o := &Object{
		APIVersion:                 h.APIVersion,
		Kind:                       h.Kind,
		Group:                      gv.Group,
		Namespace:                  h.Metadata.Namespace,
		Name:                       h.Metadata.Name,
		GenerateName:               h.Metadata.GenerateName,
		UID:                        h.Metadata.UID,
		ResourceVersion:            h.Metadata.ResourceVersion,
		DeletionGracePeriodSeconds: h.Metadata.DeletionGracePeriodSeconds,
	}
	if h.Metadata.DeletionTimestamp != nil {
		t := h.Metadata.DeletionTimestamp.Time.UTC()
		o.DeletionTimestamp = &t
	}
	info, known := knownKinds[groupKind{gv.Group, h.Kind}]
	o.builtin = known
	if known {
		o.Resource = info.resource
		o.clusterScoped = info.clusterScoped
	} else {
		plural, _ := meta.UnsafeGuessKindToResource(gv.WithKind(h.Kind))
		o.Resource = plural.Resource
	}
	if gv.Group != "" {
		o.Resource += "." + gv.Group
	}
	if o.clusterScoped {
		// The API server ignores a namespace on a cluster-scoped object.
		o.Namespace = ""
	}
	return o, info, nil
}

func (o *Object) displayName() string {
	if o.Name != "" {
		return o.Name
	}
	return o.GenerateName
}

// ClusterScoped reports whether the kind lives outside namespaces.
func (o *Object) ClusterScoped() bool { return o.clusterScoped }

// TakeClusterScoped marks an object of a kind the ledger does not know (a
// custom resource) that names no namespace as cluster-scoped, as an API
// server's watch event without a namespace says it is. It reports false,
// changing nothing, for a built-in kind and for an object with a namespace.
func (o *Object) TakeClusterScoped() bool {
	if o.builtin || o.Namespace != "" {
		return false
	}
	o.clusterScoped = true
	return true
}

// GroupResource returns the plural and group the object is stored under.
func (o *Object) GroupResource() schema.GroupResource {
	plural, _, _ := strings.Cut(o.Resource, ".")
	return schema.GroupResource{Group: o.Group, Resource: plural}
}

// SetNamespace gives a namespaced object the namespace ns, in the identity
// and in the typed value. Cluster-scoped objects are left unchanged.
func (o *Object) SetNamespace(ns string) {
	if o.clusterScoped {
		return
	}
	o.Namespace = ns
	o.syncMeta()
}

// syncMeta keeps the typed value's identity equal to the Object's, so that
// Trimmed and the evaluator agree whichever one a caller changed.
func (o *Object) syncMeta() {
	if m, ok := o.Value.(metav1.Object); ok {
		m.SetNamespace(o.Namespace)
	}
}

// Key identifies the object within the ledger: resource, namespace, name.
func (o *Object) Key() string { return o.Resource + "/" + o.Namespace + "/" + o.Name }
