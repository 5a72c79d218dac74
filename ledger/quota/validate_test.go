package quota

import (
	"errors"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/quotaledger/quota/ledger/object"
)

// TestLimitRangeRefusals holds Validate to LimitRanger's rules and words:
// a container's and a pod's minimum, maximum and limit-to-request ratio,
// after Default has filled in the LimitRange's defaults, and a claim's
// storage bounds, on create and on update.
func TestLimitRangeRefusals(t *testing.T) {
	q := resource.MustParse
	lr := &corev1.LimitRange{Spec: corev1.LimitRangeSpec{Limits: []corev1.LimitRangeItem{
		{
			Type:                 corev1.LimitTypeContainer,
			Min:                  corev1.ResourceList{"cpu": q("100m"), "memory": q("64Mi")},
			Max:                  corev1.ResourceList{"cpu": q("2"), "memory": q("1Gi")},
			MaxLimitRequestRatio: corev1.ResourceList{"cpu": q("4")},
			Default:              corev1.ResourceList{"cpu": q("500m"), "memory": q("256Mi")},
			DefaultRequest:       corev1.ResourceList{"cpu": q("250m"), "memory": q("128Mi")},
		},
		{Type: corev1.LimitTypePod, Max: corev1.ResourceList{"cpu": q("3")}},
		{
			Type: corev1.LimitTypePersistentVolumeClaim,
			Min:  corev1.ResourceList{"storage": q("100Mi")},
			Max:  corev1.ResourceList{"storage": q("1Gi")},
		},
	}}}
	env := Environment{LimitRanges: []*corev1.LimitRange{lr}}
	claim := func(size string) string {
		return `{"apiVersion":"v1","kind":"PersistentVolumeClaim","metadata":{"name":"data","namespace":"team"},"spec":{"resources":{"requests":{"storage":"` + size + `"}}}}`
	}
	for _, tc := range []struct {
		name, obj string
		// old, when set, makes the request an update of it.
		old  string
		want string // "" when allowed
	}{
		{name: "defaults fit", obj: pod("p", `{"containers":[{"name":"a"},{"name":"b"}]}`)},
		{name: "container over max", obj: pod("p", `{"containers":[`+ctr("a", "", `"cpu":"3"`)+`]}`),
			want: "maximum cpu usage per Container is 2, but limit is 3"},
		{name: "init container over max", obj: pod("p", `{"initContainers":[`+ctr("init", "", `"memory":"2Gi"`)+`],"containers":[{"name":"a"}]}`),
			want: "maximum memory usage per Container is 1Gi, but limit is 2Gi"},
		{name: "request under min", obj: pod("p", `{"containers":[`+ctr("a", `"cpu":"50m"`, `"cpu":"100m"`)+`]}`),
			want: "minimum cpu usage per Container is 100m, but request is 50m"},
		{name: "ratio over max", obj: pod("p", `{"containers":[`+ctr("a", `"cpu":"100m"`, `"cpu":"1"`)+`]}`),
			want: "cpu max limit to request ratio per Container is 4, but provided ratio is 10.000000"},
		{name: "pod over max", obj: pod("p", `{"containers":[`+ctr("a", "", `"cpu":"2"`)+`,`+ctr("b", "", `"cpu":"2"`)+`]}`),
			want: "maximum cpu usage per Pod is 3, but limit is 4"},
		{name: "pod counts an init container at its peak", obj: pod("p", `{"initContainers":[`+ctr("init", "", `"cpu":"2"`)+`],"containers":[`+ctr("a", "", `"cpu":"1500m"`)+`]}`)},
		{name: "several violations in brackets", obj: pod("p", `{"containers":[`+ctr("a", "", `"cpu":"3","memory":"2Gi"`)+`]}`),
			want: "[maximum cpu usage per Container is 2, but limit is 3, maximum memory usage per Container is 1Gi, but limit is 2Gi]"},
		{name: "claim over max", obj: claim("2.5Gi"),
			want: "maximum storage usage per PersistentVolumeClaim is 1Gi, but request is 2560Mi"},
		{name: "claim under min", obj: claim("50Mi"),
			want: "minimum storage usage per PersistentVolumeClaim is 100Mi, but request is 50Mi"},
		{name: "claim within", obj: claim("1Gi")},
		{name: "claim grown past max", obj: claim("2Gi"), old: claim("1Gi"),
			want: "maximum storage usage per PersistentVolumeClaim is 1Gi, but request is 2Gi"},
		{name: "pod updates are not checked", obj: pod("p", `{"containers":[`+ctr("a", "", `"cpu":"3"`)+`]}`),
			old: pod("p", `{"containers":[`+ctr("a", "", `"cpu":"3"`)+`]}`)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o := decode(t, tc.obj)
			var old *object.Object
			if tc.old != "" {
				old = decode(t, tc.old)
			} else if err := Default(o, env); err != nil {
				t.Fatal(err)
			}
			err := Validate(o, old, env)
			if tc.want == "" {
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
				return
			}
			if err == nil || err.Error() != tc.want || !errors.Is(err, ErrLimitRange) {
				t.Fatalf("got %v, want %q", err, tc.want)
			}
		})
	}

	// A claim being deleted is not checked.
	old := decode(t, claim("1Gi"))
	now := time.Now()
	old.DeletionTimestamp = &now
	if err := Validate(decode(t, claim("2Gi")), old, env); err != nil {
		t.Errorf("update of a claim being deleted: %v", err)
	}
}

