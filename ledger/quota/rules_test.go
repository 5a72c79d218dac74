package quota

import (
	"encoding/json"
	"errors"
	"maps"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	nodev1 "k8s.io/api/node/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/quotaledger/quota/ledger/object"
	"github.com/quotaledger/quota/ledger/quantity"
)

var testNow = time.Date(2026, 6, 1, 12, 0, 0, 0, time.UTC)

func decode(t testing.TB, js string) *object.Object {
	t.Helper()
	o, err := object.Decode([]byte(js))
	if err != nil {
		t.Fatalf("decode %s: %v", js, err)
	}
	if o.Namespace == "" {
		o.SetNamespace("team")
	}
	return o
}

func evaluate(t testing.TB, js string) Charge {
	t.Helper()
	c, err := Evaluate(decode(t, js), testNow)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// pod builds a pod manifest around a spec (and optional status) fragment.
func pod(name, spec string, status ...string) string {
	s := `{"apiVersion":"v1","kind":"Pod","metadata":{"name":"` + name + `","namespace":"team","resourceVersion":"1"},"spec":` + spec
	if len(status) > 0 {
		s += `,"status":` + status[0]
	}
	return s + `}`
}

func ctr(name, requests, limits string) string {
	r := `{"name":"` + name + `","resources":{`
	var parts []string
	if requests != "" {
		parts = append(parts, `"requests":{`+requests+`}`)
	}
	if limits != "" {
		parts = append(parts, `"limits":{`+limits+`}`)
	}
	return r + strings.Join(parts, ",") + `}}`
}

func sidecar(name, requests string) string {
	return `{"name":"` + name + `","restartPolicy":"Always","resources":{"requests":{` + requests + `}}}`
}

func list(pairs ...string) ResourceList {
	l := ResourceList{}
	for i := 0; i < len(pairs); i += 2 {
		l[pairs[i]] = quantity.MustParse(pairs[i+1])
	}
	return l
}

func assertUsage(t *testing.T, got ResourceList, want map[string]string) {
	t.Helper()
	g := printList(got)
	if !equalStrings(g, want) {
		t.Errorf("usage:\n got %v\nwant %v", g, want)
	}
}

func TestEvaluatePodRules(t *testing.T) {
	tests := []struct {
		name string
		pod  string
		want map[string]string
	}{
		{"containers are summed",
			pod("p", `{"containers":[`+ctr("a", `"cpu":"100m","memory":"1Gi"`, `"cpu":"200m","memory":"1Gi"`)+`,`+ctr("b", `"cpu":"250m","memory":"512Mi"`, `"cpu":"1","memory":"512Mi"`)+`]}`),
			map[string]string{"count/pods": "1", "pods": "1", "cpu": "350m", "requests.cpu": "350m", "limits.cpu": "1200m", "memory": "1536Mi", "requests.memory": "1536Mi", "limits.memory": "1536Mi"}},
		{"init container larger than the sum wins",
			pod("p", `{"initContainers":[`+ctr("i", `"cpu":"2"`, "")+`],"containers":[`+ctr("a", `"cpu":"500m"`, "")+`,`+ctr("b", `"cpu":"500m"`, "")+`]}`),
			map[string]string{"count/pods": "1", "pods": "1", "cpu": "2", "requests.cpu": "2"}},
		{"sidecar adds to the sum and to later init containers",
			pod("p", `{"initContainers":[`+sidecar("s", `"cpu":"100m"`)+`,`+ctr("i", `"cpu":"1"`, "")+`],"containers":[`+ctr("a", `"cpu":"300m"`, "")+`]}`),
			map[string]string{"count/pods": "1", "pods": "1", "cpu": "1100m", "requests.cpu": "1100m"}},
		{"sidecar sum beats small init container",
			pod("p", `{"initContainers":[`+ctr("i", `"cpu":"200m"`, "")+`,`+sidecar("s", `"cpu":"100m"`)+`],"containers":[`+ctr("a", `"cpu":"300m"`, "")+`]}`),
			map[string]string{"count/pods": "1", "pods": "1", "cpu": "400m", "requests.cpu": "400m"}},
		{"overhead is added to requests and to set limits",
			pod("p", `{"overhead":{"cpu":"250m","memory":"120Mi"},"containers":[`+ctr("a", `"cpu":"1","memory":"1Gi"`, `"cpu":"2"`)+`]}`),
			map[string]string{"count/pods": "1", "pods": "1", "cpu": "1250m", "requests.cpu": "1250m", "limits.cpu": "2250m", "memory": "1144Mi", "requests.memory": "1144Mi"}},
		{"pod-level resources replace the container totals",
			pod("p", `{"resources":{"requests":{"cpu":"2"},"limits":{"cpu":"4"}},"containers":[`+ctr("a", `"cpu":"1","memory":"1Gi"`, "")+`]}`),
			map[string]string{"count/pods": "1", "pods": "1", "cpu": "2", "requests.cpu": "2", "limits.cpu": "4", "memory": "1Gi", "requests.memory": "1Gi"}},
		{"ephemeral storage is charged both ways",
			pod("p", `{"containers":[`+ctr("a", `"ephemeral-storage":"1Gi"`, `"ephemeral-storage":"2Gi"`)+`]}`),
			map[string]string{"count/pods": "1", "pods": "1", "ephemeral-storage": "1Gi", "requests.ephemeral-storage": "1Gi", "limits.ephemeral-storage": "2Gi"}},
		{"hugepages are charged bare and as requests",
			pod("p", `{"containers":[`+ctr("a", `"memory":"1Gi","hugepages-2Mi":"4Mi"`, `"memory":"1Gi","hugepages-2Mi":"4Mi"`)+`]}`),
			map[string]string{"count/pods": "1", "pods": "1", "memory": "1Gi", "requests.memory": "1Gi", "limits.memory": "1Gi", "hugepages-2Mi": "4Mi", "requests.hugepages-2Mi": "4Mi"}},
		{"extended resources are charged as requests only",
			pod("p", `{"containers":[`+ctr("a", `"nvidia.com/gpu":"2"`, `"nvidia.com/gpu":"2"`)+`]}`),
			map[string]string{"count/pods": "1", "pods": "1", "requests.nvidia.com/gpu": "2"}},
		{"succeeded pod counts only as an object",
			pod("p", `{"containers":[`+ctr("a", `"cpu":"1"`, "")+`]}`, `{"phase":"Succeeded"}`),
			map[string]string{"count/pods": "1"}},
		{"failed pod counts only as an object",
			pod("p", `{"containers":[`+ctr("a", `"cpu":"1"`, "")+`]}`, `{"phase":"Failed"}`),
			map[string]string{"count/pods": "1"}},
		{"pod stuck terminating past its grace period stops counting",
			`{"apiVersion":"v1","kind":"Pod","metadata":{"name":"p","deletionTimestamp":"2026-06-01T11:00:00Z","deletionGracePeriodSeconds":30},"spec":{"containers":[` + ctr("a", `"cpu":"1"`, "") + `]}}`,
			map[string]string{"count/pods": "1"}},
		{"pod terminating within its grace period still counts",
			`{"apiVersion":"v1","kind":"Pod","metadata":{"name":"p","deletionTimestamp":"2026-06-01T11:59:50Z","deletionGracePeriodSeconds":30},"spec":{"containers":[` + ctr("a", `"cpu":"1"`, "") + `]}}`,
			map[string]string{"count/pods": "1", "pods": "1", "cpu": "1", "requests.cpu": "1"}},
		{"in-place resize charges the larger of spec and allocated",
			pod("p", `{"containers":[`+ctr("a", `"cpu":"500m"`, "")+`]}`, `{"phase":"Running","containerStatuses":[{"name":"a","allocatedResources":{"cpu":"1"},"resources":{"requests":{"cpu":"1"}}}]}`),
			map[string]string{"count/pods": "1", "pods": "1", "cpu": "1", "requests.cpu": "1"}},
		{"infeasible resize charges what is actuated",
			pod("p", `{"containers":[`+ctr("a", `"cpu":"4"`, "")+`]}`, `{"phase":"Running","conditions":[{"type":"PodResizePending","status":"True","reason":"Infeasible"}],"containerStatuses":[{"name":"a","allocatedResources":{"cpu":"1"},"resources":{"requests":{"cpu":"1"}}}]}`),
			map[string]string{"count/pods": "1", "pods": "1", "cpu": "1", "requests.cpu": "1"}},
		{"a resize is charged container by container",
			pod("p", `{"containers":[`+ctr("a", `"cpu":"2"`, `"cpu":"2"`)+`,`+ctr("b", `"cpu":"1"`, `"cpu":"1"`)+`]}`,
				`{"phase":"Running","containerStatuses":[{"name":"a","allocatedResources":{"cpu":"1"},"resources":{"requests":{"cpu":"1"},"limits":{"cpu":"1"}}},{"name":"b","allocatedResources":{"cpu":"2"},"resources":{"requests":{"cpu":"2"},"limits":{"cpu":"2"}}}]}`),
			map[string]string{"count/pods": "1", "pods": "1", "cpu": "4", "requests.cpu": "4", "limits.cpu": "4"}},
		{"allocated resources alone do not make a resize",
			pod("p", `{"containers":[`+ctr("a", `"cpu":"1"`, "")+`]}`, `{"phase":"Running","containerStatuses":[{"name":"a","allocatedResources":{"cpu":"2"}}]}`),
			map[string]string{"count/pods": "1", "pods": "1", "cpu": "1", "requests.cpu": "1"}},
		{"an infeasible resize without actuated resources keeps the spec",
			pod("p", `{"containers":[`+ctr("a", `"cpu":"1"`, `"cpu":"1"`)+`]}`, `{"phase":"Pending","conditions":[{"type":"PodResizePending","status":"True","reason":"Infeasible"}],"containerStatuses":[{"name":"a","allocatedResources":{"cpu":"500m"}}]}`),
			map[string]string{"count/pods": "1", "pods": "1", "cpu": "1", "requests.cpu": "1", "limits.cpu": "1"}},
		{"a plain init container is charged its spec whatever its status",
			pod("p", `{"initContainers":[`+ctr("i", `"cpu":"1"`, "")+`],"containers":[`+ctr("a", `"cpu":"500m"`, "")+`]}`, `{"phase":"Running","initContainerStatuses":[{"name":"i","allocatedResources":{"cpu":"3"},"resources":{"requests":{"cpu":"3"}}}]}`),
			map[string]string{"count/pods": "1", "pods": "1", "cpu": "1", "requests.cpu": "1"}},
		{"a sidecar being resized is charged the larger",
			pod("p", `{"initContainers":[`+sidecar("s", `"cpu":"100m"`)+`],"containers":[`+ctr("a", `"cpu":"500m"`, "")+`]}`, `{"phase":"Running","initContainerStatuses":[{"name":"s","allocatedResources":{"cpu":"300m"},"resources":{"requests":{"cpu":"300m"}}}]}`),
			map[string]string{"count/pods": "1", "pods": "1", "cpu": "800m", "requests.cpu": "800m"}},
		{"a device class's extended resource is charged as requests",
			pod("p", `{"containers":[`+ctr("a", `"deviceclass.resource.kubernetes.io/gpu":"2"`, `"deviceclass.resource.kubernetes.io/gpu":"2"`)+`]}`),
			map[string]string{"count/pods": "1", "pods": "1", "requests.deviceclass.resource.kubernetes.io/gpu": "2"}},
		{"other kubernetes.io names are not charged",
			pod("p", `{"containers":[`+ctr("a", `"example.kubernetes.io/thing":"2"`, `"example.kubernetes.io/thing":"2"`)+`]}`),
			map[string]string{"count/pods": "1", "pods": "1"}},
		{"memory sums keep binary SI",
			pod("p", `{"containers":[`+ctr("a", `"memory":"1Gi"`, "")+`,`+ctr("b", `"memory":"512Mi"`, "")+`]}`),
			map[string]string{"count/pods": "1", "pods": "1", "memory": "1536Mi", "requests.memory": "1536Mi"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := evaluate(t, tt.pod)
			assertUsage(t, c.Usage, tt.want)
			assertTrimmedSameCharge(t, decode(t, tt.pod))
		})
	}
}

func TestEvaluateOtherKindsRules(t *testing.T) {
	tests := []struct {
		name, obj string
		want      map[string]string
	}{
		{"claim charges its class from spec",
			`{"apiVersion":"v1","kind":"PersistentVolumeClaim","metadata":{"name":"c"},"spec":{"storageClassName":"gold","resources":{"requests":{"storage":"10Gi"}}}}`,
			map[string]string{"persistentvolumeclaims": "1", "count/persistentvolumeclaims": "1", "requests.storage": "10Gi",
				"gold.storageclass.storage.k8s.io/persistentvolumeclaims": "1", "gold.storageclass.storage.k8s.io/requests.storage": "10Gi"}},
		{"beta annotation wins over storageClassName",
			`{"apiVersion":"v1","kind":"PersistentVolumeClaim","metadata":{"name":"c","annotations":{"volume.beta.kubernetes.io/storage-class":"bronze"}},"spec":{"storageClassName":"gold","resources":{"requests":{"storage":"1Gi"}}}}`,
			map[string]string{"persistentvolumeclaims": "1", "count/persistentvolumeclaims": "1", "requests.storage": "1Gi",
				"bronze.storageclass.storage.k8s.io/persistentvolumeclaims": "1", "bronze.storageclass.storage.k8s.io/requests.storage": "1Gi"}},
		{"claim charges the larger allocated size",
			`{"apiVersion":"v1","kind":"PersistentVolumeClaim","metadata":{"name":"c"},"spec":{"resources":{"requests":{"storage":"1Gi"}}},"status":{"allocatedResources":{"storage":"2Gi"}}}`,
			map[string]string{"persistentvolumeclaims": "1", "count/persistentvolumeclaims": "1", "requests.storage": "2Gi"}},
		{"claim storage is rounded up to whole bytes",
			`{"apiVersion":"v1","kind":"PersistentVolumeClaim","metadata":{"name":"c"},"spec":{"resources":{"requests":{"storage":"1500m"}}}}`,
			map[string]string{"persistentvolumeclaims": "1", "count/persistentvolumeclaims": "1", "requests.storage": "2"}},
		{"cluster IP service counts only as a service",
			`{"apiVersion":"v1","kind":"Service","metadata":{"name":"s"},"spec":{"ports":[{"port":80}]}}`,
			map[string]string{"services": "1", "count/services": "1", "services.loadbalancers": "0", "services.nodeports": "0"}},
		{"node port service counts a node port per port",
			`{"apiVersion":"v1","kind":"Service","metadata":{"name":"s"},"spec":{"type":"NodePort","ports":[{"port":80},{"port":81}]}}`,
			map[string]string{"services": "1", "count/services": "1", "services.loadbalancers": "0", "services.nodeports": "2"}},
		{"load balancer counts node ports by default",
			`{"apiVersion":"v1","kind":"Service","metadata":{"name":"s"},"spec":{"type":"LoadBalancer","ports":[{"port":80}]}}`,
			map[string]string{"services": "1", "count/services": "1", "services.loadbalancers": "1", "services.nodeports": "1"}},
		{"load balancer without node port allocation counts explicit node ports",
			`{"apiVersion":"v1","kind":"Service","metadata":{"name":"s"},"spec":{"type":"LoadBalancer","allocateLoadBalancerNodePorts":false,"ports":[{"port":80},{"port":81,"nodePort":30001}]}}`,
			map[string]string{"services": "1", "count/services": "1", "services.loadbalancers": "1", "services.nodeports": "1"}},
		{"secret counts under both names",
			`{"apiVersion":"v1","kind":"Secret","metadata":{"name":"s"}}`,
			map[string]string{"secrets": "1", "count/secrets": "1"}},
		{"configmap counts under both names",
			`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"s"}}`,
			map[string]string{"configmaps": "1", "count/configmaps": "1"}},
		{"job counts as count/jobs.batch",
			`{"apiVersion":"batch/v1","kind":"Job","metadata":{"name":"j"}}`,
			map[string]string{"count/jobs.batch": "1"}},
		{"custom resource counts under its guessed plural",
			`{"apiVersion":"example.com/v1","kind":"Widget","metadata":{"name":"w"}}`,
			map[string]string{"count/widgets.example.com": "1"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assertUsage(t, evaluate(t, tt.obj).Usage, tt.want)
			assertTrimmedSameCharge(t, decode(t, tt.obj))
		})
	}
}

func TestScopeFactsRules(t *testing.T) {
	tests := []struct {
		name string
		pod  string
		want ScopeFacts
	}{
		{"active deadline makes a pod terminating",
			pod("p", `{"activeDeadlineSeconds":0,"containers":[`+ctr("a", `"cpu":"1"`, "")+`]}`),
			ScopeFacts{Pod: true, Terminating: true}},
		{"no requests or limits is best effort",
			pod("p", `{"containers":[{"name":"a"}]}`),
			ScopeFacts{Pod: true, BestEffort: true}},
		{"extended resources alone are still best effort",
			pod("p", `{"containers":[`+ctr("a", `"nvidia.com/gpu":"1"`, `"nvidia.com/gpu":"1"`)+`]}`),
			ScopeFacts{Pod: true, BestEffort: true}},
		{"empty pod-level resources make a pod best effort",
			pod("p", `{"resources":{},"containers":[`+ctr("a", `"cpu":"100m"`, "")+`]}`),
			ScopeFacts{Pod: true, BestEffort: true}},
		{"pod-level huge pages alone make a pod best effort",
			pod("p", `{"resources":{"requests":{"hugepages-2Mi":"2Mi"},"limits":{"hugepages-2Mi":"2Mi"}},"containers":[`+ctr("a", `"cpu":"100m"`, "")+`]}`),
			ScopeFacts{Pod: true, BestEffort: true}},
		{"recorded QoS class is used",
			pod("p", `{"containers":[{"name":"a"}]}`, `{"qosClass":"Burstable"}`),
			ScopeFacts{Pod: true}},
		{"priority class is recorded",
			pod("p", `{"priorityClassName":"high","containers":[`+ctr("a", `"cpu":"1"`, "")+`]}`),
			ScopeFacts{Pod: true, PriorityClass: "high"}},
		{"affinity naming namespaces is cross-namespace",
			pod("p", `{"affinity":{"podAffinity":{"requiredDuringSchedulingIgnoredDuringExecution":[{"topologyKey":"k","namespaces":["other"]}]}},"containers":[`+ctr("a", `"cpu":"1"`, "")+`]}`),
			ScopeFacts{Pod: true, CrossNamespacePodAffinity: true}},
		{"anti-affinity with an empty namespace selector is cross-namespace",
			pod("p", `{"affinity":{"podAntiAffinity":{"preferredDuringSchedulingIgnoredDuringExecution":[{"weight":1,"podAffinityTerm":{"topologyKey":"k","namespaceSelector":{}}}]}},"containers":[`+ctr("a", `"cpu":"1"`, "")+`]}`),
			ScopeFacts{Pod: true, CrossNamespacePodAffinity: true}},
		{"affinity within the namespace is not cross-namespace",
			pod("p", `{"affinity":{"podAffinity":{"requiredDuringSchedulingIgnoredDuringExecution":[{"topologyKey":"k"}]}},"containers":[`+ctr("a", `"cpu":"1"`, "")+`]}`),
			ScopeFacts{Pod: true}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := evaluate(t, tt.pod).Scope
			gj, _ := json.Marshal(got)
			wj, _ := json.Marshal(tt.want)
			if string(gj) != string(wj) {
				t.Errorf("got %s, want %s", gj, wj)
			}
			assertTrimmedSameCharge(t, decode(t, tt.pod))
		})
	}
}

