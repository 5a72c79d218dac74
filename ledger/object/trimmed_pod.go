package object

import (
	"slices"
	"strconv"

	corev1 "k8s.io/api/core/v1"

	"github.com/quotaledger/quota/ledger/jsonscan"
)

// appendTrimmedPod appends t, a trimmed pod, to b as json.Marshal encodes
// it, without reflection: the objects of admission and ingest are mostly
// pods, and encoding/json took most of the time of trimming one. It
// reports false, leaving the encoding to encoding/json, for anything
// outside the shapes it writes: another kind, affinity, a string that
// encoding/json would escape (see jsonscan.Verbatim). TestTrimmedPodIsJSONMarshal
// and FuzzDecode compare it with json.Marshal.
func appendTrimmedPod(b []byte, t *trimmedObject) ([]byte, bool) {
	spec, ok := t.Spec.(*trimmedPodSpec)
	if !ok || spec == nil || spec.Affinity != nil || t.Handler != "" || t.Overhead != nil || t.Value != nil ||
		t.GlobalDefault || t.Provisioner != "" || t.Metadata.Annotations != nil || t.Metadata.CreationTimestamp != nil {
		return nil, false
	}
	w := jsonWriter{b: b, ok: true}
	w.raw(`{"apiVersion":`)
	w.str(t.APIVersion)
	w.raw(`,"kind":`)
	w.str(t.Kind)
	w.podMeta(&t.Metadata)
	w.podSpec(spec)
	switch status := t.Status.(type) {
	case nil:
	case *trimmedPodStatus:
		w.podStatus(status)
	default:
		return nil, false
	}
	w.raw("}")
	return w.b, w.ok
}

func (w *jsonWriter) podMeta(m *trimmedMeta) {
	w.raw(`,"metadata":{`)
	w.field("name", m.Name)
	w.field("generateName", m.GenerateName)
	w.field("namespace", m.Namespace)
	w.field("uid", m.UID)
	if m.DeletionTimestamp != nil {
		v, err := m.DeletionTimestamp.MarshalJSON()
		if err != nil {
			w.ok = false
			return
		}
		w.key("deletionTimestamp")
		w.raw(string(v))
	}
	w.int64Field("deletionGracePeriodSeconds", m.DeletionGracePeriodSeconds)
	w.close('}')
}

func (w *jsonWriter) podSpec(spec *trimmedPodSpec) {
	w.raw(`,"spec":{`)
	if len(spec.InitContainers) > 0 {
		w.key("initContainers")
		w.containers(spec.InitContainers)
	}
	w.key("containers")
	if spec.Containers == nil {
		w.raw("null")
	} else {
		w.containers(spec.Containers)
	}
	w.int64Field("activeDeadlineSeconds", spec.ActiveDeadlineSeconds)
	w.field("priorityClassName", spec.PriorityClassName)
	if spec.RuntimeClassName != nil {
		w.key("runtimeClassName")
		w.str(*spec.RuntimeClassName)
	}
	w.list("overhead", spec.Overhead)
	w.resources("resources", spec.Resources)
	w.close('}')
}

func (w *jsonWriter) podStatus(status *trimmedPodStatus) {
	if status == nil {
		w.raw(`,"status":null`)
		return
	}
	w.raw(`,"status":{`)
	w.field("phase", string(status.Phase))
	w.field("qosClass", string(status.QOSClass))
	if len(status.Conditions) > 0 {
		w.key("conditions")
		writeArray(w, status.Conditions, func(c *trimmedCondition) {
			w.raw(`{"type":`)
			w.str(string(c.Type))
			w.field("status", string(c.Status))
			w.field("reason", c.Reason)
			w.raw("}")
		})
	}
	w.containerStatuses("initContainerStatuses", status.InitContainerStatuses)
	w.containerStatuses("containerStatuses", status.ContainerStatuses)
	w.close('}')
}

// jsonWriter appends JSON to b; ok turns false at the first value it cannot
// write as encoding/json would.
type jsonWriter struct {
	b  []byte
	ok bool
}

