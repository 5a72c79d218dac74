package object

import (
	"encoding/json"
	"strconv"
	"strings"

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
func walkQuotaPodFrom(s *jsonscan.Scanner, p *quotaPod) bool {
	m := &p.Metadata
	return walkObject(s, []member{
		{"apiVersion", exactly(s, "v1", &p.APIVersion)},
		{"kind", exactly(s, "Pod", &p.Kind)},
		{"metadata", func() bool {
			return walkObject(s, []member{
				{"name", plainString(s, &m.Name)},
				{"generateName", plainString(s, &m.GenerateName)},
				{"namespace", plainString(s, &m.Namespace)},
				{"uid", plainString(s, &m.UID)},
				{"resourceVersion", plainString(s, &m.ResourceVersion)},
				{"deletionTimestamp", decodeValue(s, &m.DeletionTimestamp)},
				{"deletionGracePeriodSeconds", intPointer(s, &m.DeletionGracePeriodSeconds, 64)},
			})
		}},
		{"spec", func() bool {
			sp := &p.Spec
			return walkObject(s, []member{
				{"initContainers", walkContainers(s, &sp.InitContainers)},
				{"containers", walkContainers(s, &sp.Containers)},
				{"activeDeadlineSeconds", intPointer(s, &sp.ActiveDeadlineSeconds, 64)},
				{"affinity", decodeValue(s, &sp.Affinity)},
				{"priorityClassName", plainString(s, &sp.PriorityClassName)},
				{"priority", intPointer(s, &sp.Priority, 32)},
				{"runtimeClassName", decodeValue(s, &sp.RuntimeClassName)},
				{"overhead", walkResourceList(s, &sp.Overhead)},
				{"resources", decodeValue(s, &sp.Resources)},
			})
		}},
		{"status", func() bool {
			st := &p.Status
			return walkObject(s, []member{
				{"phase", plainString(s, &st.Phase)},
				{"qosClass", plainString(s, &st.QOSClass)},
				{"conditions", decodeValue(s, &st.Conditions)},
				{"initContainerStatuses", walkContainerStatuses(s, &st.InitContainerStatuses)},
				{"containerStatuses", walkContainerStatuses(s, &st.ContainerStatuses)},
			})
		}},
	})
}

// member is a member walkObject reads: its exact key, and how to read its
// value from the scanner.
type member struct {
	key  string
	read func() bool
}

// walkObject walks the object at the cursor, reading the members it is
// given and skipping the others (encoding/json ignores unknown members).
// A null leaves everything as it is, as encoding/json does.
func walkObject(s *jsonscan.Scanner, members []member) bool {
	if s.Null() {
		return true
	}
	var seen uint64
	return s.Members(func(key []byte, plain bool) bool {
		if !plain {
			return false
		}
		for i, m := range members {
			if string(key) == m.key {
				if seen&(1<<i) != 0 {
					return false
				}
				seen |= 1 << i
				return m.read()
			}
			if jsonscan.EqualFoldASCII(key, m.key) {
				return false
			}
		}
		return s.Skip()
	})
}

// exactly reads a plain string into dst, giving up unless it is want.
func exactly(s *jsonscan.Scanner, want string, dst *string) func() bool {
	return func() bool {
		v, ok := s.String()
		if !ok || string(v) != want {
			return false
		}
		*dst = want
		return true
	}
}

// plainString copies a string of printable ASCII without escapes into
// dst, and decodes any other value with encoding/json.
func plainString[T ~string](s *jsonscan.Scanner, dst *T) func() bool {
	return func() bool {
		m := s.Mark()
		if v, ok := s.String(); ok {
			*dst = T(v)
			return true
		}
		s.Back(m)
		raw, ok := s.Raw()
		return ok && json.Unmarshal(raw, dst) == nil
	}
}

// intPointer reads an integer or null into dst, an integer of the given
// size in bits, as encoding/json reads a number into a pointer to it,
// parsing a plain integer itself and leaving anything else (a fraction,
// an exponent, a value out of range) to encoding/json.
func intPointer[T int32 | int64](s *jsonscan.Scanner, dst **T, bits int) func() bool {
	return func() bool {
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

// decodeValue decodes the value at the cursor into dst with encoding/json.
func decodeValue[T any](s *jsonscan.Scanner, dst *T) func() bool {
	return func() bool {
		raw, ok := s.Raw()
		return ok && json.Unmarshal(raw, dst) == nil
	}
}

// walkArray walks an array of objects into dst, each element's members
// given by members; a null array sets dst to nil, as encoding/json does.
func walkArray[T any](s *jsonscan.Scanner, dst *[]T, members func(*T) []member) func() bool {
	return func() bool {
		if s.Null() {
			*dst = nil
			return true
		}
		out := []T{}
		ok := s.Elements(func() bool {
			var e T
			if s.Null() || !walkObject(s, members(&e)) {
				return false
			}
			out = append(out, e)
			return true
		})
		*dst = out
		return ok
	}
}

func walkContainers(s *jsonscan.Scanner, dst *[]quotaContainer) func() bool {
	return walkArray(s, dst, func(c *quotaContainer) []member {
		return []member{
			{"name", plainString(s, &c.Name)},
			{"resources", walkResources(s, &c.Resources)},
			{"restartPolicy", decodeValue(s, &c.RestartPolicy)},
		}
	})
}

func walkContainerStatuses(s *jsonscan.Scanner, dst *[]quotaContainerStatus) func() bool {
	return walkArray(s, dst, func(c *quotaContainerStatus) []member {
		return []member{
			{"name", plainString(s, &c.Name)},
			{"allocatedResources", walkResourceList(s, &c.AllocatedResources)},
			{"resources", decodeValue(s, &c.Resources)},
		}
	})
}

// walkResources walks a container's resources into dst.
func walkResources(s *jsonscan.Scanner, dst *corev1.ResourceRequirements) func() bool {
	return func() bool {
		return walkObject(s, []member{
			{"limits", walkResourceList(s, &dst.Limits)},
			{"requests", walkResourceList(s, &dst.Requests)},
			{"claims", decodeValue(s, &dst.Claims)},
		})
	}
}

// walkResourceList reads a resource list whose names and quantities are
// plain strings into dst as encoding/json does: a null sets dst to nil,
// an object adds to dst (made when nil), a repeated name keeps the last
// quantity, and each quantity is parsed as resource.Quantity's
// UnmarshalJSON parses it. It gives up on anything else.
func walkResourceList(s *jsonscan.Scanner, dst *corev1.ResourceList) func() bool {
	return func() bool {
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
			(*dst)[corev1.ResourceName(key)] = q
			return true
		})
	}
}