func TestChargeJSONRoundTripKeepsFormats(t *testing.T) {
	c := evaluate(t, pod("p", `{"priorityClassName":"high","containers":[`+ctr("a", `"cpu":"100m","memory":"0.5Ki"`, `"memory":"1.5Ki"`)+`]}`))
	b, err := json.Marshal(c)
	if err != nil {
		t.Fatal(err)
	}
	var back Charge
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}
	b2, _ := json.Marshal(back)
	if string(b) != string(b2) {
		t.Fatalf("got %s, want %s", b2, b)
	}
	for k, v := range c.Usage {
		w := back.Usage[k]
		if v.Cmp(w) != 0 || v.Format() != w.Format() || v.String() != w.String() {
			t.Errorf("%s: got %s (%v), want %s (%v)", k, w, w.Format(), v, v.Format())
		}
	}
	// A binary-SI 512 must stay binary SI: adding 512Mi prints in Mi.
	sum := back.Usage["requests.memory"].Add(quantity.MustParse("512Mi"))
	if got, want := sum.String(), c.Usage["requests.memory"].Add(quantity.MustParse("512Mi")).String(); got != want {
		t.Errorf("sum after round trip: got %s, want %s", got, want)
	}
}

func quotaFrom(t testing.TB, spec string) *Quota {
	t.Helper()
	o := decode(t, `{"apiVersion":"v1","kind":"ResourceQuota","metadata":{"name":"q","namespace":"team"},"spec":`+spec+`}`)
	q, err := FromObject(o)
	if err != nil {
		t.Fatal(err)
	}
	return q
}

