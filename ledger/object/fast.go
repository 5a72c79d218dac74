package object

import (
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// decodeFast reads, in one pass and without reflection, the objects that
// Trimmed writes for pods and for the kinds the ledger keeps no value of:
// compact JSON, apiVersion and kind first, the keys Trimmed writes and
// plain strings. It returns nil for anything else (whitespace, escapes,
// non-ASCII text, null, an unknown or repeated key, a value Kubernetes
// would refuse, an object Decode would reject), and Decode then reads the
// input the general way. For every input it accepts it builds the Object
// encoding/json would: TestDecodeFastMatchesGeneral and FuzzDecodeFast hold
// it to that.
func decodeFast(b []byte) *Object {
	d := fastDecoder{b: b}
	o := d.object()
	if !d.ok || d.i != len(d.b) {
		return nil
	}
	return o
}

// fastDecoder is a cursor over compact JSON. ok turns false at the first
// byte outside the subset decodeFast reads, and stays false.
type fastDecoder struct {
	b  []byte
	i  int
	ok bool
}

func (d *fastDecoder) fail() { d.ok = false }

// next reports whether the next byte is c and consumes it if so.
func (d *fastDecoder) next(c byte) bool {
	if d.ok && d.i < len(d.b) && d.b[d.i] == c {
		d.i++
		return true
	}
	return false
}

func (d *fastDecoder) expect(c byte) {
	if !d.next(c) {
		d.fail()
	}
}

// rawString returns the bytes of a JSON string that holds only printable
// ASCII other than the quote and the backslash, which encoding/json would
// copy as they are.
func (d *fastDecoder) rawString() []byte {
	if !d.next('"') {
		d.fail()
		return nil
	}
	start := d.i
	for d.i < len(d.b) {
		c := d.b[d.i]
		if c == '"' {
			d.i++
			return d.b[start : d.i-1]
		}
		if c < 0x20 || c >= 0x7f || c == '\\' {
			break
		}
		d.i++
	}
	d.fail()
	return nil
}

func (d *fastDecoder) str() string { return string(d.rawString()) }

// resourceName reads a resource name, without allocating for the names
// every pod uses.
func (d *fastDecoder) resourceName() corev1.ResourceName {
	return resourceName(d.rawString())
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

// int reads a JSON integer that strconv.ParseInt accepts at bitSize, as
// encoding/json reads one into an integer field.
func (d *fastDecoder) int(bitSize int) int64 {
	if !d.ok {
		return 0
	}
	start := d.i
	if d.i < len(d.b) && d.b[d.i] == '-' {
		d.i++
	}
	digits := d.i
	for d.i < len(d.b) && '0' <= d.b[d.i] && d.b[d.i] <= '9' {
		d.i++
	}
	// JSON allows no leading zero; a fraction or exponent would make
	// encoding/json refuse the integer field.
	if d.i == digits || d.b[digits] == '0' && d.i-digits > 1 {
		d.fail()
		return 0
	}
	if d.i < len(d.b) && (d.b[d.i] == '.' || d.b[d.i] == 'e' || d.b[d.i] == 'E') {
		d.fail()
		return 0
	}
	v, err := strconv.ParseInt(string(d.b[start:d.i]), 10, bitSize)
	if err != nil {
		d.fail()
		return 0
	}
	return v
}

// fields calls field for each key of a JSON object, which must read the
// key's value. A key may appear once; seen holds one bit per key index
// that field reports (-1 for a key it does not know, which ends decoding).
func (d *fastDecoder) fields(field func(key []byte) int) {
	d.expect('{')
	if d.next('}') {
		return
	}
	var seen uint64
	for d.ok {
		key := d.rawString()
		d.expect(':')
		if !d.ok {
			return
		}
		n := field(key)
		if n < 0 || seen&(1<<n) != 0 {
			d.fail()
			return
		}
		seen |= 1 << n
		if d.next('}') {
			return
		}
		d.expect(',')
	}
}

// elements calls element for each element of a JSON array.
func (d *fastDecoder) elements(element func()) {
	d.expect('[')
	if d.next(']') {
		return
	}
	for d.ok {
		element()
		if d.next(']') {
			return
		}
		d.expect(',')
	}
}

// quantity reads a quantity as resource.Quantity.UnmarshalJSON does.
func (d *fastDecoder) quantity() resource.Quantity {
	s := d.rawString()
	if !d.ok {
		return resource.Quantity{}
	}
	if q, ok := parsedQuantities.Load().m[string(s)]; ok {
		return q
	}
	text := strings.TrimSpace(string(s))
	q, err := resource.ParseQuantity(text)
	if err != nil {
		d.fail()
		return q
	}
	if quantityCacheable(text) {
		parsedQuantities.store(text, q)
	}
	return q
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
	m := make(map[string]resource.Quantity, len(old)+1)
	for k, v := range old {
		m[k] = v
	}
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

// resourceList reads a ResourceList.
func (d *fastDecoder) resourceList() corev1.ResourceList {
	return readMap(d, d.resourceName, d.quantity)
}

func (d *fastDecoder) stringMap() map[string]string {
	return readMap(d, d.str, d.str)
}

// readMap reads a JSON object into a map, keys and values read by key and
// value; nil when the input is not what the fast path reads.
// encoding/json keeps the last of repeated keys; they are refused here
// instead.
func readMap[K comparable, V any](d *fastDecoder, key func() K, value func() V) map[K]V {
	m := map[K]V{}
	d.expect('{')
	if d.next('}') {
		return m
	}
	for d.ok {
		k := key()
		d.expect(':')
		if _, repeated := m[k]; repeated {
			d.fail()
		}
		v := value()
		if !d.ok {
			return nil
		}
		m[k] = v
		if d.next('}') {
			return m
		}
		d.expect(',')
	}
	return nil
}

// time reads a metav1.Time as its UnmarshalJSON does: RFC 3339, in the
// local zone.
func (d *fastDecoder) time() *metav1.Time {
	s := d.str()
	if !d.ok {
		return nil
	}
	t, err := time.Parse(time.RFC3339, s)
	if err != nil {
		d.fail()
		return nil
	}
	return &metav1.Time{Time: t.Local()}
}

func (d *fastDecoder) requirements(r *corev1.ResourceRequirements) {
	d.fields(func(key []byte) int {
		switch string(key) {
		case "requests":
			r.Requests = d.resourceList()
			return 0
		case "limits":
			r.Limits = d.resourceList()
			return 1
		}
		return -1
	})
}

// elementCount returns the number of elements of the JSON array that
// starts at the cursor, for sizing the slice it fills; it does not move the
// cursor. The count is a capacity only: for input outside the subset it may
// be wrong, and the reader then fails or grows the slice.
func (d *fastDecoder) elementCount() int {
	depth, n, inString := 0, 0, false
	for i := d.i; i < len(d.b); i++ {
		c := d.b[i]
		if inString {
			inString = c != '"'
			continue
		}
		switch c {
		case '"':
			inString = true
		case '[', '{':
			depth++
			if depth == 2 && n == 0 {
				n = 1
			}
		case ']', '}':
			depth--
			if depth == 0 {
				return n
			}
		case ',':
			if depth == 1 {
				n++
			}
		}
	}
	return n
}

func (d *fastDecoder) containers() []corev1.Container {
	// A pod's containers are large structs: size the slice once rather
	// than growing it element by element.
	cs := make([]corev1.Container, 0, d.elementCount())
	d.elements(func() {
		cs = append(cs, corev1.Container{})
		c := &cs[len(cs)-1]
		d.fields(func(key []byte) int {
			switch string(key) {
			case "name":
				c.Name = d.str()
				return 0
			case "resources":
				d.requirements(&c.Resources)
				return 1
			case "restartPolicy":
				p := corev1.ContainerRestartPolicy(d.str())
				c.RestartPolicy = &p
				return 2
			}
			return -1
		})
	})
	return cs
}

func (d *fastDecoder) podSpec(s *corev1.PodSpec) {
	d.fields(func(key []byte) int {
		switch string(key) {
		case "initContainers":
			s.InitContainers = d.containers()
			return 0
		case "containers":
			s.Containers = d.containers()
			return 1
		case "activeDeadlineSeconds":
			v := d.int(64)
			s.ActiveDeadlineSeconds = &v
			return 2
		case "priorityClassName":
			s.PriorityClassName = d.str()
			return 3
		case "runtimeClassName":
			v := d.str()
			s.RuntimeClassName = &v
			return 4
		case "overhead":
			s.Overhead = d.resourceList()
			return 5
		case "resources":
			s.Resources = &corev1.ResourceRequirements{}
			d.requirements(s.Resources)
			return 6
		}
		// Affinity and anything else take the general path.
		return -1
	})
}

func (d *fastDecoder) containerStatuses() []corev1.ContainerStatus {
	ss := []corev1.ContainerStatus{}
	d.elements(func() {
		ss = append(ss, corev1.ContainerStatus{})
		s := &ss[len(ss)-1]
		d.fields(func(key []byte) int {
			switch string(key) {
			case "name":
				s.Name = d.str()
				return 0
			case "allocatedResources":
				s.AllocatedResources = d.resourceList()
				return 1
			case "resources":
				s.Resources = &corev1.ResourceRequirements{}
				d.requirements(s.Resources)
				return 2
			}
			return -1
		})
	})
	return ss
}

func (d *fastDecoder) podStatus(s *corev1.PodStatus) {
	d.fields(func(key []byte) int {
		switch string(key) {
		case "phase":
			s.Phase = corev1.PodPhase(d.str())
			return 0
		case "qosClass":
			s.QOSClass = corev1.PodQOSClass(d.str())
			return 1
		case "conditions":
			s.Conditions = []corev1.PodCondition{}
			d.elements(func() {
				s.Conditions = append(s.Conditions, corev1.PodCondition{})
				c := &s.Conditions[len(s.Conditions)-1]
				d.fields(func(key []byte) int {
					switch string(key) {
					case "type":
						c.Type = corev1.PodConditionType(d.str())
						return 0
					case "status":
						c.Status = corev1.ConditionStatus(d.str())
						return 1
					case "reason":
						c.Reason = d.str()
						return 2
					}
					return -1
				})
			})
			return 2
		case "initContainerStatuses":
			s.InitContainerStatuses = d.containerStatuses()
			return 3
		case "containerStatuses":
			s.ContainerStatuses = d.containerStatuses()
			return 4
		}
		return -1
	})
}

// metadata reads the identity Trimmed keeps (and the resourceVersion an
// untrimmed object carries) into h and, for a pod, into its ObjectMeta.
func (d *fastDecoder) metadata(h *header, m *metav1.ObjectMeta) {
	d.fields(func(key []byte) int {
		switch string(key) {
		case "name":
			h.Metadata.Name = d.str()
			return 0
		case "generateName":
			h.Metadata.GenerateName = d.str()
			return 1
		case "namespace":
			h.Metadata.Namespace = d.str()
			return 2
		case "uid":
			h.Metadata.UID = d.str()
			return 3
		case "resourceVersion":
			h.Metadata.ResourceVersion = d.str()
			return 4
		case "deletionTimestamp":
			h.Metadata.DeletionTimestamp = d.time()
			return 5
		case "deletionGracePeriodSeconds":
			v := d.int(64)
			h.Metadata.DeletionGracePeriodSeconds = &v
			return 6
		case "annotations":
			a := d.stringMap()
			if m != nil {
				m.Annotations = a
			}
			return 7
		}
		return -1
	})
	if m != nil && d.ok {
		podMeta(m, h)
	}
}

// podMeta sets a pod's metadata from the header read into h.
func podMeta(m *metav1.ObjectMeta, h *header) {
	m.Name = h.Metadata.Name
	m.GenerateName = h.Metadata.GenerateName
	m.Namespace = h.Metadata.Namespace
	m.UID = types.UID(h.Metadata.UID)
	m.ResourceVersion = h.Metadata.ResourceVersion
	if t := h.Metadata.DeletionTimestamp; t != nil {
		// encoding/json gives the header and the pod a time each.
		c := *t
		m.DeletionTimestamp = &c
	}
	if v := h.Metadata.DeletionGracePeriodSeconds; v != nil {
		c := *v
		m.DeletionGracePeriodSeconds = &c
	}
}

// object reads a whole object: apiVersion and kind, then metadata, then,
// for a pod, spec and status.
func (d *fastDecoder) object() *Object {
	d.ok = true
	h, pod := d.typeMeta()
	if !d.ok {
		return nil
	}
	var m *metav1.ObjectMeta
	if pod != nil {
		m = &pod.ObjectMeta
	}
	// The keys after kind, each at most once: metadata, then a pod's spec
	// and status.
	seen := [3]bool{}
	for d.ok && d.next(',') {
		key := d.rawString()
		d.expect(':')
		if !d.ok {
			return nil
		}
		switch {
		case string(key) == "metadata" && !seen[0]:
			seen[0] = true
			d.metadata(&h, m)
		case string(key) == "spec" && pod != nil && !seen[1]:
			seen[1] = true
			d.podSpec(&pod.Spec)
		case string(key) == "status" && pod != nil && !seen[2]:
			seen[2] = true
			d.podStatus(&pod.Status)
		default:
			d.fail()
		}
	}
	d.expect('}')
	if !d.ok {
		return nil
	}
	o, info, known, err := identify(&h)
	if err != nil {
		d.fail()
		return nil
	}
	if pod == nil {
		if known && (info.newValue != nil || info.decode != nil) {
			// A kind whose value the ledger keeps, other than a pod.
			d.fail()
			return nil
		}
		return o
	}
	o.Value = pod
	o.syncMeta()
	return o
}

// typeMeta reads the object's opening, apiVersion then kind, and returns
// them with the pod to fill when the kind is a core v1 pod.
func (d *fastDecoder) typeMeta() (h header, pod *corev1.Pod) {
	d.expect('{')
	if !d.ok || !d.key("apiVersion") {
		d.fail()
		return h, nil
	}
	h.APIVersion = d.str()
	d.expect(',')
	if !d.ok || !d.key("kind") {
		d.fail()
		return h, nil
	}
	h.Kind = d.str()
	if h.Kind != "Pod" {
		return h, nil
	}
	if h.APIVersion != "v1" {
		d.fail()
		return h, nil
	}
	return h, &corev1.Pod{TypeMeta: metav1.TypeMeta{APIVersion: h.APIVersion, Kind: h.Kind}}
}

// key reads a JSON string equal to want and the colon after it.
func (d *fastDecoder) key(want string) bool {
	k := d.rawString()
	if !d.ok || string(k) != want {
		return false
	}
	d.expect(':')
	return d.ok
}
