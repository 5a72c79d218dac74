package object

import (
	"bytes"
	"encoding/json"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// checkTrimmedPod compares appendTrimmedPod with json.Marshal on the
// trimmed form of o and reports whether appendTrimmedPod wrote it.
func checkTrimmedPod(t *testing.T, o *Object) bool {
	t.Helper()
	tr, err := o.trimmed()
	if err != nil {
		return false
	}
	want, err := json.Marshal(tr)
	if err != nil {
		t.Fatal(err)
	}
	got, ok := appendTrimmedPod(nil, tr)
	if ok && !bytes.Equal(got, want) {
		t.Fatalf("appendTrimmedPod differs from json.Marshal:\n got %s\nwant %s", got, want)
	}
	return ok
}

// TestTrimmedPodIsJSONMarshal checks the hand-written encoding of trimmed
// pods byte for byte against json.Marshal: on every test input and
// recorded object, and on pods built to reach each member it writes.
func TestTrimmedPodIsJSONMarshal(t *testing.T) {
	written := 0
	raws := sampleObjects(t)
	for _, in := range append([]string{benchPod}, edgeInputs...) {
		raws = append(raws, []byte(in))
	}
	for _, raw := range raws {
		if o, err := Decode(raw); err == nil && checkTrimmedPod(t, o) {
			written++
		}
	}
	seconds := int64(30)
	deadline := int64(60)
	always := corev1.ContainerRestartPolicyAlways
	runtimeClass := "gvisor"
	at := metav1.NewTime(time.Date(2026, 11, 22, 7, 0, 0, 0, time.FixedZone("x", 3600)))
	q := resource.MustParse
	built := []*corev1.Pod{
		{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "n", UID: "u", DeletionTimestamp: &at, DeletionGracePeriodSeconds: &seconds},
			Spec: corev1.PodSpec{
				InitContainers:        []corev1.Container{{Name: "i", RestartPolicy: &always, Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{"memory": q("64Mi")}}}},
				Containers:            []corev1.Container{{Name: "c", Resources: corev1.ResourceRequirements{Limits: corev1.ResourceList{"cpu": q("1.5"), "memory": q("1e3"), "example.com/gpu": q("1")}, Requests: corev1.ResourceList{"cpu": q("250m")}}}},
				ActiveDeadlineSeconds: &deadline, PriorityClassName: "high", RuntimeClassName: &runtimeClass,
				Overhead:  corev1.ResourceList{"cpu": q("10m")},
				Resources: &corev1.ResourceRequirements{Requests: corev1.ResourceList{"cpu": q("2")}},
			},
			Status: corev1.PodStatus{Phase: corev1.PodRunning, QOSClass: corev1.PodQOSBurstable,
				Conditions:        []corev1.PodCondition{{Type: corev1.PodResizePending, Status: corev1.ConditionTrue, Reason: "Deferred"}, {Type: corev1.PodReady}},
				ContainerStatuses: []corev1.ContainerStatus{{Name: "c", AllocatedResources: corev1.ResourceList{"cpu": q("250m")}, Resources: &corev1.ResourceRequirements{Limits: corev1.ResourceList{"cpu": q("1")}}}, {Name: "bare"}},
			}},
		{ObjectMeta: metav1.ObjectMeta{GenerateName: "web-"}, Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{}}}}}},
		{ObjectMeta: metav1.ObjectMeta{Name: "empty-runtime-class"}, Spec: corev1.PodSpec{RuntimeClassName: new(string)}},
		{ObjectMeta: metav1.ObjectMeta{Name: "escaped<name>"}},
		{ObjectMeta: metav1.ObjectMeta{Name: "affinity"}, Spec: corev1.PodSpec{Affinity: &corev1.Affinity{PodAntiAffinity: &corev1.PodAntiAffinity{}}}},
	}
	// The first three are written by hand, the last two left to
	// encoding/json (an escaped name, affinity).
	for i, pod := range built {
		pod.TypeMeta = metav1.TypeMeta{APIVersion: "v1", Kind: "Pod"}
		raw, err := json.Marshal(pod)
		if err != nil {
			t.Fatal(err)
		}
		o, err := Decode(raw)
		if err != nil {
			t.Fatalf("decode %s: %v", raw, err)
		}
		ok := checkTrimmedPod(t, o)
		if ok != (i < 3) {
			t.Errorf("built pod %d (%s): written by hand %v, want %v", i, raw, ok, i < 3)
		}
		if ok {
			written++
		}
	}
	if written < 20 {
		t.Fatalf("appendTrimmedPod wrote only %d of the pods; the comparison is too weak", written)
	}
}