func TestValidationRules(t *testing.T) {
	tests := []struct {
		name, spec, want string
	}{
		{"standard resources are valid", `{"hard":{"pods":"10","requests.cpu":"4","count/jobs.batch":"2","requests.nvidia.com/gpu":"4"}}`, ""},
		{"object counts must be integers", `{"hard":{"pods":"1500m"}}`,
			`ResourceQuota "q" is invalid: spec.hard[pods]: Invalid value: "1500m": must be an integer`},
		{"quantities must not be negative", `{"hard":{"requests.cpu":"-1"}}`,
			`ResourceQuota "q" is invalid: spec.hard[requests.cpu]: Invalid value: "-1": must be greater than or equal to 0`},
		{"unknown unqualified names are refused", `{"hard":{"gpus":"1"}}`,
			`ResourceQuota "q" is invalid: [spec.hard[gpus]: Invalid value: "gpus": must be a standard resource type or fully qualified, spec.hard[gpus]: Invalid value: "gpus": must be a standard resource for quota]`},
		{"best effort and not best effort conflict", `{"hard":{"pods":"1"},"scopes":["BestEffort","NotBestEffort"]}`,
			`ResourceQuota "q" is invalid: spec.scopes: Invalid value: ["BestEffort","NotBestEffort"]: conflicting scopes`},
		{"terminating and not terminating conflict", `{"hard":{"pods":"1"},"scopes":["Terminating","NotTerminating"]}`,
			`ResourceQuota "q" is invalid: spec.scopes: Invalid value: ["Terminating","NotTerminating"]: conflicting scopes`},
		{"unknown scope is unsupported", `{"hard":{"pods":"1"},"scopes":["Sometimes"]}`,
			`ResourceQuota "q" is invalid: spec.scopes: Invalid value: ["Sometimes"]: unsupported scope`},
		{"best effort tracks only pods", `{"hard":{"requests.cpu":"1"},"scopes":["BestEffort"]}`,
			`ResourceQuota "q" is invalid: spec.scopes: Invalid value: ["BestEffort"]: unsupported scope applied to resource`},
		{"terminating tracks only compute and pods", `{"hard":{"services":"1"},"scopes":["Terminating"]}`,
			`ResourceQuota "q" is invalid: spec.scopes: Invalid value: ["Terminating"]: unsupported scope applied to resource`},
		{"In needs values", `{"hard":{"pods":"1"},"scopeSelector":{"matchExpressions":[{"scopeName":"PriorityClass","operator":"In"}]}}`,
			"ResourceQuota \"q\" is invalid: spec.scopeSelector.matchExpressions.values: Required value: must be at least one value when `operator` is 'In' or 'NotIn' for scope selector"},
		{"Exists takes no values", `{"hard":{"pods":"1"},"scopeSelector":{"matchExpressions":[{"scopeName":"PriorityClass","operator":"Exists","values":["a"]}]}}`,
			"ResourceQuota \"q\" is invalid: spec.scopeSelector.matchExpressions.values: Invalid value: [\"a\"]: must be no value when `operator` is 'Exist' or 'DoesNotExist' for scope selector"},
		{"unknown operator is refused", `{"hard":{"pods":"1"},"scopeSelector":{"matchExpressions":[{"scopeName":"PriorityClass","operator":"Near","values":["a"]}]}}`,
			`ResourceQuota "q" is invalid: spec.scopeSelector.matchExpressions.operator: Invalid value: "Near": not a valid selector operator`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			q := quotaFrom(t, tt.spec)
			if q.Invalid != tt.want {
				t.Errorf("got  %q\nwant %q", q.Invalid, tt.want)
			}
			if tt.want != "" && (len(q.Hard) != 0 || len(q.Scopes) != 0) {
				t.Errorf("invalid quota is half applied: %+v", q)
			}
		})
	}
}