func (w *jsonWriter) raw(s string) { w.b = append(w.b, s...) }

// str writes a string that needs no escaping, and gives up on any other.
func (w *jsonWriter) str(s string) {
	if !jsonscan.Verbatim(s) {
		w.ok = false
		return
	}
	w.b = append(w.b, '"')
	w.b = append(w.b, s...)
	w.b = append(w.b, '"')
}

// key writes a member's key, after a comma unless it is the object's
// first.
func (w *jsonWriter) key(k string) {
	if c := w.b[len(w.b)-1]; c != '{' {
		w.b = append(w.b, ',')
	}
	w.str(k)
	w.b = append(w.b, ':')
}

// close ends an object opened with a raw '{'.
func (w *jsonWriter) close(c byte) { w.b = append(w.b, c) }

// field writes a string member with omitempty: nothing when empty.
func (w *jsonWriter) field(k, v string) {
	if v != "" {
		w.key(k)
		w.str(v)
	}
}

func (w *jsonWriter) int64Field(k string, v *int64) {
	if v != nil {
		w.key(k)
		w.b = strconv.AppendInt(w.b, *v, 10)
	}
}

// list writes a resource list member with omitempty: its names sorted, as
// encoding/json writes map keys, and each quantity as its MarshalJSON.
func (w *jsonWriter) list(k string, l corev1.ResourceList) {
	if len(l) == 0 {
		return
	}
	w.key(k)
	w.listValue(l)
}

func (w *jsonWriter) listValue(l corev1.ResourceList) {
	var buf [8]corev1.ResourceName
	names := buf[:0]
	for n := range l {
		names = append(names, n)
	}
	slices.Sort(names)
	w.b = append(w.b, '{')
	for _, n := range names {
		w.key(string(n))
		q := l[n]
		v, err := q.MarshalJSON()
		if err != nil || !quotedVerbatim(v) {
			w.ok = false
			return
		}
		w.b = append(w.b, v...)
	}
	w.b = append(w.b, '}')
}

// resources writes a *trimmedResources member with omitempty.
func (w *jsonWriter) resources(k string, r *trimmedResources) {
	if r == nil {
		return
	}
	w.key(k)
	w.resourcesValue(r)
}

func (w *jsonWriter) resourcesValue(r *trimmedResources) {
	w.b = append(w.b, '{')
	w.list("requests", r.Requests)
	w.list("limits", r.Limits)
	w.b = append(w.b, '}')
}

func (w *jsonWriter) containers(cs []trimmedContainer) {
	writeArray(w, cs, func(c *trimmedContainer) {
		w.raw(`{"name":`)
		w.str(c.Name)
		w.resources("resources", c.Resources)
		if c.RestartPolicy != nil {
			w.key("restartPolicy")
			w.str(string(*c.RestartPolicy))
		}
		w.raw("}")
	})
}

// containerStatuses writes a []trimmedContainerStatus member with
// omitempty.
func (w *jsonWriter) containerStatuses(k string, ss []trimmedContainerStatus) {
	if len(ss) == 0 {
		return
	}
	w.key(k)
	writeArray(w, ss, func(s *trimmedContainerStatus) {
		w.raw(`{"name":`)
		w.str(s.Name)
		w.list("allocatedResources", s.AllocatedResources)
		w.resources("resources", s.Resources)
		w.raw("}")
	})
}

// writeArray writes items as a JSON array, each by write.
func writeArray[T any](w *jsonWriter, items []T, write func(*T)) {
	w.raw("[")
	for i := range items {
		if i > 0 {
			w.raw(",")
		}
		write(&items[i])
	}
	w.raw("]")
}

// quotedVerbatim reports whether v is a quoted string json.Marshal would
// keep as it is.
func quotedVerbatim(v []byte) bool {
	return len(v) >= 2 && v[0] == '"' && v[len(v)-1] == '"' && jsonscan.Verbatim(string(v[1:len(v)-1]))
}
