package quota

import (
	"encoding/json"
	"testing"

	"github.com/quotaledger/quota/ledger/object"
)

// TestDesignProposalCPUTable is the request/limit table of the quota design
// proposal: a request is charged, a lone limit is charged as the request it
// defaults to, and a container with neither is refused.
func TestDesignProposalCPUTable(t *testing.T) {
	q := quotaFrom(t, `{"hard":{"requests.cpu":"4"}}`)
	tests := []struct {
		name, requests, limits, want string
	}{
		{"request and limit charge the request", `"cpu":"100m"`, `"cpu":"500m"`, "100m"},
		{"request alone charges the request", `"cpu":"100m"`, "", "100m"},
		{"limit alone charges the limit as request", "", `"cpu":"500m"`, "500m"},
		{"neither is rejected", "", "", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := admitOne(t, pod("x", `{"containers":[`+ctr("c1", tt.requests, tt.limits)+`]}`), state(q))
			if tt.want == "" {
				want := `pods "x" is forbidden: failed quota: q: must specify requests.cpu for: c1`
				if d.Allowed || d.Message != want {
					t.Errorf("got %q, want %q", d.Message, want)
				}
				return
			}
			if !d.Allowed {
				t.Fatal(d.Message)
			}
			if got := d.Used["q"]["requests.cpu"].String(); got != tt.want {
				t.Errorf("used: got %s, want %s", got, tt.want)
			}
		})
	}
}

// TestDesignProposalFourCPUTiers spreads a 4 cpu quota over three tiers:
// only requests count, so 1 + 2 + 1 fills it although limits total 9.
func TestDesignProposalFourCPUTiers(t *testing.T) {
	q := quotaFrom(t, `{"hard":{"cpu":"4"}}`)
	st := state(q)
	for _, p := range []struct{ name, request, limit string }{{"x", "1", "4"}, {"y", "2", "2"}, {"z", "1", "3"}} {
		d := admitOne(t, pod(p.name, `{"containers":[`+ctr("c", `"cpu":"`+p.request+`"`, `"cpu":"`+p.limit+`"`)+`]}`), st)
		if !d.Allowed {
			t.Fatalf("pod %s: %s", p.name, d.Message)
		}
		st.Used = d.Used["q"]
	}
	if got := st.Used["cpu"].String(); got != "4" {
		t.Fatalf("used cpu: got %s, want 4", got)
	}
	d := admitOne(t, pod("w", `{"containers":[`+ctr("c", `"cpu":"1m"`, "")+`]}`), st)
	want := `pods "w" is forbidden: exceeded quota: q, requested: cpu=1m, used: cpu=4, limited: cpu=4`
	if d.Allowed || d.Message != want {
		t.Errorf("got %q, want %q", d.Message, want)
	}
}

// TestConceptPriorityClassExample creates one high-priority pod against the
// pods-high/medium/low quotas: only pods-high is charged.
func TestConceptPriorityClassExample(t *testing.T) {
	var states []QuotaState
	for _, p := range []struct{ name, cpu, memory, class string }{
		{"pods-high", "1000", "200Gi", "high"}, {"pods-medium", "10", "20Gi", "medium"}, {"pods-low", "5", "10Gi", "low"},
	} {
		o := decode(t, `{"apiVersion":"v1","kind":"ResourceQuota","metadata":{"name":"`+p.name+`"},"spec":{"hard":{"cpu":"`+p.cpu+`","memory":"`+p.memory+`","pods":"10"},"scopeSelector":{"matchExpressions":[{"operator":"In","scopeName":"PriorityClass","values":["`+p.class+`"]}]}}}`)
		q, err := FromObject(o)
		if err != nil || q.Invalid != "" {
			t.Fatalf("%s: %v %s", p.name, err, q.Invalid)
		}
		states = append(states, state(q))
	}
	d := admitOne(t, pod("high-priority", `{"priorityClassName":"high","containers":[`+ctr("high-priority", `"memory":"10Gi","cpu":"500m"`, `"memory":"10Gi","cpu":"500m"`)+`]}`), states...)
	if !d.Allowed {
		t.Fatal(d.Message)
	}
	assertUsage(t, d.Used["pods-high"], map[string]string{"cpu": "500m", "memory": "10Gi", "pods": "1"})
	assertUsage(t, d.Used["pods-medium"], map[string]string{"cpu": "0", "memory": "0", "pods": "0"})
	assertUsage(t, d.Used["pods-low"], map[string]string{"cpu": "0", "memory": "0", "pods": "0"})
	if got := states[0].Quota.Hard["cpu"].String(); got != "1k" {
		t.Errorf("hard cpu prints %s, want 1k", got)
	}
}