func TestMatchRules(t *testing.T) {
	bestEffortPod := pod("p", `{"containers":[{"name":"a"}]}`)
	burstablePod := pod("p", `{"containers":[`+ctr("a", `"cpu":"1"`, "")+`]}`)
	highPod := pod("p", `{"priorityClassName":"high","containers":[`+ctr("a", `"cpu":"1"`, "")+`]}`)
	secret := `{"apiVersion":"v1","kind":"Secret","metadata":{"name":"s"}}`
	tests := []struct {
		name, spec, obj string
		want            bool
	}{
		{"unscoped quota matches tracked object", `{"hard":{"pods":"1"}}`, burstablePod, true},
		{"quota must track a resource the object produces", `{"hard":{"secrets":"1"}}`, burstablePod, false},
		{"count quota matches its kind", `{"hard":{"count/secrets":"1"}}`, secret, true},
		{"scoped quota never matches non-pods", `{"hard":{"count/secrets":"1"},"scopes":["NotTerminating"]}`, secret, false},
		{"best effort scope matches best effort pod", `{"hard":{"pods":"1"},"scopes":["BestEffort"]}`, bestEffortPod, true},
		{"best effort scope skips burstable pod", `{"hard":{"pods":"1"},"scopes":["BestEffort"]}`, burstablePod, false},
		{"not best effort scope matches burstable pod", `{"hard":{"pods":"1"},"scopes":["NotBestEffort"]}`, burstablePod, true},
		{"priority In matches named class", `{"hard":{"pods":"1"},"scopeSelector":{"matchExpressions":[{"scopeName":"PriorityClass","operator":"In","values":["high"]}]}}`, highPod, true},
		{"priority In skips pod without class", `{"hard":{"pods":"1"},"scopeSelector":{"matchExpressions":[{"scopeName":"PriorityClass","operator":"In","values":["high"]}]}}`, burstablePod, false},
		{"priority NotIn matches pod without class", `{"hard":{"pods":"1"},"scopeSelector":{"matchExpressions":[{"scopeName":"PriorityClass","operator":"NotIn","values":["high"]}]}}`, burstablePod, true},
		{"priority NotIn skips named class", `{"hard":{"pods":"1"},"scopeSelector":{"matchExpressions":[{"scopeName":"PriorityClass","operator":"NotIn","values":["high"]}]}}`, highPod, false},
		{"priority Exists matches any class", `{"hard":{"pods":"1"},"scopeSelector":{"matchExpressions":[{"scopeName":"PriorityClass","operator":"Exists"}]}}`, highPod, true},
		{"priority DoesNotExist matches pod without class", `{"hard":{"pods":"1"},"scopeSelector":{"matchExpressions":[{"scopeName":"PriorityClass","operator":"DoesNotExist"}]}}`, burstablePod, true},
		{"invalid quota matches nothing", `{"hard":{"pods":"0.5"}}`, burstablePod, false},
		{"events are never charged", `{"hard":{"count/events":"1"}}`, `{"apiVersion":"v1","kind":"Event","metadata":{"name":"e"}}`, false},
		{"nor are events.k8s.io events", `{"hard":{"count/events.events.k8s.io":"1"}}`, `{"apiVersion":"events.k8s.io/v1","kind":"Event","metadata":{"name":"e"}}`, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := quotaFrom(t, tt.spec).Matches(evaluate(t, tt.obj)); got != tt.want {
				t.Errorf("got %v, want %v", got, tt.want)
			}
		})
	}
}

// TestUsageTracked lists which hard names the quota controller computes
// usage for, and so which a quota's status.used holds.
func TestUsageTracked(t *testing.T) {
	for _, tc := range []struct {
		name           string
		tracked, known bool
	}{
		{"pods", true, true},
		{"count/pods", true, true},
		{"requests.cpu", true, true},
		{"limits.ephemeral-storage", true, true},
		{"hugepages-2Mi", true, true},
		{"requests.hugepages-1Gi", true, true},
		{"requests.nvidia.com/gpu", true, true},
		{"nvidia.com/gpu", false, true},
		{"limits.nvidia.com/gpu", false, true},
		{"services.nodeports", true, true},
		{"requests.storage", true, true},
		{"fast.storageclass.storage.k8s.io/requests.storage", true, true},
		{"fast.storageclass.storage.k8s.io/persistentvolumeclaims", true, true},
		{"configmaps", true, true},
		{"resourcequotas", true, true},
		{"count/deployments.apps", true, true},
		{"count/leases.coordination.k8s.io", true, true},
		{"count/serviceaccounts", true, true},
		{"count/events", false, true},
		{"count/events.events.k8s.io", false, true},
		{"count/nodes", false, true},
		{"count/foos.apps", false, true},
		{"count/widgets.example.com", false, false},
	} {
		tracked, known := UsageTracked(tc.name)
		if tracked != tc.tracked || known != tc.known {
			t.Errorf("UsageTracked(%q) = %v, %v; want %v, %v", tc.name, tracked, known, tc.tracked, tc.known)
		}
	}
}

// TestTracksAnyCachedAsRead checks the cached answers of tracksAny
// against Hard itself, for quotas tracking each evaluator's resources,
// each asked twice about every kind, in two orders.
func TestTracksAnyCachedAsRead(t *testing.T) {
	kinds := []string{"pods", "persistentvolumeclaims", "services", "configmaps", "secrets"}
	reversed := slices.Clone(kinds)
	slices.Reverse(reversed)
	for _, spec := range []string{
		`{"hard":{"pods":"1"}}`,
		`{"hard":{"requests.cpu":"1","count/configmaps":"3"}}`,
		`{"hard":{"requests.storage":"1Gi"}}`,
		`{"hard":{"gold.storageclass.storage.k8s.io/persistentvolumeclaims":"2"}}`,
		`{"hard":{"services.nodeports":"1"}}`,
		`{"hard":{"count/secrets":"1"}}`,
		`{"hard":{"requests.nvidia.com/gpu":"1"}}`,
		`{"hard":{}}`,
	} {
		for _, order := range [][]string{kinds, reversed} {
			q := quotaFrom(t, spec)
			for range 2 {
				for _, k := range order {
					if got, want := q.tracksAny(k), q.Tracks(k); got != want {
						t.Errorf("%s: tracksAny(%s) = %v, Hard says %v", spec, k, got, want)
					}
				}
			}
		}
	}
}

func state(q *Quota, used ...string) QuotaState {
	u := list(used...)
	for name := range q.Hard {
		if _, ok := u[name]; !ok {
			u[name] = quantity.NewInt(0)
		}
	}
	return QuotaState{Quota: q, Used: u}
}

func admitOne(t *testing.T, obj string, states ...QuotaState) Decision {
	t.Helper()
	o := decode(t, obj)
	if err := Default(o, Environment{}); err != nil {
		t.Fatal(err)
	}
	d := Admit(AdmitRequest{Operation: Create, Object: o, Quotas: states, Now: testNow})
	// A charge evaluated by the caller decides the same.
	c, err := Evaluate(o, testNow)
	if err != nil {
		t.Fatal(err)
	}
	pre := Admit(AdmitRequest{Operation: Create, Object: o, Quotas: states, Now: testNow, Charge: &c})
	if pre.Allowed != d.Allowed || pre.Message != d.Message || pre.Code != d.Code || !reflect.DeepEqual(pre.Used, d.Used) {
		t.Fatalf("with the charge given: %+v, evaluated by Admit: %+v", pre, d)
	}
	return d
}

