package object

import (
	"encoding/json"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/quotaledger/quota/ledger/jsonscan"
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
// that). Of what it skips it checks the JSON grammar only, not the types:
// a pod with a number where its volumes belong decodes here and fails in
// Decode. Use Decode where the whole object is wanted.
func DecodeForQuota(raw []byte) (*Object, error) {
	trimmed, err := objectBytes(raw)
	if err != nil {
		return nil, err
	}
	if o := decodeFast(trimmed); o != nil {
		return o, nil
	}
	// Pods are walked first: the walk reads a pod in one pass, its kind
	// included, and gives up on another kind as soon as it reads it.
	var p quotaPod
	if walkQuotaPod(trimmed, &p) {
		if o := p.object(); o != nil {
			return o, nil
		}
	}
	// Where the walk cannot vouch for its reading, the kind is read once,
	// for the typed decodes; where neither can vouch for its reading
	// either, the general path decides (and words any error).
	if apiVersion, kind, ok := typeMeta(trimmed); ok {
		if apiVersion == "v1" && kind == "Pod" {
			if o := decodeQuotaPod(trimmed); o != nil {
				return o, nil
			}
		} else if o := decodeTypedAs(trimmed, apiVersion, kind); o != nil {
			return o, nil
		}
	}
	return decodeGeneral(trimmed)
}

// DecodeForQuotaFrom reads the value at the scanner's cursor, moving past
// it, and returns its bytes. When the value is a pod the walk of
// DecodeForQuota can read, it is read in the same pass and o is what
// DecodeForQuota(raw) returns; otherwise o is nil and the caller decodes
// raw itself (DecodeForQuota then also words any error). A reader of a
// document holding an object, such as an AdmissionReview, so reads the
// object once instead of skipping it and decoding it after.
func DecodeForQuotaFrom(s *jsonscan.Scanner) (o *Object, raw []byte, ok bool) {
	m := s.Mark()
	var p quotaPod
	if !walkQuotaPodFrom(s, &p) {
		s.Back(m)
		raw, ok = s.Raw()
		return nil, raw, ok
	}
	raw = s.Since(m)
	if len(raw) > SizeMax || raw[0] != '{' {
		return nil, raw, true
	}
	// DecodeForQuota's own order: the compact decoder first, then the
	// walk.
	if o = decodeFast(raw); o != nil {
		return o, raw, true
	}
	return p.object(), raw, true
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
	// header holds apiVersion, kind and the identity in metadata.
	header
	Spec   quotaPodSpec   `json:"spec"`
	Status quotaPodStatus `json:"status"`
}

// quotaPodSpec is the part of a pod's spec quota reads.
type quotaPodSpec struct {
	InitContainers        []quotaContainer             `json:"initContainers"`
	Containers            []quotaContainer             `json:"containers"`
	ActiveDeadlineSeconds *int64                       `json:"activeDeadlineSeconds"`
	Affinity              *corev1.Affinity             `json:"affinity"`
	PriorityClassName     string                       `json:"priorityClassName"`
	Priority              *int32                       `json:"priority"`
	PreemptionPolicy      *corev1.PreemptionPolicy     `json:"preemptionPolicy"`
	RuntimeClassName      *string                      `json:"runtimeClassName"`
	Overhead              corev1.ResourceList          `json:"overhead"`
	Resources             *corev1.ResourceRequirements `json:"resources"`
	// NodeSelector is read for the RuntimeClass admission plugin, which
	// refuses a pod whose selector contradicts its class's.
	NodeSelector map[string]string `json:"nodeSelector"`
	// ServiceAccountName and its deprecated alias are read for the
	// ServiceAccount admission plugin's look-up.
	ServiceAccountName       string `json:"serviceAccountName"`
	DeprecatedServiceAccount string `json:"serviceAccount"`
}

// quotaPodStatus is the part of a pod's status quota reads.
type quotaPodStatus struct {
	Phase                 corev1.PodPhase        `json:"phase"`
	QOSClass              corev1.PodQOSClass     `json:"qosClass"`
	Conditions            []corev1.PodCondition  `json:"conditions"`
	InitContainerStatuses []quotaContainerStatus `json:"initContainerStatuses"`
	ContainerStatuses     []quotaContainerStatus `json:"containerStatuses"`
}

// decodeQuotaPod is DecodeForQuota, through encoding/json, for an object
// typeMeta read as a core v1 pod that walkQuotaPod cannot vouch for
// reading. It returns nil when the decode fails (the general path then
// words the error).
func decodeQuotaPod(trimmed []byte) *Object {
	var p quotaPod
	if err := json.Unmarshal(trimmed, &p); err != nil {
		return nil
	}
	return p.object()
}

// object is the pod p holds, or nil when p is not a core v1 pod or lacks
// its identity.
func (p *quotaPod) object() *Object {
	if p.APIVersion != "v1" || p.Kind != "Pod" {
		return nil
	}
	o, _, _, err := identify(&p.header)
	if err != nil {
		return nil
	}
	m := &p.Metadata
	pod := &corev1.Pod{
		TypeMeta: metav1.TypeMeta{APIVersion: p.APIVersion, Kind: p.Kind},
		ObjectMeta: metav1.ObjectMeta{
			Name: m.Name, GenerateName: m.GenerateName, Namespace: m.Namespace, UID: types.UID(m.UID),
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
			PreemptionPolicy:      p.Spec.PreemptionPolicy,
			RuntimeClassName:      p.Spec.RuntimeClassName,
			Overhead:              p.Spec.Overhead,
			Resources:             p.Spec.Resources,
			NodeSelector:          p.Spec.NodeSelector,

			ServiceAccountName:       p.Spec.ServiceAccountName,
			DeprecatedServiceAccount: p.Spec.DeprecatedServiceAccount,
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

// walkQuotaPod fills p from a pod as json.Unmarshal fills it, reading the
// members quotaPod has (each value decoded on its own by encoding/json, or
// copied when it is a plain string) and skipping the rest, whose grammar
// the scanner checks. It reports false when it cannot vouch for that: b is
// not valid JSON, a key is not plain, a key is repeated or differs from a
// field's name only by case at a level it reads (encoding/json would match
// it too), or a value is not what the field takes. It also gives up, as
// soon as it reads them, on an apiVersion other than "v1" and a kind other
// than "Pod".
func walkQuotaPod(b []byte, p *quotaPod) bool {
	s := jsonscan.New(b)
	return walkQuotaPodFrom(s, p) && s.AtEnd()
}

// walkQuotaPodFrom is walkQuotaPod of the value at the scanner's cursor.
//
// The walk makes no closure per member or per element: each object's
// members are named in a list, and read by a switch on the key.
func walkQuotaPodFrom(s *jsonscan.Scanner, p *quotaPod) bool {
	return walkMembers(s, podKeys, func(key string) bool {
		switch key {
		case "apiVersion":
			return readExactly(s, "v1", &p.APIVersion)
		case "kind":
			return readExactly(s, "Pod", &p.Kind)
		case "metadata":
			return walkMetadata(s, &p.Metadata)
		case "spec":
			return walkSpec(s, &p.Spec)
		default:
			return walkStatus(s, &p.Status)
		}
	})
}

// The members the walk reads, by object.
var (
	podKeys      = []string{"apiVersion", "kind", "metadata", "spec", "status"}
	metadataKeys = []string{"name", "generateName", "namespace", "uid", "resourceVersion",
		"deletionTimestamp", "deletionGracePeriodSeconds"}
	specKeys = []string{"initContainers", "containers", "activeDeadlineSeconds", "affinity",
		"priorityClassName", "priority", "preemptionPolicy", "runtimeClassName", "overhead",
		"serviceAccountName", "serviceAccount", "nodeSelector", "resources"}
	statusKeys          = []string{"phase", "qosClass", "conditions", "initContainerStatuses", "containerStatuses"}
	containerKeys       = []string{"name", "resources", "restartPolicy"}
	containerStatusKeys = []string{"name", "allocatedResources", "resources"}
	resourcesKeys       = []string{"limits", "requests", "claims"}
)

func walkMetadata(s *jsonscan.Scanner, m *headerMeta) bool {
	return walkMembers(s, metadataKeys, func(key string) bool {
		switch key {
		case "name":
			return readPlainString(s, &m.Name)
		case "generateName":
			return readPlainString(s, &m.GenerateName)
		case "namespace":
			return readPlainString(s, &m.Namespace)
		case "uid":
			return readPlainString(s, &m.UID)
		case "resourceVersion":
			return readPlainString(s, &m.ResourceVersion)
		case "deletionTimestamp":
			return readTime(s, &m.DeletionTimestamp)
		default:
			return readInt(s, &m.DeletionGracePeriodSeconds, 64)
		}
	})
}

func walkSpec(s *jsonscan.Scanner, sp *quotaPodSpec) bool {
	return walkMembers(s, specKeys, func(key string) bool {
		switch key {
		case "initContainers":
			return readArray(s, &sp.InitContainers, walkContainer)
		case "containers":
			return readArray(s, &sp.Containers, walkContainer)
		case "activeDeadlineSeconds":
			return readInt(s, &sp.ActiveDeadlineSeconds, 64)
		case "affinity":
			return readValue(s, &sp.Affinity)
		case "priorityClassName":
			return readPlainString(s, &sp.PriorityClassName)
		case "priority":
			return readInt(s, &sp.Priority, 32)
		case "preemptionPolicy":
			return readPreemptionPolicy(s, &sp.PreemptionPolicy)
		case "runtimeClassName":
			return readValue(s, &sp.RuntimeClassName)
		case "overhead":
			return readResourceList(s, &sp.Overhead)
		case "serviceAccountName":
			return readAccountName(s, &sp.ServiceAccountName)
		case "serviceAccount":
			return readAccountName(s, &sp.DeprecatedServiceAccount)
		case "nodeSelector":
			return readValue(s, &sp.NodeSelector)
		default:
			return readValue(s, &sp.Resources)
		}
	})
}

func walkStatus(s *jsonscan.Scanner, st *quotaPodStatus) bool {
	return walkMembers(s, statusKeys, func(key string) bool {
		switch key {
		case "phase":
			return readPlainString(s, &st.Phase)
		case "qosClass":
			return readPlainString(s, &st.QOSClass)
		case "conditions":
			return readValue(s, &st.Conditions)
		case "initContainerStatuses":
			return readArray(s, &st.InitContainerStatuses, walkContainerStatus)
		default:
			return readArray(s, &st.ContainerStatuses, walkContainerStatus)
		}
	})
}

func walkContainer(s *jsonscan.Scanner, c *quotaContainer) bool {
	return walkMembers(s, containerKeys, func(key string) bool {
		switch key {
		case "name":
			return readPlainString(s, &c.Name)
		case "resources":
			return walkResources(s, &c.Resources)
		default:
			return readValue(s, &c.RestartPolicy)
		}
	})
}

func walkContainerStatus(s *jsonscan.Scanner, c *quotaContainerStatus) bool {
	return walkMembers(s, containerStatusKeys, func(key string) bool {
		switch key {
		case "name":
			return readPlainString(s, &c.Name)
		case "allocatedResources":
			return readResourceList(s, &c.AllocatedResources)
		default:
			return readValue(s, &c.Resources)
		}
	})
}

// walkResources walks a container's resources into dst.
func walkResources(s *jsonscan.Scanner, dst *corev1.ResourceRequirements) bool {
	return walkMembers(s, resourcesKeys, func(key string) bool {
		switch key {
		case "limits":
			return readResourceList(s, &dst.Limits)
		case "requests":
			return readResourceList(s, &dst.Requests)
		default:
			return readValue(s, &dst.Claims)
		}
	})
}

// walkMembers walks the object at the cursor, reading the members named
// by keys (at most 64) with read, given the key, and skipping the others
// (encoding/json ignores unknown members). A null leaves everything as it
// is, as encoding/json does. It gives up on a key that is not plain, a
// key read twice, and a key that differs from one of keys only by case
// (encoding/json would match it).
func walkMembers(s *jsonscan.Scanner, keys []string, read func(key string) bool) bool {
	if s.Null() {
		return true
	}
	var seen uint64
	return s.Members(func(key []byte, plain bool) bool {
		if !plain {
			return false
		}
		for i, k := range keys {
			if string(key) == k {
				if seen&(1<<i) != 0 {
					return false
				}
				seen |= 1 << i
				return read(k)
			}
			if jsonscan.EqualFoldASCII(key, k) {
				return false
			}
		}
		return s.Skip()
	})
}

// readExactly reads a plain string into dst, giving up unless it is want.
func readExactly(s *jsonscan.Scanner, want string, dst *string) bool {
	v, ok := s.String()
	if !ok || string(v) != want {
		return false
	}
	*dst = want
	return true
}

// readPlainString copies a string of printable ASCII without escapes into
// dst, and decodes any other value with encoding/json.
func readPlainString[T ~string](s *jsonscan.Scanner, dst *T) bool {
	m := s.Mark()
	if v, ok := s.String(); ok {
		*dst = T(v)
		return true
	}
	s.Back(m)
	raw, ok := s.Raw()
	return ok && json.Unmarshal(raw, dst) == nil
}

// defaultAccountName is the service account the API server gives a pod
// that names none, so the one nearly every stored pod names.
const defaultAccountName = "default"

// readAccountName is readPlainString for a service account's name, which
// reads the default account's without copying its string.
func readAccountName(s *jsonscan.Scanner, dst *string) bool {
	m := s.Mark()
	if v, ok := s.String(); ok {
		if string(v) == defaultAccountName {
			*dst = defaultAccountName
		} else {
			*dst = string(v)
		}
		return true
	}
	s.Back(m)
	return readPlainString(s, dst)
}

// preemptionPolicies are the values a pod's preemptionPolicy takes,
// which readPreemptionPolicy reads without copying the string.
var preemptionPolicies = [...]corev1.PreemptionPolicy{corev1.PreemptLowerPriority, corev1.PreemptNever}

// readPreemptionPolicy reads a preemption policy or null into dst as
// encoding/json does, a known value without copying its string (every
// pod the API server stores has one) and anything else through
// encoding/json.
func readPreemptionPolicy(s *jsonscan.Scanner, dst **corev1.PreemptionPolicy) bool {
	if s.Null() {
		*dst = nil
		return true
	}
	m := s.Mark()
	if v, ok := s.String(); ok {
		for _, p := range preemptionPolicies {
			if string(v) == string(p) {
				*dst = &p
				return true
			}
		}
	}
	s.Back(m)
	return readValue(s, dst)
}

// readInt reads an integer or null into dst, an integer of the given size
// in bits, as encoding/json reads a number into a pointer to it, parsing a
// plain integer itself and leaving anything else (a fraction, an
// exponent, a value out of range) to encoding/json.
func readInt[T int32 | int64](s *jsonscan.Scanner, dst **T, bits int) bool {
	if s.Null() {
		*dst = nil
		return true
	}
	raw, ok := s.Raw()
	if !ok {
		return false
	}
	if n, err := strconv.ParseInt(string(raw), 10, bits); err == nil && isInteger(raw) {
		v := T(n)
		*dst = &v
		return true
	}
	return json.Unmarshal(raw, dst) == nil
}

// isInteger reports whether raw is a JSON integer: an optional minus and
// digits only.
func isInteger(raw []byte) bool {
	digits := raw
	if len(digits) > 0 && digits[0] == '-' {
		digits = digits[1:]
	}
	if len(digits) == 0 {
		return false
	}
	for _, c := range digits {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}

// readValue decodes the value at the cursor into dst with encoding/json.
func readValue[T any](s *jsonscan.Scanner, dst *T) bool {
	raw, ok := s.Raw()
	return ok && json.Unmarshal(raw, dst) == nil
}

// readTime reads a time as encoding/json reads a *metav1.Time: a plain
// string is parsed as RFC 3339 (a malformed one gives up, for encoding/json
// to report), anything else goes to encoding/json.
func readTime(s *jsonscan.Scanner, dst **metav1.Time) bool {
	m := s.Mark()
	if v, ok := s.String(); ok {
		t, err := time.Parse(time.RFC3339, string(v))
		if err != nil {
			return false
		}
		*dst = &metav1.Time{Time: t.Local()}
		return true
	}
	s.Back(m)
	return readValue(s, dst)
}

// readArray reads an array of objects into dst, each element walked by
// walk; a null array sets dst to nil, as encoding/json does, and a null
// element gives up.
func readArray[T any](s *jsonscan.Scanner, dst *[]T, walk func(*jsonscan.Scanner, *T) bool) bool {
	if s.Null() {
		*dst = nil
		return true
	}
	out := []T{}
	ok := s.Elements(func() bool {
		var e T
		out = append(out, e)
		return !s.Null() && walk(s, &out[len(out)-1])
	})
	*dst = out
	return ok
}

// readResourceList reads a resource list whose names and quantities are
// plain strings into dst as encoding/json does: a null sets dst to nil,
// an object adds to dst (made when nil), a repeated name keeps the last
// quantity, and each quantity is parsed as resource.Quantity's
// UnmarshalJSON parses it. It gives up on anything else.
func readResourceList(s *jsonscan.Scanner, dst *corev1.ResourceList) bool {
	if s.Null() {
		*dst = nil
		return true
	}
	if *dst == nil {
		*dst = corev1.ResourceList{}
	}
	return s.Members(func(key []byte, plain bool) bool {
		if !plain {
			return false
		}
		v, ok := s.String()
		if !ok {
			return false
		}
		q, err := resource.ParseQuantity(strings.TrimSpace(string(v)))
		if err != nil {
			return false
		}
		(*dst)[resourceName(key)] = q
		return true
	})
}