// TestConceptComputeAndObjectCounts folds the concept page's myspace: the
// compute-resources and object-counts quotas, with the namespace's default
// service-account token secret counted as in the page.
func TestConceptComputeAndObjectCounts(t *testing.T) {
	compute := quotaFrom(t, `{"hard":{"requests.cpu":"1","requests.memory":"1Gi","limits.cpu":"2","limits.memory":"2Gi","requests.nvidia.com/gpu":4}}`)
	counts := quotaFrom(t, `{"hard":{"configmaps":"10","persistentvolumeclaims":"4","pods":"4","replicationcontrollers":"20","secrets":"10","services":"10","services.loadbalancers":"2"}}`)
	if compute.Invalid != "" || counts.Invalid != "" {
		t.Fatal(compute.Invalid, counts.Invalid)
	}
	compute.Name, counts.Name = "compute-resources", "object-counts"
	// The token secret is charged to object-counts alone.
	secret := evaluate(t, `{"apiVersion":"v1","kind":"Secret","metadata":{"name":"default-token"}}`)
	if compute.Matches(secret) || !counts.Matches(secret) {
		t.Errorf("a secret matches compute-resources %v, object-counts %v; want only object-counts", compute.Matches(secret), counts.Matches(secret))
	}
	assertUsage(t, counts.Mask(secret.Usage), map[string]string{"secrets": "1"})

	gpu := pod("trainer", `{"containers":[`+ctr("c", `"cpu":"500m","memory":"512Mi","nvidia.com/gpu":"4"`, `"cpu":"1","memory":"1Gi","nvidia.com/gpu":"4"`)+`]}`)
	d := admitOne(t, gpu, state(compute), state(counts, "secrets", "1"))
	if !d.Allowed {
		t.Fatal(d.Message)
	}
	assertUsage(t, d.Used["object-counts"], map[string]string{"configmaps": "0", "persistentvolumeclaims": "0", "pods": "1", "replicationcontrollers": "0", "secrets": "1", "services": "0", "services.loadbalancers": "0"})
	assertUsage(t, d.Used["compute-resources"], map[string]string{"limits.cpu": "1", "limits.memory": "1Gi", "requests.cpu": "500m", "requests.memory": "512Mi", "requests.nvidia.com/gpu": "4"})
}

// TestConceptStorageClasses charges gold and bronze claims to their own
// per-class limits.
func TestConceptStorageClasses(t *testing.T) {
	q := quotaFrom(t, `{"hard":{"gold.storageclass.storage.k8s.io/requests.storage":"500Gi","bronze.storageclass.storage.k8s.io/requests.storage":"100Gi"}}`)
	claim := func(name, class, size string) string {
		return `{"apiVersion":"v1","kind":"PersistentVolumeClaim","metadata":{"name":"` + name + `"},"spec":{"storageClassName":"` + class + `","resources":{"requests":{"storage":"` + size + `"}}}}`
	}
	assertUsage(t, q.Mask(evaluate(t, claim("a", "gold", "200Gi")).Usage), map[string]string{"gold.storageclass.storage.k8s.io/requests.storage": "200Gi"})
	assertUsage(t, q.Mask(evaluate(t, claim("b", "bronze", "60Gi")).Usage), map[string]string{"bronze.storageclass.storage.k8s.io/requests.storage": "60Gi"})
	assertUsage(t, q.Mask(evaluate(t, claim("c", "silver", "1Ti")).Usage), map[string]string{})
	used := state(q, "gold.storageclass.storage.k8s.io/requests.storage", "200Gi", "bronze.storageclass.storage.k8s.io/requests.storage", "60Gi")
	d := admitOne(t, claim("d", "bronze", "50Gi"), used)
	want := `persistentvolumeclaims "d" is forbidden: exceeded quota: q, requested: bronze.storageclass.storage.k8s.io/requests.storage=50Gi, used: bronze.storageclass.storage.k8s.io/requests.storage=60Gi, limited: bronze.storageclass.storage.k8s.io/requests.storage=100Gi`
	if d.Allowed || d.Message != want {
		t.Errorf("got %q, want %q", d.Message, want)
	}
	if d := admitOne(t, claim("e", "gold", "300Gi"), used); !d.Allowed {
		t.Errorf("gold claim within limit refused: %s", d.Message)
	}
}

// TestConceptCrossNamespaceAffinity is the concept page's quota that forbids
// cross-namespace pod affinity (pods: "0" scoped to it), next to a gpu
// limit.
func TestConceptCrossNamespaceAffinity(t *testing.T) {
	q := quotaFrom(t, `{"hard":{"pods":"0"},"scopeSelector":{"matchExpressions":[{"scopeName":"CrossNamespacePodAffinity","operator":"Exists"}]}}`)
	gpus := &Quota{Name: "gpus", Hard: list("requests.nvidia.com/gpu", "4")}
	if q.Invalid != "" {
		t.Fatal(q.Invalid)
	}
	cross := pod("web", `{"affinity":{"podAffinity":{"requiredDuringSchedulingIgnoredDuringExecution":[{"topologyKey":"zone","namespaces":["db"]}]}},"containers":[`+ctr("c", `"cpu":"1"`, "")+`]}`)
	d := admitOne(t, cross, state(q), state(gpus))
	want := `pods "web" is forbidden: exceeded quota: q, requested: pods=1, used: pods=0, limited: pods=0`
	if d.Allowed || d.Message != want {
		t.Errorf("got %q, want %q", d.Message, want)
	}
	local := pod("web", `{"containers":[`+ctr("c", `"nvidia.com/gpu":"4"`, `"nvidia.com/gpu":"4"`)+`]}`)
	d = admitOne(t, local, state(q), state(gpus))
	if !d.Allowed {
		t.Fatal(d.Message)
	}
	assertUsage(t, d.Used["gpus"], map[string]string{"requests.nvidia.com/gpu": "4"})
	d = admitOne(t, local, state(q), state(gpus, "requests.nvidia.com/gpu", "1"))
	want = `pods "web" is forbidden: exceeded quota: gpus, requested: requests.nvidia.com/gpu=4, used: requests.nvidia.com/gpu=1, limited: requests.nvidia.com/gpu=4`
	if d.Allowed || d.Message != want {
		t.Errorf("got %q, want %q", d.Message, want)
	}
}