// TestRequestsAboveLimitsAreInvalid holds Validate to the API server's
// check of a new pod's requests against its limits, and of its active
// deadline, which refuse with a 422 before any plugin's validation: the
// LimitRange's default limit under a stated request is the usual way to
// meet the first.
func TestRequestsAboveLimitsAreInvalid(t *testing.T) {
	q := resource.MustParse
	lr := &corev1.LimitRange{Spec: corev1.LimitRangeSpec{Limits: []corev1.LimitRangeItem{{
		Type:    corev1.LimitTypeContainer,
		Default: corev1.ResourceList{"cpu": q("500m")},
		Max:     corev1.ResourceList{"cpu": q("1")},
	}}}}
	env := Environment{LimitRanges: []*corev1.LimitRange{lr}}
	for _, tc := range []struct{ name, spec, want string }{
		{"request over the default limit", `{"containers":[` + ctr("a", `"cpu":"700m"`, "") + `]}`,
			`Pod "p" is invalid: spec.containers[0].resources.requests: Invalid value: "700m": must be less than or equal to cpu limit of 500m`},
		{"init container over its own limit", `{"initContainers":[` + ctr("i", `"cpu":"300m"`, `"cpu":"200m"`) + `],"containers":[{"name":"a"}]}`,
			`Pod "p" is invalid: spec.initContainers[0].resources.requests: Invalid value: "300m": must be less than or equal to cpu limit of 200m`},
		{"extended resource request other than its limit", `{"containers":[` + ctr("a", `"example.com/gpu":"1"`, `"example.com/gpu":"2"`) + `]}`,
			`Pod "p" is invalid: spec.containers[0].resources.requests: Invalid value: "1": must be equal to example.com/gpu limit of 2`},
		{"extended resource without a limit", `{"containers":[` + ctr("a", `"example.com/gpu":"1"`, "") + `]}`,
			`Pod "p" is invalid: spec.containers[0].resources.limits: Required value: Limit must be set for non overcommitable resources`},
		{"two containers wrong", `{"containers":[` + ctr("a", `"cpu":"600m"`, "") + `,` + ctr("b", `"cpu":"900m"`, "") + `]}`,
			`Pod "p" is invalid: [spec.containers[0].resources.requests: Invalid value: "600m": must be less than or equal to cpu limit of 500m, spec.containers[1].resources.requests: Invalid value: "900m": must be less than or equal to cpu limit of 500m]`},
		{"within", `{"containers":[` + ctr("a", `"cpu":"400m"`, "") + `]}`, ""},
		{"an active deadline of zero", `{"activeDeadlineSeconds":0,"containers":[{"name":"a"}]}`,
			`Pod "p" is invalid: spec.activeDeadlineSeconds: Invalid value: 0: must be between 1 and 2147483647, inclusive`},
		{"a negative active deadline after a container's error", `{"activeDeadlineSeconds":-5,"containers":[` + ctr("a", `"cpu":"600m"`, "") + `]}`,
			`Pod "p" is invalid: [spec.containers[0].resources.requests: Invalid value: "600m": must be less than or equal to cpu limit of 500m, spec.activeDeadlineSeconds: Invalid value: -5: must be between 1 and 2147483647, inclusive]`},
		{"an active deadline in range", `{"activeDeadlineSeconds":3600,"containers":[{"name":"a"}]}`, ""},
		{"a fraction of an extended resource", `{"containers":[` + ctr("a", "", `"example.com/gpu":"500m"`) + `]}`,
			`Pod "p" is invalid: [spec.containers[0].resources.limits[example.com/gpu]: Invalid value: "500m": must be an integer, spec.containers[0].resources.requests[example.com/gpu]: Invalid value: "500m": must be an integer]`},
		{"huge pages not a whole number of pages", `{"containers":[` + ctr("a", "", `"hugepages-2Mi":"3Mi","memory":"1Gi"`) + `]}`,
			`Pod "p" is invalid: [spec.containers[0].resources.limits[hugepages-2Mi]: Invalid value: "3Mi": 3Mi is not positive integer multiple of hugepages-2Mi, spec.containers[0].resources.requests[hugepages-2Mi]: Invalid value: "3Mi": 3Mi is not positive integer multiple of hugepages-2Mi]`},
		{"huge pages with memory", `{"containers":[` + ctr("a", "", `"hugepages-2Mi":"4Mi","memory":"1Gi"`) + `]}`, ""},
		{"a negative request", `{"containers":[` + ctr("a", `"cpu":"-1"`, "") + `]}`,
			`Pod "p" is invalid: spec.containers[0].resources.requests[cpu]: Invalid value: "-1": must be greater than or equal to 0`},
		{"pod-level requests under what the defaulted containers request", `{"resources":{"limits":{"cpu":"600m"}},"containers":[{"name":"a"},{"name":"b"},{"name":"c"}]}`,
			`Pod "p" is invalid: spec.resources.requests[cpu]: Invalid value: "600m": must be greater than or equal to aggregate container requests of 1500m`},
		{"a container's limit over the pod's", `{"resources":{"requests":{"cpu":"500m"},"limits":{"cpu":"1"}},"containers":[` + ctr("a", `"cpu":"500m"`, `"cpu":"2"`) + `]}`,
			`Pod "p" is invalid: spec.resources.containers[0][cpu].limits: Invalid value: "2": must be less than or equal to pod limits of 1`},
		{"pod-level requests above pod-level limits", `{"resources":{"requests":{"cpu":"2"},"limits":{"cpu":"1"}},"containers":[` + ctr("a", `"cpu":"100m"`, `"cpu":"100m"`) + `]}`,
			`Pod "p" is invalid: spec.resources.requests: Invalid value: "2": must be less than or equal to cpu limit of 1`},
		{"pod-level resources that cover the containers", `{"resources":{"requests":{"cpu":"800m"},"limits":{"cpu":"1"}},"containers":[` + ctr("a", `"cpu":"300m"`, "") + `,` + ctr("b", `"cpu":"400m"`, "") + `]}`, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o := decode(t, pod("p", tc.spec))
			if err := Default(o, env); err != nil {
				t.Fatal(err)
			}
			err := Validate(o, nil, env)
			var invalid *InvalidError
			switch {
			case tc.want == "" && err != nil:
				t.Fatalf("refused: %v", err)
			case tc.want != "" && (!errors.As(err, &invalid) || err.Error() != tc.want):
				t.Fatalf("got %v, want the 422 %q", err, tc.want)
			}
		})
	}
}