func TestAdmitRules(t *testing.T) {
	compute := `{"hard":{"requests.cpu":"1","requests.memory":"1Gi","limits.cpu":"2","limits.memory":"2Gi"}}`
	tests := []struct {
		name   string
		obj    string
		states []QuotaState
		want   string // "" for allowed
	}{
		{"must specify names every missing resource and container",
			pod("web-1", `{"containers":[`+ctr("c1", `"cpu":"100m"`, "")+`,`+ctr("c2", `"cpu":"100m","memory":"1Mi"`, `"cpu":"100m","memory":"1Mi"`)+`]}`),
			[]QuotaState{state(quotaFrom(t, compute))},
			`pods "web-1" is forbidden: failed quota: q: must specify limits.cpu for: c1; limits.memory for: c1; requests.memory for: c1`},
		{"pod-level resources lift must specify",
			pod("web-1", `{"resources":{"requests":{"cpu":"500m","memory":"256Mi"},"limits":{"cpu":"1","memory":"512Mi"}},"containers":[{"name":"a"},{"name":"b"}]}`),
			[]QuotaState{state(quotaFrom(t, compute))}, ""},
		{"pod-level resources are what is charged and refused",
			pod("web-1", `{"resources":{"limits":{"cpu":"3","memory":"512Mi"}},"containers":[{"name":"a"}]}`),
			[]QuotaState{state(quotaFrom(t, compute))},
			`pods "web-1" is forbidden: exceeded quota: q, requested: limits.cpu=3,requests.cpu=3, used: limits.cpu=0,requests.cpu=0, limited: limits.cpu=2,requests.cpu=1`},
		{"pod-level ephemeral storage alone does not lift must specify",
			pod("web-1", `{"resources":{"requests":{"ephemeral-storage":"1Gi"}},"containers":[{"name":"a"}]}`),
			[]QuotaState{state(quotaFrom(t, `{"hard":{"requests.cpu":"1"}}`))},
			`pods "web-1" is forbidden: failed quota: q: must specify requests.cpu for: a`},
		{"must specify covers init containers",
			pod("web-1", `{"initContainers":[{"name":"init"}],"containers":[`+ctr("c1", `"cpu":"100m"`, "")+`]}`),
			[]QuotaState{state(quotaFrom(t, `{"hard":{"requests.cpu":"1"}}`))},
			`pods "web-1" is forbidden: failed quota: q: must specify requests.cpu for: init`},
		{"exceeded names only the exceeded resources",
			pod("web-1", `{"containers":[`+ctr("c", `"cpu":"600m","memory":"100Mi"`, `"cpu":"600m","memory":"100Mi"`)+`]}`),
			[]QuotaState{state(quotaFrom(t, compute), "requests.cpu", "500m")},
			`pods "web-1" is forbidden: exceeded quota: q, requested: requests.cpu=600m, used: requests.cpu=500m, limited: requests.cpu=1`},
		{"landing exactly on the limit is allowed",
			pod("web-1", `{"containers":[`+ctr("c", `"cpu":"500m","memory":"100Mi"`, `"cpu":"500m","memory":"100Mi"`)+`]}`),
			[]QuotaState{state(quotaFrom(t, compute), "requests.cpu", "500m")}, ""},
		{"every matching quota must fit; with no slots known the first by name is named",
			pod("web-1", `{"containers":[`+ctr("c", `"cpu":"1"`, "")+`]}`),
			[]QuotaState{state(quotaFrom(t, `{"hard":{"pods":"0"}}`)), state(&Quota{Name: "a", Hard: list("count/pods", "0")})},
			`pods "web-1" is forbidden: exceeded quota: a, requested: count/pods=1, used: count/pods=0, limited: count/pods=0`},
		{"qualified resource names the group",
			`{"apiVersion":"batch/v1","kind":"Job","metadata":{"name":"x"}}`,
			[]QuotaState{state(quotaFrom(t, `{"hard":{"count/jobs.batch":"0"}}`))},
			`jobs.batch "x" is forbidden: exceeded quota: q, requested: count/jobs.batch=1, used: count/jobs.batch=0, limited: count/jobs.batch=0`},
		{"generated names report the prefix",
			`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"generateName":"cfg-"}}`,
			[]QuotaState{state(quotaFrom(t, `{"hard":{"configmaps":"0"}}`))},
			`configmaps "cfg-" is forbidden: exceeded quota: q, requested: configmaps=1, used: configmaps=0, limited: configmaps=0`},
		{"objects no quota tracks are allowed",
			`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"c"}}`,
			[]QuotaState{state(quotaFrom(t, `{"hard":{"pods":"0"}}`))}, ""},
		{"invalid quotas are ignored",
			`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"c"}}`,
			[]QuotaState{state(quotaFrom(t, `{"hard":{"configmaps":"0.5"}}`))}, ""},
		{"negative usage is refused",
			pod("web-1", `{"containers":[`+ctr("c", `"cpu":"-1"`, "")+`]}`),
			[]QuotaState{state(quotaFrom(t, `{"hard":{"pods":"5"}}`))},
			`pods "web-1" is forbidden: quota usage is negative for resource(s): cpu,requests.cpu`},
		{"status unknown when used lacks a tracked resource",
			pod("web-1", `{"containers":[`+ctr("c", `"cpu":"1"`, "")+`]}`),
			[]QuotaState{{Quota: quotaFrom(t, `{"hard":{"pods":"5","requests.cpu":"4"}}`), Used: list("pods", "1")}},
			`pods "web-1" is forbidden: status unknown for quota: q, resources: pods,requests.cpu`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := admitOne(t, tt.obj, tt.states...)
			got := ""
			if !d.Allowed {
				got = d.Message
			}
			if got != tt.want {
				t.Errorf("got  %q\nwant %q", got, tt.want)
			}
			if !d.Allowed && (d.Code != 403 || d.Reason != ReasonForbidden) {
				t.Errorf("got %d %q, want 403 Forbidden", d.Code, d.Reason)
			}
		})
	}
}

// TestAdmitNamesTheFirstRefusalByName checks which quota a refusal names
// when several refuse: the first by name, whatever order the quotas come
// in (Kubernetes' is a draw).
func TestAdmitNamesTheFirstRefusalByName(t *testing.T) {
	full := func(name, hard string) QuotaState {
		q := quotaFrom(t, `{"hard":{"`+hard+`":"1"}}`)
		q.Name = name
		return state(q, hard, "1")
	}
	podOf := pod("web-1", `{"containers":[`+ctr("c", `"cpu":"1","memory":"1Mi"`, `"cpu":"1","memory":"1Mi"`)+`]}`)
	exceeded := func(name, hard string) string {
		return `pods "web-1" is forbidden: exceeded quota: ` + name + `, requested: ` + hard + `=1, used: ` + hard + `=1, limited: ` + hard + `=1`
	}
	tests := []struct {
		name   string
		states []QuotaState
		want   string
	}{
		{"in name order", []QuotaState{full("aa", "pods"), full("zz", "count/pods"), full("free", "services")}, exceeded("aa", "pods")},
		{"in reverse order", []QuotaState{full("zz", "pods"), full("aa", "count/pods")}, exceeded("aa", "count/pods")},
		{"three refusing", []QuotaState{full("b", "pods"), full("c", "count/pods"), full("a", "requests.cpu")},
			`pods "web-1" is forbidden: exceeded quota: a, requested: requests.cpu=1, used: requests.cpu=1, limited: requests.cpu=1`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := admitOne(t, podOf, tt.states...)
			if d.Allowed || d.Message != tt.want {
				t.Errorf("got  %q\nwant %q", d.Message, tt.want)
			}
		})
	}

	// A quota whose constraints the pod fails is named before any
	// exceeded one, and among several such, the first by name.
	bare := pod("web-1", `{"containers":[{"name":"c"}]}`)
	mustSpecify := func(name, hard string) QuotaState {
		q := quotaFrom(t, `{"hard":{"`+hard+`":"5"}}`)
		q.Name = name
		return state(q)
	}
	d := admitOne(t, bare, full("a", "pods"), mustSpecify("y", "limits.memory"), mustSpecify("x", "requests.cpu"))
	if want := `pods "web-1" is forbidden: failed quota: x: must specify requests.cpu for: c`; d.Message != want {
		t.Errorf("got  %q\nwant %q", d.Message, want)
	}
}

func TestAdmitReturnsNewUsedAndCharge(t *testing.T) {
	q := quotaFrom(t, `{"hard":{"pods":"5","requests.memory":"4Gi"}}`)
	other := &Quota{Name: "objects", Hard: list("configmaps", "5")}
	d := admitOne(t, pod("p", `{"containers":[`+ctr("c", `"memory":"512Mi"`, "")+`]}`), state(q, "requests.memory", "1Gi", "pods", "1"), state(other))
	if !d.Allowed {
		t.Fatal(d.Message)
	}
	assertUsage(t, d.Used["q"], map[string]string{"pods": "2", "requests.memory": "1536Mi"})
	assertUsage(t, d.Used["objects"], map[string]string{"configmaps": "0"})
	if got := d.Charge.Usage["requests.memory"].String(); got != "512Mi" {
		t.Errorf("charge: got %s, want 512Mi", got)
	}
}

func TestAdmitUpdateChargesOnlyGrowth(t *testing.T) {
	q := quotaFrom(t, `{"hard":{"requests.storage":"10Gi","persistentvolumeclaims":"1"}}`)
	claim := func(size string) *object.Object {
		return decode(t, `{"apiVersion":"v1","kind":"PersistentVolumeClaim","metadata":{"name":"c","resourceVersion":"5"},"spec":{"resources":{"requests":{"storage":"`+size+`"}}}}`)
	}
	st := state(q, "requests.storage", "8Gi", "persistentvolumeclaims", "1")
	d := Admit(AdmitRequest{Operation: Update, Object: claim("9Gi"), OldObject: claim("8Gi"), Quotas: []QuotaState{st}, Now: testNow})
	if !d.Allowed {
		t.Fatalf("growth within quota refused: %s", d.Message)
	}
	assertUsage(t, d.Used["q"], map[string]string{"requests.storage": "9Gi", "persistentvolumeclaims": "1"})
	d = Admit(AdmitRequest{Operation: Update, Object: claim("12Gi"), OldObject: claim("8Gi"), Quotas: []QuotaState{st}, Now: testNow})
	want := `persistentvolumeclaims "c" is forbidden: exceeded quota: q, requested: requests.storage=4Gi, used: requests.storage=8Gi, limited: requests.storage=10Gi`
	if d.Allowed || d.Message != want {
		t.Errorf("got %q, want %q", d.Message, want)
	}
	d = Admit(AdmitRequest{Operation: Delete, Object: claim("8Gi"), Quotas: []QuotaState{st}, Now: testNow})
	if !d.Allowed {
		t.Errorf("delete refused: %s", d.Message)
	}
}