func FuzzFromObjectEvaluate(f *testing.F) {
	f.Add([]byte(`{"apiVersion":"v1","kind":"ResourceQuota","metadata":{"name":"q"},"spec":{"hard":{"pods":"1"},"scopes":["BestEffort"]}}`))
	f.Add([]byte(`{"apiVersion":"v1","kind":"ResourceQuota","metadata":{"name":"q"},"spec":{"hard":{"cpu":"1e3"},"scopeSelector":{"matchExpressions":[{"scopeName":"PriorityClass","operator":"In","values":["a"]}]}}}`))
	f.Add([]byte(pod("p", `{"overhead":{"cpu":"1"},"initContainers":[`+sidecar("s", `"cpu":"1"`)+`],"containers":[`+ctr("c", `"cpu":"1","memory":"1Ki"`, `"memory":"2Ki"`)+`]}`)))
	f.Add([]byte(`{"apiVersion":"v1","kind":"PersistentVolumeClaim","metadata":{"name":"c"},"spec":{"resources":{"requests":{"storage":"1.5"}}},"status":{"allocatedResources":{"storage":"2Gi"}}}`))
	f.Add([]byte(`{"apiVersion":"v1","kind":"Service","metadata":{"name":"s"},"spec":{"type":"LoadBalancer","ports":[{"port":1}]}}`))
	f.Fuzz(func(t *testing.T, raw []byte) {
		o, err := object.Decode(raw)
		if err != nil {
			return
		}
		if q, err := FromObject(o); err == nil {
			_ = q.Matches(Charge{Resource: "pods", Scope: ScopeFacts{Pod: true}})
			_, _ = json.Marshal(q)
		}
		c, err := Evaluate(o, testNow)
		if err != nil {
			return
		}
		b, err := json.Marshal(c)
		if err != nil {
			t.Fatalf("marshal charge: %v", err)
		}
		var back Charge
		if err := json.Unmarshal(b, &back); err != nil {
			t.Fatalf("charge does not read back: %v\n%s", err, b)
		}
		_ = Default(o, Environment{})
		_ = Admit(AdmitRequest{Operation: Create, Object: o, Now: testNow,
			Quotas: []QuotaState{state(&Quota{Name: "q", Hard: list("pods", "1", "requests.cpu", "1", "count/pods", "1")})}})
	})
}

const benchPod = `{"apiVersion":"v1","kind":"Pod","metadata":{"name":"bench","namespace":"team","resourceVersion":"9"},"spec":{
 "initContainers":[{"name":"migrate","resources":{"requests":{"cpu":"1","memory":"1Gi"},"limits":{"cpu":"2","memory":"2Gi"}}},
  {"name":"proxy","restartPolicy":"Always","resources":{"requests":{"cpu":"100m","memory":"64Mi"},"limits":{"cpu":"200m","memory":"128Mi"}}}],
 "containers":[{"name":"app","resources":{"requests":{"cpu":"500m","memory":"512Mi"},"limits":{"cpu":"1","memory":"1Gi"}}},
  {"name":"worker","resources":{"requests":{"cpu":"250m","memory":"256Mi"},"limits":{"cpu":"500m","memory":"512Mi"}}},
  {"name":"logs","resources":{"requests":{"cpu":"50m","memory":"32Mi"},"limits":{"cpu":"100m","memory":"64Mi"}}}]}}`

func BenchmarkEvaluatePod(b *testing.B) {
	o := decode(b, benchPod)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Evaluate(o, testNow); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkAdmitThreeQuotas(b *testing.B) {
	o := decode(b, benchPod)
	states := []QuotaState{
		state(&Quota{Name: "compute", Hard: list("requests.cpu", "100", "requests.memory", "100Gi", "limits.cpu", "200", "limits.memory", "200Gi")}, "requests.cpu", "10", "requests.memory", "10Gi"),
		state(&Quota{Name: "counts", Hard: list("pods", "100", "count/pods", "200")}, "pods", "10", "count/pods", "12"),
		state(&Quota{Name: "besteffort", Hard: list("pods", "5"), Scopes: []ScopeRequirement{{ScopeName: ScopeBestEffort, Operator: OperatorExists}}}),
	}
	req := AdmitRequest{Operation: Create, Object: o, Quotas: states, Now: testNow}
	b.ReportAllocs()
	for b.Loop() {
		if d := Admit(req); !d.Allowed {
			b.Fatal(d.Message)
		}
	}
}
