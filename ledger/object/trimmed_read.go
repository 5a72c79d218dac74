package object

import (
	"maps"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/quotaledger/quota/ledger/jsonscan"
)

// decodeTrimmed reads, in one pass and without reflection, what Trimmed
// writes for pods and for the kinds the ledger keeps no value of:
// apiVersion and kind first, then only the members Trimmed writes, each
// once, with plain strings and integers. It returns nil for anything else,
// which Decode then reads into the typed value. What it accepts it reads
// as the typed decode would (TestDecodeTrimmedMatchesTyped,
// FuzzDecodeTrimmed).
func decodeTrimmed(b []byte) *Object {
	s := jsonscan.New(b)
	var h header
	var pod *corev1.Pod
	var meta *metav1.ObjectMeta
	var metadata, spec, status bool
	n := 0
	walked := s.Members(func(key []byte, plain bool) bool {
		n++
		switch {
		case !plain:
			return false
		case n == 1:
			return string(key) == "apiVersion" && jsonscan.StringTo(s, &h.APIVersion)
		case n == 2:
			if string(key) != "kind" || !jsonscan.StringTo(s, &h.Kind) {
				return false
			}
			var ok bool
			if pod, ok = trimmedKind(h.APIVersion, h.Kind); pod != nil {
				meta = &pod.ObjectMeta
			} else {
				meta = &metav1.ObjectMeta{}
			}
			return ok
		case string(key) == "metadata" && !metadata:
			metadata = true
			return readMetadata(s, meta)
		case string(key) == "spec" && pod != nil && !spec:
			spec = true
			return readPodSpec(s, &pod.Spec)
		case string(key) == "status" && pod != nil && !status:
			status = true
			return readPodStatus(s, &pod.Status)
		}
		return false
	})
	if !walked || n < 2 || !s.AtEnd() {
		return nil
	}
	h.Metadata = metaOf(meta)
	o, _, err := identify(&h)
	if err != nil {
		return nil
	}
	if pod != nil {
		o.Value = pod
		o.syncMeta()
	}
	return o
}

// trimmedKind reports whether decodeTrimmed reads the kind, and returns
// the pod to fill when it is a core v1 pod.
func trimmedKind(apiVersion, kind string) (*corev1.Pod, bool) {
	if kind == "Pod" {
		if apiVersion != "v1" {
			return nil, false
		}
		return &corev1.Pod{TypeMeta: metav1.TypeMeta{APIVersion: apiVersion, Kind: kind}}, true
	}
	group := ""
	if g, _, ok := strings.Cut(apiVersion, "/"); ok {
		group = g
	}
	return nil, knownKinds[groupKind{group, kind}].decode == nil
}

// elements reads the array at the cursor into a slice, each element read
// by read into its place. The slice is made to size at once: a pod's
// containers are large structs.
func elements[T any](s *jsonscan.Scanner, dst *[]T, read func(*T) bool) bool {
	out := make([]T, 0, s.Len())
	ok := s.Elements(func() bool {
		var e T
		out = append(out, e)
		return read(&out[len(out)-1])
	})
	*dst = out
	return ok
}

var metadataKeys = []string{"name", "generateName", "namespace", "uid", "resourceVersion",
	"deletionTimestamp", "deletionGracePeriodSeconds"}

func readMetadata(s *jsonscan.Scanner, m *metav1.ObjectMeta) bool {
	return s.Fields(metadataKeys, func(i int) bool {
		switch i {
		case 0:
			return jsonscan.StringTo(s, &m.Name)
		case 1:
			return jsonscan.StringTo(s, &m.GenerateName)
		case 2:
			return jsonscan.StringTo(s, &m.Namespace)
		case 3:
			return jsonscan.StringTo(s, &m.UID)
		case 4:
			return jsonscan.StringTo(s, &m.ResourceVersion)
		case 5:
			return readTime(s, &m.DeletionTimestamp)
		default:
			return readInt64(s, &m.DeletionGracePeriodSeconds)
		}
	})
}