// TestAdmitSubresources checks which requests on subresources the plugin
// evaluates: a pod's resize (charged its growth), and no other; a plain
// pod update that keeps the pod's scope is not evaluated either.
func TestAdmitSubresources(t *testing.T) {
	q := quotaFrom(t, `{"hard":{"requests.cpu":"2","requests.storage":"10Gi"}}`)
	st := state(q, "requests.cpu", "1", "requests.storage", "8Gi")
	cpu := func(v string) *object.Object {
		return decode(t, pod("p", `{"containers":[`+ctr("c", `"cpu":"`+v+`"`, "")+`]}`))
	}
	claim := func(size string) *object.Object {
		return decode(t, `{"apiVersion":"v1","kind":"PersistentVolumeClaim","metadata":{"name":"c","resourceVersion":"5"},"spec":{"resources":{"requests":{"storage":"`+size+`"}}}}`)
	}
	cases := []struct {
		name        string
		op          Operation
		obj, old    *object.Object
		subresource string
		want        string // empty: allowed
	}{
		{"a pod resized past the quota", Update, cpu("3"), cpu("1"), "resize",
			`pods "p" is forbidden: exceeded quota: q, requested: requests.cpu=2, used: requests.cpu=1, limited: requests.cpu=2`},
		{"a pod resized within it", Update, cpu("2"), cpu("1"), "resize", ""},
		{"a plain update of a pod", Update, cpu("3"), cpu("1"), "", ""},
		{"a pod's status", Update, cpu("3"), cpu("1"), "status", ""},
		{"a create on a pod's subresource", Create, cpu("3"), nil, "binding", ""},
		{"a claim's status, evaluated but never refused for exceeding", Update, claim("12Gi"), claim("8Gi"), "status", ""},
		{"a claim itself", Update, claim("12Gi"), claim("8Gi"), "",
			`persistentvolumeclaims "c" is forbidden: exceeded quota: q, requested: requests.storage=4Gi, used: requests.storage=8Gi, limited: requests.storage=10Gi`},
	}
	for _, c := range cases {
		d := Admit(AdmitRequest{Operation: c.op, Object: c.obj, OldObject: c.old, Subresource: c.subresource, Quotas: []QuotaState{st}, Now: testNow})
		if got := map[bool]string{false: d.Message}[d.Allowed]; got != c.want {
			t.Errorf("%s: got %q, want %q (empty: allowed)", c.name, got, c.want)
		}
	}
	// A claim's status update is evaluated: a quota whose status does not
	// yet hold the claim's resources refuses it, as Kubernetes does.
	unknown := QuotaState{Quota: q, Used: list("requests.cpu", "1")}
	d := Admit(AdmitRequest{Operation: Update, Object: claim("8Gi"), OldObject: claim("8Gi"), Subresource: "status", Quotas: []QuotaState{unknown}, Now: testNow})
	if want := `persistentvolumeclaims "c" is forbidden: status unknown for quota: q, resources: requests.storage`; d.Allowed || d.Message != want {
		t.Errorf("a claim's status against a quota of unknown status: allowed %v %q, want %q", d.Allowed, d.Message, want)
	}
	d = Admit(AdmitRequest{Operation: Update, Object: cpu("1"), OldObject: cpu("1"), Subresource: "status", Quotas: []QuotaState{unknown}, Now: testNow})
	if !d.Allowed {
		t.Errorf("a pod's status against a quota of unknown status: %q, want allowed (not evaluated)", d.Message)
	}
}

// TestAdmitPodMovedBetweenTerminatingScopes updates a stored pod to have
// an active deadline, which moves it from the NotTerminating scope into
// the Terminating one. Since Kubernetes v1.33 the plugin evaluates such an
// update: a quota the pod matched before is charged only what grew
// (nothing, here), and a quota it matches only now is charged all of it,
// so that a quota cannot be lowered by a request that is never completed.
// A plain update that keeps the scope is not evaluated.
func TestAdmitPodMovedBetweenTerminatingScopes(t *testing.T) {
	terminating := quotaFrom(t, `{"hard":{"pods":"2","requests.cpu":"2"},"scopes":["Terminating"]}`)
	terminating.Name = "terminating"
	notTerminating := quotaFrom(t, `{"hard":{"pods":"2","requests.cpu":"2"},"scopes":["NotTerminating"]}`)
	notTerminating.Name = "not-terminating"
	stored := decode(t, pod("p", `{"containers":[`+ctr("c", `"cpu":"1"`, "")+`]}`))
	withDeadline := decode(t, pod("p", `{"activeDeadlineSeconds":60,"containers":[`+ctr("c", `"cpu":"1"`, "")+`]}`))
	relabelled := decode(t, strings.Replace(pod("p", `{"containers":[`+ctr("c", `"cpu":"1"`, "")+`]}`), `"resourceVersion"`, `"labels":{"a":"b"},"resourceVersion"`, 1))

	quotas := []QuotaState{state(terminating, "pods", "1", "requests.cpu", "1"), state(notTerminating, "pods", "2", "requests.cpu", "2")}
	d := Admit(AdmitRequest{Operation: Update, Object: withDeadline, OldObject: stored, Quotas: quotas, Now: testNow})
	if !d.Allowed {
		t.Fatalf("moved into a Terminating quota with room: %s", d.Message)
	}
	assertUsage(t, d.Used["terminating"], map[string]string{"pods": "2", "requests.cpu": "2"})
	assertUsage(t, d.Used["not-terminating"], map[string]string{"pods": "2", "requests.cpu": "2"})

	full := []QuotaState{state(terminating, "pods", "2", "requests.cpu", "1"), state(notTerminating, "pods", "2", "requests.cpu", "2")}
	d = Admit(AdmitRequest{Operation: Update, Object: withDeadline, OldObject: stored, Quotas: full, Now: testNow})
	want := `pods "p" is forbidden: exceeded quota: terminating, requested: pods=1, used: pods=2, limited: pods=2`
	if d.Allowed || d.Message != want {
		t.Errorf("moved into a full Terminating quota: got %q, want %q", d.Message, want)
	}
	if d = Admit(AdmitRequest{Operation: Update, Object: relabelled, OldObject: stored, Quotas: full, Now: testNow}); !d.Allowed {
		t.Errorf("an update that keeps the scope was evaluated: %s", d.Message)
	}
}

func TestAdmitLimitedResources(t *testing.T) {
	limited := []LimitedResource{{Resource: "pods", MatchContains: []string{"nvidia.com/gpu"}}}
	gpuPod := pod("g", `{"containers":[`+ctr("c", `"nvidia.com/gpu":"1"`, `"nvidia.com/gpu":"1"`)+`]}`)
	o := decode(t, gpuPod)
	d := Admit(AdmitRequest{Operation: Create, Object: o, Limited: limited, Now: testNow,
		Quotas: []QuotaState{state(quotaFrom(t, `{"hard":{"pods":"5"}}`))}})
	want := `pods "g" is forbidden: insufficient quota to consume: requests.nvidia.com/gpu`
	if d.Allowed || d.Message != want {
		t.Errorf("got %q, want %q", d.Message, want)
	}
	d = Admit(AdmitRequest{Operation: Create, Object: o, Limited: limited, Now: testNow,
		Quotas: []QuotaState{state(quotaFrom(t, `{"hard":{"requests.nvidia.com/gpu":"4"}}`))}})
	if !d.Allowed {
		t.Errorf("covered gpu pod refused: %s", d.Message)
	}

	scoped := []LimitedResource{{Resource: "pods", MatchScopes: []ScopeRequirement{{ScopeName: ScopePriorityClass, Operator: OperatorIn, Values: []string{"cluster-services"}}}}}
	critical := decode(t, pod("c", `{"priorityClassName":"cluster-services","containers":[`+ctr("c", `"cpu":"1"`, "")+`]}`))
	d = Admit(AdmitRequest{Operation: Create, Object: critical, Limited: scoped, Now: testNow})
	want = `insufficient quota to match these scopes: [{PriorityClass In [cluster-services]}]`
	if d.Allowed || d.Message != want {
		t.Errorf("got %q, want %q", d.Message, want)
	}
	d = Admit(AdmitRequest{Operation: Create, Object: critical, Limited: scoped, Now: testNow,
		Quotas: []QuotaState{state(quotaFrom(t, `{"hard":{"pods":"10"},"scopeSelector":{"matchExpressions":[{"scopeName":"PriorityClass","operator":"In","values":["cluster-services"]}]}}`))}})
	if !d.Allowed {
		t.Errorf("covered critical pod refused: %s", d.Message)
	}
}

