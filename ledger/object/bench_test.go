package object

import "testing"

// benchPod is a pod as an API server stores it, with the fields quota
// ignores (labels, image, status churn) that Trimmed drops.
const benchPod = `{"apiVersion":"v1","kind":"Pod","metadata":{"name":"pod-1","namespace":"team-1","uid":"u-1","resourceVersion":"42",
 "labels":{"app":"web","tier":"front"},"creationTimestamp":"2026-01-01T00:00:00Z"},
 "spec":{"nodeName":"n1","initContainers":[{"name":"init","image":"busybox","resources":{"requests":{"cpu":"500m","memory":"256Mi"},"limits":{"cpu":"1","memory":"512Mi"}}}],
 "containers":[{"name":"app","image":"img","resources":{"requests":{"cpu":"250m","memory":"512Mi"},"limits":{"cpu":"500m","memory":"1Gi"}}},
  {"name":"proxy","image":"envoy","resources":{"requests":{"cpu":"100m","memory":"64Mi"},"limits":{"cpu":"200m","memory":"128Mi"}}}]},
 "status":{"phase":"Running","qosClass":"Burstable","podIP":"10.0.0.1","startTime":"2026-01-01T00:00:01Z",
  "conditions":[{"type":"Ready","status":"True"}],
  "containerStatuses":[{"name":"app","ready":true,"restartCount":0,"image":"img","imageID":"x","state":{"running":{}}}]}}`

var benchObject *Object

// BenchmarkDecode measures Decode on a full pod and on its trimmed form,
// which is what the projector reads from the stream.
func BenchmarkDecode(b *testing.B) {
	o, err := Decode([]byte(benchPod))
	if err != nil {
		b.Fatal(err)
	}
	trimmed, err := o.Trimmed()
	if err != nil {
		b.Fatal(err)
	}
	for _, bench := range []struct {
		name string
		raw  []byte
	}{{"pod", []byte(benchPod)}, {"trimmed-pod", trimmed}} {
		b.Run(bench.name, func(b *testing.B) {
			b.ReportAllocs()
			b.SetBytes(int64(len(bench.raw)))
			for b.Loop() {
				if benchObject, err = Decode(bench.raw); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkTrimmed encodes a decoded pod's trimmed form.
func BenchmarkTrimmed(b *testing.B) {
	o, err := Decode([]byte(benchPod))
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := o.Trimmed(); err != nil {
			b.Fatal(err)
		}
	}
}