// TestHugePagesAloneAreInvalid: huge pages need cpu or memory beside them,
// which a LimitRange's defaults can give (the table above has one); with
// none, the API server refuses the pod.
func TestHugePagesAloneAreInvalid(t *testing.T) {
	o := decode(t, pod("p", `{"containers":[`+ctr("a", "", `"hugepages-2Mi":"4Mi"`)+`]}`))
	if err := Default(o, Environment{}); err != nil {
		t.Fatal(err)
	}
	want := `Pod "p" is invalid: spec.containers[0].resources: Forbidden: HugePages require cpu or memory`
	var invalid *InvalidError
	if err := Validate(o, nil, Environment{}); !errors.As(err, &invalid) || err.Error() != want {
		t.Fatalf("got %v, want the 422 %q", err, want)
	}
}

// TestDefaultPodLevelHugePagesLimits: a pod that states pod-level
// resources is limited to its containers' huge pages, unless it requests
// that size itself.
func TestDefaultPodLevelHugePagesLimits(t *testing.T) {
	for _, tc := range []struct {
		name, spec string
		want       string // spec.resources.limits[hugepages-2Mi], "" for none
	}{
		{"pod-level requests only", `{"resources":{"requests":{"cpu":"1"}},"containers":[` + ctr("a", "", `"hugepages-2Mi":"4Mi","memory":"1Gi"`) + `,` + ctr("b", "", `"hugepages-2Mi":"2Mi","memory":"1Gi"`) + `]}`, "6Mi"},
		{"pod-level limits of another resource", `{"resources":{"limits":{"memory":"4Gi"}},"containers":[` + ctr("a", "", `"hugepages-2Mi":"4Mi","memory":"1Gi"`) + `]}`, "4Mi"},
		{"the pod requests that size", `{"resources":{"requests":{"hugepages-2Mi":"2Mi"}},"containers":[` + ctr("a", "", `"hugepages-2Mi":"4Mi","memory":"1Gi"`) + `]}`, ""},
		{"no pod-level resources", `{"containers":[` + ctr("a", "", `"hugepages-2Mi":"4Mi","memory":"1Gi"`) + `]}`, ""},
		{"empty pod-level resources", `{"resources":{},"containers":[` + ctr("a", "", `"hugepages-2Mi":"4Mi","memory":"1Gi"`) + `]}`, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o := decode(t, pod("p", tc.spec))
			if err := Default(o, Environment{}); err != nil {
				t.Fatal(err)
			}
			var got string
			if r := o.Value.(*corev1.Pod).Spec.Resources; r != nil {
				if v, ok := r.Limits["hugepages-2Mi"]; ok {
					got = v.String()
				}
			}
			if got != tc.want {
				t.Errorf("pod-level limit of hugepages-2Mi %q, want %q", got, tc.want)
			}
		})
	}
}