var podSpecKeys = []string{"initContainers", "containers", "activeDeadlineSeconds", "priorityClassName",
	"runtimeClassName", "overhead", "resources"}

func readPodSpec(s *jsonscan.Scanner, sp *corev1.PodSpec) bool {
	return s.Fields(podSpecKeys, func(i int) bool {
		switch i {
		case 0:
			return elements(s, &sp.InitContainers, func(c *corev1.Container) bool { return readContainer(s, c) })
		case 1:
			return elements(s, &sp.Containers, func(c *corev1.Container) bool { return readContainer(s, c) })
		case 2:
			return readInt64(s, &sp.ActiveDeadlineSeconds)
		case 3:
			return jsonscan.StringTo(s, &sp.PriorityClassName)
		case 4:
			sp.RuntimeClassName = new(string)
			return jsonscan.StringTo(s, sp.RuntimeClassName)
		case 5:
			return readList(s, &sp.Overhead)
		default:
			sp.Resources = &corev1.ResourceRequirements{}
			return readRequirements(s, sp.Resources)
		}
	})
}

var containerKeys = []string{"name", "resources", "restartPolicy"}

func readContainer(s *jsonscan.Scanner, c *corev1.Container) bool {
	return s.Fields(containerKeys, func(i int) bool {
		switch i {
		case 0:
			return jsonscan.StringTo(s, &c.Name)
		case 1:
			return readRequirements(s, &c.Resources)
		default:
			c.RestartPolicy = new(corev1.ContainerRestartPolicy)
			return jsonscan.StringTo(s, c.RestartPolicy)
		}
	})
}

var requirementsKeys = []string{"requests", "limits"}

func readRequirements(s *jsonscan.Scanner, r *corev1.ResourceRequirements) bool {
	return s.Fields(requirementsKeys, func(i int) bool {
		if i == 0 {
			return readList(s, &r.Requests)
		}
		return readList(s, &r.Limits)
	})
}

var podStatusKeys = []string{"phase", "qosClass", "conditions", "initContainerStatuses", "containerStatuses"}

func readPodStatus(s *jsonscan.Scanner, st *corev1.PodStatus) bool {
	return s.Fields(podStatusKeys, func(i int) bool {
		switch i {
		case 0:
			return jsonscan.StringTo(s, &st.Phase)
		case 1:
			return jsonscan.StringTo(s, &st.QOSClass)
		case 2:
			return elements(s, &st.Conditions, func(c *corev1.PodCondition) bool { return readCondition(s, c) })
		case 3:
			return elements(s, &st.InitContainerStatuses, func(c *corev1.ContainerStatus) bool { return readContainerStatus(s, c) })
		default:
			return elements(s, &st.ContainerStatuses, func(c *corev1.ContainerStatus) bool { return readContainerStatus(s, c) })
		}
	})
}

var conditionKeys = []string{"type", "status", "reason"}

func readCondition(s *jsonscan.Scanner, c *corev1.PodCondition) bool {
	return s.Fields(conditionKeys, func(i int) bool {
		switch i {
		case 0:
			return jsonscan.StringTo(s, &c.Type)
		case 1:
			return jsonscan.StringTo(s, &c.Status)
		default:
			return jsonscan.StringTo(s, &c.Reason)
		}
	})
}

var containerStatusKeys = []string{"name", "allocatedResources", "resources"}

func readContainerStatus(s *jsonscan.Scanner, c *corev1.ContainerStatus) bool {
	return s.Fields(containerStatusKeys, func(i int) bool {
		switch i {
		case 0:
			return jsonscan.StringTo(s, &c.Name)
		case 1:
			return readList(s, &c.AllocatedResources)
		default:
			c.Resources = &corev1.ResourceRequirements{}
			return readRequirements(s, c.Resources)
		}
	})
}

// readInt64 reads a JSON integer as encoding/json reads a number into an
// *int64.
func readInt64(s *jsonscan.Scanner, dst **int64) bool {
	v, ok := s.Int()
	if ok {
		*dst = &v
	}
	return ok
}

