package object

import (
	"encoding/json"
	"reflect"
	"testing"

	gojson "github.com/goccy/go-json"
	corev1 "k8s.io/api/core/v1"
	nodev1 "k8s.io/api/node/v1"
	resourcev1 "k8s.io/api/resource/v1"
	resourcev1beta1 "k8s.io/api/resource/v1beta1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	storagev1 "k8s.io/api/storage/v1"
)

// agrees decodes raw into a T with both decoders and fails t unless they
// accept and refuse alike and, accepting, give equal values.
func agrees[T any](t *testing.T, raw []byte) {
	t.Helper()
	var want, got T
	werr := json.Unmarshal(raw, &want)
	gerr := gojson.Unmarshal(raw, &got)
	if (werr == nil) != (gerr == nil) {
		t.Fatalf("%T from %q: encoding/json says %v, go-json says %v", want, raw, werr, gerr)
	}
	if werr == nil && !reflect.DeepEqual(want, got) {
		t.Fatalf("%T from %q: the decoders disagree\nencoding/json: %#v\ngo-json:       %#v", want, raw, want, got)
	}
}

// FuzzUnmarshalAgrees holds unmarshal's premise: github.com/goccy/go-json
// reads every type Decode keeps exactly as encoding/json does. The first
// byte picks the type; the seeds are the inputs where decoders are known
// to part ways (repeated keys, keys in other case, bad UTF-8, trailing
// data, numbers where strings belong).
func FuzzUnmarshalAgrees(f *testing.F) {
	for _, in := range []string{
		churnPod, benchPod,
		`{"apiVersion":"v1","kind":"PersistentVolumeClaim","metadata":{"name":"a"},"spec":{"resources":{"requests":{"storage":"1Gi"}}}}`,
		`{"metadata":{"name":"a"}} x`,
		`{"metadata":{"name":"a"}} {}`,
		`{"spec":{"containers":[{"resources":{"requests":{"cpu":"1"}}}]},"spec":{"nodeName":"n"}}`,
		"{\"metadata\":{\"name\":\"a\xff\xfe\"}}",
		`{"Metadata":{"NAME":"x"}}`,
		`{"metadata":null,"spec":{"containers":null}}`,
		`{"spec":{"containers":[{"resources":{"requests":{"cpu":1.5}}}]}}`,
		`{"spec":{"containers":[{"resources":{"requests":{"cpu":"1x"}}}]}}`,
		`{"spec":{"activeDeadlineSeconds":1e3}}`,
		`{"spec":{"activeDeadlineSeconds":"5"}}`,
		`{"metadata":{"creationTimestamp":"bad"}}`,
		`{"metadata":{"name":"\u00e9\ud800"}}`,
		`{"metadata":{"labels":{"a":"1","a":"2"}}}`,
		`{"spec":{"overhead":{"cpu":"1"},"overhead":{"memory":"1"}}}`,
		`{"status":{"phase":"Running","phase":null}}`,
		`{"spec":{"containers":[{"ports":[{"containerPort":99999999999}]}]}}`,
	} {
		for kind := range byte(11) {
			f.Add(kind, []byte(in))
		}
	}
	f.Fuzz(func(t *testing.T, kind byte, raw []byte) {
		switch kind % 11 {
		case 0:
			agrees[corev1.Pod](t, raw)
		case 1:
			agrees[corev1.PersistentVolumeClaim](t, raw)
		case 2:
			agrees[corev1.Service](t, raw)
		case 3:
			agrees[corev1.ResourceQuota](t, raw)
		case 4:
			agrees[corev1.LimitRange](t, raw)
		case 5:
			agrees[nodev1.RuntimeClass](t, raw)
		case 6:
			agrees[schedulingv1.PriorityClass](t, raw)
		case 7:
			agrees[storagev1.StorageClass](t, raw)
		case 8:
			agrees[resourcev1.ResourceClaim](t, raw)
		case 9:
			agrees[resourcev1beta1.ResourceClaim](t, raw)
		default:
			agrees[header](t, raw)
		}
	})
}