func TestDefaultRules(t *testing.T) {
	lr := &corev1.LimitRange{Spec: corev1.LimitRangeSpec{Limits: []corev1.LimitRangeItem{{
		Type:           corev1.LimitTypeContainer,
		Default:        corev1.ResourceList{"cpu": resource.MustParse("1"), "memory": resource.MustParse("512Mi")},
		DefaultRequest: corev1.ResourceList{"cpu": resource.MustParse("250m")},
	}}}}
	rc := &nodev1.RuntimeClass{Handler: "kata", Overhead: &nodev1.Overhead{PodFixed: corev1.ResourceList{"cpu": resource.MustParse("250m"), "memory": resource.MustParse("120Mi")}}}
	env := Environment{LimitRanges: []*corev1.LimitRange{lr}, RuntimeClasses: map[string]*nodev1.RuntimeClass{"kata": rc}}
	tests := []struct {
		name string
		pod  string
		env  Environment
		want map[string]string
	}{
		{"a limit with no request charges the limit",
			pod("p", `{"containers":[`+ctr("c", "", `"cpu":"500m"`)+`]}`), Environment{},
			map[string]string{"count/pods": "1", "pods": "1", "cpu": "500m", "requests.cpu": "500m", "limits.cpu": "500m"}},
		{"limit range fills missing requests and limits",
			pod("p", `{"containers":[{"name":"c"}]}`), env,
			map[string]string{"count/pods": "1", "pods": "1", "cpu": "250m", "requests.cpu": "250m", "limits.cpu": "1",
				"memory": "512Mi", "requests.memory": "512Mi", "limits.memory": "512Mi"}},
		{"own limit defaults the request before the limit range",
			pod("p", `{"containers":[`+ctr("c", "", `"cpu":"2"`)+`]}`), env,
			map[string]string{"count/pods": "1", "pods": "1", "cpu": "2", "requests.cpu": "2", "limits.cpu": "2",
				"memory": "512Mi", "requests.memory": "512Mi", "limits.memory": "512Mi"}},
		{"runtime class adds its overhead",
			pod("p", `{"runtimeClassName":"kata","containers":[`+ctr("c", `"cpu":"1"`, `"cpu":"1"`)+`]}`), Environment{RuntimeClasses: env.RuntimeClasses},
			map[string]string{"count/pods": "1", "pods": "1", "cpu": "1250m", "requests.cpu": "1250m", "limits.cpu": "1250m", "memory": "120Mi", "requests.memory": "120Mi"}},
		// Recorded: a container asking for 0.0005 cpu is stored with 1m,
		// and a probe with 100000n beside the LimitRange's default limit
		// of 3 was refused for limits.cpu=3001m.
		{"defaulting rounds every quantity up to 1m",
			pod("p", `{"containers":[`+ctr("a", `"cpu":"0.0005","memory":"100m"`, "")+`,`+ctr("b", `"cpu":"100000n","memory":"1.5"`, `"cpu":"250000u","memory":"1e-4"`)+`]}`), Environment{},
			map[string]string{"count/pods": "1", "pods": "1", "cpu": "2m", "requests.cpu": "2m", "limits.cpu": "250m",
				"memory": "1600m", "requests.memory": "1600m", "limits.memory": "1e-3"}},
		{"rounding applies to the LimitRange's defaults beside own figures",
			pod("p", `{"containers":[`+ctr("a", `"cpu":"100000n"`, `"cpu":"100000n"`)+`,{"name":"b"}]}`), Environment{LimitRanges: []*corev1.LimitRange{{Spec: corev1.LimitRangeSpec{Limits: []corev1.LimitRangeItem{{
				Type: corev1.LimitTypeContainer, Default: corev1.ResourceList{"cpu": resource.MustParse("3")}}}}}}},
			map[string]string{"count/pods": "1", "pods": "1", "cpu": "3001m", "requests.cpu": "3001m", "limits.cpu": "3001m"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o := decode(t, tt.pod)
			if err := Default(o, tt.env); err != nil {
				t.Fatal(err)
			}
			c, err := Evaluate(o, testNow)
			if err != nil {
				t.Fatal(err)
			}
			assertUsage(t, c.Usage, tt.want)
		})
	}
	o := decode(t, pod("p", `{"runtimeClassName":"gvisor","containers":[{"name":"c"}]}`))
	if err := Default(o, env); err == nil || !strings.Contains(err.Error(), "not found") {
		t.Errorf("unknown runtime class: got %v, want not found", err)
	}
}

// TestPluginRefusals words the refusals of the plugins that run before
// quota, Default's and Validate's, as Kubernetes does (the 403 adds the
// object's forbidden prefix).
func TestPluginRefusals(t *testing.T) {
	rc := &nodev1.RuntimeClass{Handler: "kata", Overhead: &nodev1.Overhead{PodFixed: corev1.ResourceList{"cpu": resource.MustParse("250m")}}}
	plain := &nodev1.RuntimeClass{Handler: "runc"}
	zoned := &nodev1.RuntimeClass{Handler: "runsc", Scheduling: &nodev1.Scheduling{NodeSelector: map[string]string{"zone": "b", "tier": "x"}}}
	zonedKata := &nodev1.RuntimeClass{Handler: "kata", Overhead: rc.Overhead, Scheduling: zoned.Scheduling}
	env := Environment{
		RuntimeClasses:  map[string]*nodev1.RuntimeClass{"kata": rc, "runc": plain, "zoned": zoned, "zoned-kata": zonedKata},
		PriorityClasses: []*schedulingv1.PriorityClass{{ObjectMeta: metav1.ObjectMeta{Name: "high"}, Value: 1000}},
	}
	withAccounts := env
	withAccounts.ServiceAccounts = []string{"builder", "default"}
	for _, tc := range []struct {
		name, spec string
		env        Environment
		reason     error
		want       string // "" for no refusal
	}{
		{"unknown runtime class", `{"runtimeClassName":"gvisor","containers":[{"name":"c"}]}`, env,
			ErrRuntimeClassNotFound, `pod rejected: RuntimeClass "gvisor" not found`},
		{"overhead other than the class's", `{"runtimeClassName":"kata","overhead":{"cpu":"100m"},"containers":[{"name":"c"}]}`, env,
			ErrOverheadMismatch, `pod rejected: Pod's Overhead doesn't match RuntimeClass's defined Overhead`},
		{"the class's own overhead", `{"runtimeClassName":"kata","overhead":{"cpu":"250m"},"containers":[{"name":"c"}]}`, env, nil, ""},
		{"overhead without a runtime class", `{"overhead":{"cpu":"100m"},"containers":[{"name":"c"}]}`, env,
			ErrOverheadWithoutRuntimeClass, `pod rejected: Pod Overhead set without corresponding RuntimeClass defined Overhead`},
		{"overhead with a class defining none", `{"runtimeClassName":"runc","overhead":{"cpu":"100m"},"containers":[{"name":"c"}]}`, env,
			ErrOverheadWithoutRuntimeClass, `pod rejected: Pod Overhead set without corresponding RuntimeClass defined Overhead`},
		{"empty runtime class name", `{"runtimeClassName":"","containers":[{"name":"c"}]}`, env,
			ErrRuntimeClassNameEmpty, `resource name may not be empty`},
		{"node selector against the class's", `{"runtimeClassName":"zoned","nodeSelector":{"zone":"a"},"containers":[{"name":"c"}]}`, env,
			ErrNodeSelectorConflict, `conflict: runtimeClass.scheduling.nodeSelector[zone] = b; pod.spec.nodeSelector[zone] = a`},
		{"several labels against the class's, the first in order named", `{"runtimeClassName":"zoned","nodeSelector":{"zone":"a","tier":"y"},"containers":[{"name":"c"}]}`, env,
			ErrNodeSelectorConflict, `conflict: runtimeClass.scheduling.nodeSelector[tier] = x; pod.spec.nodeSelector[tier] = y`},
		{"node selector agreeing with the class's", `{"runtimeClassName":"zoned","nodeSelector":{"zone":"b","disk":"ssd"},"containers":[{"name":"c"}]}`, env, nil, ""},
		{"empty node selector", `{"runtimeClassName":"zoned","nodeSelector":{},"containers":[{"name":"c"}]}`, env, nil, ""},
		{"node selector without a class's", `{"runtimeClassName":"kata","nodeSelector":{"zone":"a"},"containers":[{"name":"c"}]}`, env, nil, ""},
		{"overhead checked before the node selector", `{"runtimeClassName":"zoned-kata","overhead":{"cpu":"100m"},"nodeSelector":{"zone":"a"},"containers":[{"name":"c"}]}`, env,
			ErrOverheadMismatch, `pod rejected: Pod's Overhead doesn't match RuntimeClass's defined Overhead`},
		{"unknown priority class", `{"priorityClassName":"urgent","containers":[{"name":"c"}]}`, env,
			ErrPriorityClassNotFound, `no PriorityClass with name urgent was found`},
		{"known priority class", `{"priorityClassName":"high","containers":[{"name":"c"}]}`, env, nil, ""},
		{"system priority class", `{"priorityClassName":"system-node-critical","containers":[{"name":"c"}]}`, env, nil, ""},
		{"no priority class ingested", `{"priorityClassName":"urgent","containers":[{"name":"c"}]}`, Environment{}, nil, ""},
		{"a priority other than the class's", `{"priorityClassName":"high","priority":5,"containers":[{"name":"c"}]}`, env,
			ErrPriorityMismatch, `the integer value of priority (5) must not be provided in pod spec; priority admission controller computed 1000 from the given PriorityClass name`},
		{"a priority without a class", `{"priority":5,"containers":[{"name":"c"}]}`, Environment{},
			ErrPriorityMismatch, `the integer value of priority (5) must not be provided in pod spec; priority admission controller computed 0 from the given PriorityClass name`},
		{"a preemption policy other than the class's", `{"preemptionPolicy":"Never","containers":[{"name":"c"}]}`, Environment{},
			ErrPriorityMismatch, `the string value of PreemptionPolicy (Never) must not be provided in pod spec; priority admission controller computed PreemptLowerPriority from the given PriorityClass name`},
		{"the class's own preemption policy", `{"priorityClassName":"high","preemptionPolicy":"PreemptLowerPriority","containers":[{"name":"c"}]}`, env, nil, ""},
		{"the class's own priority", `{"priorityClassName":"system-node-critical","priority":2000001000,"containers":[{"name":"c"}]}`, env, nil, ""},
		{"unknown service account", `{"serviceAccountName":"robot","containers":[{"name":"c"}]}`, withAccounts,
			ErrServiceAccountNotFound, `error looking up service account team/robot: serviceaccount "robot" not found`},
		{"known service account", `{"serviceAccountName":"builder","containers":[{"name":"c"}]}`, withAccounts, nil, ""},
		{"the default service account", `{"serviceAccountName":"default","containers":[{"name":"c"}]}`, withAccounts, nil, ""},
		{"no service account named", `{"containers":[{"name":"c"}]}`, withAccounts, nil, ""},
		{"the deprecated field alone", `{"serviceAccount":"robot","containers":[{"name":"c"}]}`, withAccounts,
			ErrServiceAccountNotFound, `error looking up service account team/robot: serviceaccount "robot" not found`},
		{"the deprecated field under the other", `{"serviceAccountName":"builder","serviceAccount":"robot","containers":[{"name":"c"}]}`, withAccounts, nil, ""},
		{"no service account ingested", `{"serviceAccountName":"robot","containers":[{"name":"c"}]}`, env, nil, ""},
		{"the service account looked up before the priority class", `{"serviceAccountName":"robot","priorityClassName":"urgent","containers":[{"name":"c"}]}`, withAccounts,
			ErrServiceAccountNotFound, `error looking up service account team/robot: serviceaccount "robot" not found`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o := decode(t, pod("p", tc.spec))
			err := Default(o, tc.env)
			if err == nil {
				err = Validate(o, nil, tc.env)
			}
			if tc.want == "" {
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
				return
			}
			if err == nil || err.Error() != tc.want || !errors.Is(err, tc.reason) {
				t.Fatalf("got %v, want %q (reason %v)", err, tc.want, tc.reason)
			}
		})
	}
}