// readTime reads a metav1.Time as its UnmarshalJSON does: RFC 3339, in
// the local zone.
func readTime(s *jsonscan.Scanner, dst **metav1.Time) bool {
	v, ok := s.String()
	if !ok {
		return false
	}
	t, err := time.Parse(time.RFC3339, string(v))
	if err != nil {
		return false
	}
	*dst = &metav1.Time{Time: t.Local()}
	return true
}

// readList reads a ResourceList of plain names and quantities. A repeated
// name (the list does not grow), which encoding/json would let the last
// of win, gives up.
func readList(s *jsonscan.Scanner, dst *corev1.ResourceList) bool {
	l := corev1.ResourceList{}
	*dst = l
	return s.Members(func(key []byte, plain bool) bool {
		q, ok := readQuantity(s)
		n := len(l)
		l[resourceName(key)] = q
		return ok && plain && len(l) > n
	})
}

// resourceName is the resource named b: one of the names every pod uses,
// without an allocation, or a copy of b.
func resourceName(b []byte) corev1.ResourceName {
	switch string(b) {
	case "cpu":
		return corev1.ResourceCPU
	case "memory":
		return corev1.ResourceMemory
	case "ephemeral-storage":
		return corev1.ResourceEphemeralStorage
	case "storage":
		return corev1.ResourceStorage
	}
	return corev1.ResourceName(b)
}

// readQuantity reads a quantity as resource.Quantity.UnmarshalJSON does,
// from a plain string.
func readQuantity(s *jsonscan.Scanner) (resource.Quantity, bool) {
	v, ok := s.String()
	if !ok {
		return resource.Quantity{}, false
	}
	if q, ok := parsedQuantities.Load().m[string(v)]; ok {
		return q, true
	}
	text := strings.TrimSpace(string(v))
	q, err := resource.ParseQuantity(text)
	if err != nil {
		return q, false
	}
	if quantityCacheable(text) {
		parsedQuantities.store(text, q)
	}
	return q, true
}

// quantityCacheEntriesMax bounds the quantities kept parsed. Objects use few
// distinct texts ("100m", "512Mi"); past the bound new ones are parsed each
// time.
const quantityCacheEntriesMax = 1024

// quantityCache maps a quantity's text to what resource.ParseQuantity
// returns for it. Readers load the map without a lock; a writer replaces it
// with a copy, which the bound keeps cheap.
type quantityCache struct {
	mu sync.Mutex
	atomic.Pointer[quantityMap]
}

type quantityMap struct{ m map[string]resource.Quantity }

var parsedQuantities = func() *quantityCache {
	c := &quantityCache{}
	c.Store(&quantityMap{m: map[string]resource.Quantity{}})
	return c
}()

func (c *quantityCache) store(text string, q resource.Quantity) {
	c.mu.Lock()
	defer c.mu.Unlock()
	old := c.Load().m
	if _, ok := old[text]; ok || len(old) >= quantityCacheEntriesMax {
		return
	}
	m := maps.Clone(old)
	m[text] = q
	c.Store(&quantityMap{m: m})
}

// quantityCacheable reports whether resource.ParseQuantity surely takes its
// int64 path for text, so that the Quantity it returns holds no pointer
// (an inf.Dec, which Kubernetes' arithmetic changes in place) and copies of
// it can be handed out: up to 12 digits without a leading zero, and an SI
// suffix no larger than G, or a binary one within the digits Kubernetes'
// int64 path takes for it (Ki 11, Mi 8, Gi 5).
func quantityCacheable(text string) bool {
	n := 0
	for n < len(text) && '0' <= text[n] && text[n] <= '9' {
		n++
	}
	if n == 0 || n > 12 || text[0] == '0' && text != "0" {
		return false
	}
	switch text[n:] {
	case "", "m", "k", "M", "G":
		return true
	case "Ki":
		return n <= 11
	case "Mi":
		return n <= 8
	case "Gi":
		return n <= 5
	}
	return false
}