// TestRuntimeClassNodeSelectorMerged: the RuntimeClass plugin merges its
// class's node selector into the pod's, and an empty class name fails as
// a plain error (a 500 in Kubernetes), not as a refusal.
func TestRuntimeClassNodeSelectorMerged(t *testing.T) {
	zoned := &nodev1.RuntimeClass{Handler: "runsc", Scheduling: &nodev1.Scheduling{NodeSelector: map[string]string{"zone": "b"}}}
	env := Environment{RuntimeClasses: map[string]*nodev1.RuntimeClass{"zoned": zoned}}
	for _, tc := range []struct {
		name, spec string
		want       map[string]string
	}{
		{"a pod selecting nothing takes the class's", `{"runtimeClassName":"zoned","containers":[{"name":"c"}]}`, map[string]string{"zone": "b"}},
		{"a pod's own labels are kept", `{"runtimeClassName":"zoned","nodeSelector":{"disk":"ssd"},"containers":[{"name":"c"}]}`, map[string]string{"disk": "ssd", "zone": "b"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o := decode(t, pod("p", tc.spec))
			if err := Default(o, env); err != nil {
				t.Fatal(err)
			}
			if got := o.Value.(*corev1.Pod).Spec.NodeSelector; !maps.Equal(got, tc.want) {
				t.Fatalf("nodeSelector: got %v, want %v", got, tc.want)
			}
		})
	}
	if zoned.Scheduling.NodeSelector["disk"] != "" {
		t.Fatal("the class's selector was changed")
	}
	var plain *PlainError
	err := Default(decode(t, pod("p", `{"runtimeClassName":"","containers":[{"name":"c"}]}`)), env)
	if !errors.As(err, &plain) {
		t.Fatalf("empty class name: got %v (%T), want a *PlainError", err, err)
	}
}

// TestDefaultClassRules covers the admission plugins that name a class for
// a raw manifest that names none: Priority for pods, DefaultStorageClass
// for claims.
func TestDefaultClassRules(t *testing.T) {
	older := metav1.NewTime(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	newer := metav1.NewTime(time.Date(2026, 6, 1, 0, 0, 0, 0, time.UTC))
	defaultAnn := map[string]string{"storageclass.kubernetes.io/is-default-class": "true"}
	classes := []*storagev1.StorageClass{
		{ObjectMeta: metav1.ObjectMeta{Name: "standard", Annotations: defaultAnn, CreationTimestamp: older}},
		{ObjectMeta: metav1.ObjectMeta{Name: "fast", CreationTimestamp: newer}},
		{ObjectMeta: metav1.ObjectMeta{Name: "gold", Annotations: map[string]string{"storageclass.beta.kubernetes.io/is-default-class": "true"}, CreationTimestamp: newer}},
	}
	claim := func(spec string) string {
		return `{"apiVersion":"v1","kind":"PersistentVolumeClaim","metadata":{"name":"c","namespace":"ns"},"spec":{` + spec + `"resources":{"requests":{"storage":"1Gi"}}}}`
	}
	claimTests := []struct {
		name    string
		claim   string
		classes []*storagev1.StorageClass
		want    string // the class charged, "" for none
	}{
		{"a claim naming no class gets the newest default class", claim(``), classes, "gold"},
		{"default classes created at once are ordered by name", claim(``), []*storagev1.StorageClass{
			{ObjectMeta: metav1.ObjectMeta{Name: "b", Annotations: defaultAnn, CreationTimestamp: older}},
			{ObjectMeta: metav1.ObjectMeta{Name: "a", Annotations: defaultAnn, CreationTimestamp: older}},
		}, "a"},
		{"a claim naming a class keeps it", claim(`"storageClassName":"fast",`), classes, "fast"},
		{"an empty class name means no class", claim(`"storageClassName":"",`), classes, ""},
		{"without a default class the claim has none", claim(``), classes[1:2], ""},
	}
	for _, tt := range claimTests {
		t.Run(tt.name, func(t *testing.T) {
			o := decode(t, tt.claim)
			if err := Default(o, Environment{StorageClasses: tt.classes}); err != nil {
				t.Fatal(err)
			}
			c, err := Evaluate(o, testNow)
			if err != nil {
				t.Fatal(err)
			}
			var got string
			for name := range c.Usage {
				if class, ok := strings.CutSuffix(name, ".storageclass.storage.k8s.io/persistentvolumeclaims"); ok {
					got = class
				}
			}
			if got != tt.want {
				t.Errorf("charged class %q, want %q (usage %v)", got, tt.want, c.Usage)
			}
		})
	}

	priorities := []*schedulingv1.PriorityClass{
		{ObjectMeta: metav1.ObjectMeta{Name: "high"}, Value: 1000},
		{ObjectMeta: metav1.ObjectMeta{Name: "low"}, Value: 10, GlobalDefault: true},
		{ObjectMeta: metav1.ObjectMeta{Name: "lowest"}, Value: 1, GlobalDefault: true},
	}
	podTests := []struct {
		name    string
		spec    string
		classes []*schedulingv1.PriorityClass
		want    string
	}{
		{"a pod naming no class gets the global default with the lowest value", `{"containers":[{"name":"c"}]}`, priorities, "lowest"},
		{"a pod naming a class keeps it", `{"priorityClassName":"high","containers":[{"name":"c"}]}`, priorities, "high"},
		{"without a global default the pod has no class", `{"containers":[{"name":"c"}]}`, priorities[:1], ""},
	}
	for _, tt := range podTests {
		t.Run(tt.name, func(t *testing.T) {
			o := decode(t, pod("p", tt.spec))
			if err := Default(o, Environment{PriorityClasses: tt.classes}); err != nil {
				t.Fatal(err)
			}
			c, err := Evaluate(o, testNow)
			if err != nil {
				t.Fatal(err)
			}
			if c.Scope.PriorityClass != tt.want {
				t.Errorf("priority class %q, want %q", c.Scope.PriorityClass, tt.want)
			}
		})
	}
}
