package export_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	quotav1 "k8s.io/apiserver/pkg/quota/v1"
	"k8s.io/apiserver/pkg/quota/v1/generic"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/tools/cache"
	"k8s.io/kubernetes/pkg/quota/v1/evaluator/core"
	"k8s.io/utils/clock"

	"github.com/quotaledger/quota/testdata/kubecluster/kubecluster"
)

// Deadlines of the polls.
const (
	convergeTimeout = 90 * time.Second
	pollInterval    = 200 * time.Millisecond
)

// exporter is a running `quota export`.
type exporter struct {
	*kubecluster.Proc
	metricsURL string
	identity   string
}

var metricsLine = regexp.MustCompile(`quota export metrics.*url=(\S+)`)

// startExporter runs `quota export` against c and l, as identity, with
// short leader election timings, and waits for its metrics server.
func startExporter(t *testing.T, c *kubecluster.Cluster, l *kubecluster.Ledger, identity string, extra ...string) *exporter {
	t.Helper()
	urls := make(chan string, 1)
	args := append([]string{"export", "--server", l.URL, "--kubeconfig", c.Kubeconfig, "--identity", identity,
		"--metrics-listen", "127.0.0.1:0", "--discovery-interval", "1s",
		"--lease-duration", "4s", "--renew-deadline", "3s", "--retry-period", "500ms", "--log-level", "debug"}, extra...)
	p := kubecluster.StartQuota(t, func(line string) {
		if m := metricsLine.FindStringSubmatch(line); m != nil {
			select {
			case urls <- strings.Trim(m[1], `"`):
			default:
			}
		}
	}, args...)
	x := &exporter{Proc: p, identity: identity}
	select {
	case x.metricsURL = <-urls:
	case <-p.Done():
		t.Fatalf("quota export exited before serving metrics\n%s", p.Logs)
	case <-time.After(60 * time.Second):
		t.Fatalf("quota export did not serve metrics within 60s\n%s", p.Logs)
	}
	return x
}

// get fetches path of the exporter's metrics server.
func (x *exporter) get(path string) (int, string, error) {
	resp, err := http.Get(strings.TrimSuffix(x.metricsURL, "/metrics") + path)
	if err != nil {
		return 0, "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b), err
}

// metric returns the sum of the samples of name whose labels contain every
// one of match ("reason=\"410\""), or 0.
func (x *exporter) metric(t *testing.T, name string, match ...string) float64 {
	t.Helper()
	_, body, err := x.get("/metrics")
	if err != nil {
		return 0
	}
	sum := 0.0
	for _, line := range strings.Split(body, "\n") {
		if !strings.HasPrefix(line, name+"{") && !strings.HasPrefix(line, name+" ") {
			continue
		}
		ok := true
		for _, m := range match {
			ok = ok && strings.Contains(line, m)
		}
		if !ok {
			continue
		}
		var v float64
		fields := strings.Fields(line)
		fmt.Sscan(fields[len(fields)-1], &v)
		sum += v
	}
	return sum
}

// waitReady polls /readyz until it answers 200 and the exporter leads.
func (x *exporter) waitReady(t *testing.T) {
	t.Helper()
	deadline := time.Now().Add(convergeTimeout)
	for {
		code, body, err := x.get("/readyz")
		if err == nil && code == http.StatusOK && strings.Contains(body, "leading") {
			return
		}
		if x.Exited() {
			t.Fatalf("quota export %s exited\n%s", x.identity, x.Logs)
		}
		if time.Now().After(deadline) {
			t.Fatalf("quota export %s not ready within %s: %d %s %v\n%s", x.identity, convergeTimeout, code, body, err, x.Logs)
		}
		time.Sleep(pollInterval)
	}
}

// leads reports whether the exporter says it leads.
func (x *exporter) leads(t *testing.T) bool {
	return x.metric(t, "quota_export_leader") == 1
}

// kubeUsage sums, with Kubernetes' own evaluators over the live objects,
// the usage of every quota in the cluster, by namespace/name.
func kubeUsage(t *testing.T, c *kubecluster.Cluster) map[string]corev1.ResourceList {
	t.Helper()
	ctx := context.Background()
	meta, err := metadata.NewForConfig(c.Config)
	if err != nil {
		t.Fatal(err)
	}
	lister := func(gvr schema.GroupVersionResource) (cache.GenericLister, error) {
		return &liveLister{c: c, meta: meta, gvr: gvr}, nil
	}
	quotas, err := c.Client.CoreV1().ResourceQuotas("").List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]corev1.ResourceList{}
	for _, q := range quotas.Items {
		evaluators := []quotav1.Evaluator{
			core.NewPodEvaluator(lister, clock.RealClock{}),
			core.NewServiceEvaluator(lister),
			core.NewPersistentVolumeClaimEvaluator(lister),
			core.NewResourceClaimEvaluator(lister, nil, nil, nil),
		}
		for _, gvr := range []schema.GroupVersionResource{
			corev1.SchemeGroupVersion.WithResource("configmaps"),
			corev1.SchemeGroupVersion.WithResource("resourcequotas"),
			corev1.SchemeGroupVersion.WithResource("replicationcontrollers"),
			corev1.SchemeGroupVersion.WithResource("secrets"),
		} {
			evaluators = append(evaluators, generic.NewObjectCountEvaluator(gvr.GroupResource(), generic.ListResourceUsingListerFunc(lister, gvr), corev1.ResourceName(gvr.Resource)))
		}
		registry := generic.NewRegistry(evaluators)
		for name := range q.Spec.Hard {
			r, ok := strings.CutPrefix(string(name), "count/")
			if !ok {
				continue
			}
			gr := schema.ParseGroupResource(r)
			if registry.Get(gr) != nil {
				continue
			}
			gvr, err := preferredVersion(c, gr)
			if err != nil {
				continue // not served: nothing of it exists, it uses zero
			}
			registry.Add(generic.NewObjectCountEvaluator(gr, generic.ListResourceUsingListerFunc(lister, gvr), ""))
		}
		used, err := quotav1.CalculateUsage(q.Namespace, q.Spec.Scopes, q.Spec.Hard, registry, q.Spec.ScopeSelector)
		if apierrors.IsNotFound(err) {
			// A custom resource deleted between discovery and its list:
			// the caller asks again.
			return nil
		}
		if err != nil {
			t.Fatalf("kubernetes sums quota %s/%s: %v", q.Namespace, q.Name, err)
		}
		out[q.Namespace+"/"+q.Name] = used
	}
	return out
}

func preferredVersion(c *kubecluster.Cluster, gr schema.GroupResource) (schema.GroupVersionResource, error) {
	lists, err := c.Client.Discovery().ServerPreferredNamespacedResources()
	if err != nil && len(lists) == 0 {
		return schema.GroupVersionResource{}, err
	}
	for _, l := range lists {
		gv, _ := schema.ParseGroupVersion(l.GroupVersion)
		for _, r := range l.APIResources {
			if gv.Group == gr.Group && r.Name == gr.Resource {
				return gv.WithResource(r.Name), nil
			}
		}
	}
	return schema.GroupVersionResource{}, fmt.Errorf("the API server does not serve %s", gr)
}

// liveLister lists live objects from the API server: typed for the kinds
// the evaluators read, metadata only for those they count.
type liveLister struct {
	c    *kubecluster.Cluster
	meta metadata.Interface
	gvr  schema.GroupVersionResource
	ns   string
}

func (l *liveLister) List(selector labels.Selector) ([]runtime.Object, error) {
	ctx := context.Background()
	opts := metav1.ListOptions{LabelSelector: selector.String()}
	var out []runtime.Object
	switch l.gvr.GroupResource() {
	case schema.GroupResource{Resource: "pods"}:
		list, err := l.c.Client.CoreV1().Pods(l.ns).List(ctx, opts)
		if err != nil {
			return nil, err
		}
		for i := range list.Items {
			out = append(out, &list.Items[i])
		}
	case schema.GroupResource{Resource: "services"}:
		list, err := l.c.Client.CoreV1().Services(l.ns).List(ctx, opts)
		if err != nil {
			return nil, err
		}
		for i := range list.Items {
			out = append(out, &list.Items[i])
		}
	case schema.GroupResource{Resource: "persistentvolumeclaims"}:
		list, err := l.c.Client.CoreV1().PersistentVolumeClaims(l.ns).List(ctx, opts)
		if err != nil {
			return nil, err
		}
		for i := range list.Items {
			out = append(out, &list.Items[i])
		}
	case schema.GroupResource{Group: "resource.k8s.io", Resource: "resourceclaims"}:
		list, err := l.c.Client.ResourceV1().ResourceClaims(l.ns).List(ctx, opts)
		if err != nil {
			return nil, err
		}
		for i := range list.Items {
			out = append(out, &list.Items[i])
		}
	default:
		list, err := l.meta.Resource(l.gvr).Namespace(l.ns).List(ctx, opts)
		if err != nil {
			return nil, err
		}
		for i := range list.Items {
			out = append(out, &list.Items[i])
		}
	}
	return out, nil
}

func (l *liveLister) Get(name string) (runtime.Object, error) {
	return nil, fmt.Errorf("liveLister.Get is not used by the evaluators")
}

func (l *liveLister) ByNamespace(ns string) cache.GenericNamespaceLister {
	return &liveLister{c: l.c, meta: l.meta, gvr: l.gvr, ns: ns}
}

// ledgerUsage is `quota describe -A -o json`: used by namespace/name, and
// hard.
func ledgerUsage(t *testing.T, l *kubecluster.Ledger) map[string]corev1.ResourceQuota {
	t.Helper()
	out := l.MustRun("describe", "-A", "-o", "json")
	var list corev1.ResourceQuotaList
	if err := json.Unmarshal([]byte(out), &list); err != nil {
		t.Fatalf("describe -o json: %v\n%s", err, out)
	}
	m := map[string]corev1.ResourceQuota{}
	for _, q := range list.Items {
		m[q.Namespace+"/"+q.Name] = q
	}
	return m
}

// usageDiff says how the ledger's usage differs from Kubernetes', "" when
// it does not: the same quotas, and for every resource a quota tracks the
// same quantity, numerically.
func usageDiff(kube map[string]corev1.ResourceList, ledger map[string]corev1.ResourceQuota) string {
	var diffs []string
	for key, want := range kube {
		q, ok := ledger[key]
		if !ok {
			diffs = append(diffs, fmt.Sprintf("quota %s: not in the ledger", key))
			continue
		}
		names := map[corev1.ResourceName]bool{}
		for name := range want {
			names[name] = true
		}
		for name := range q.Status.Used {
			names[name] = true
		}
		for name := range names {
			g, w := q.Status.Used[name], want[name]
			if g.Cmp(w) != 0 {
				diffs = append(diffs, fmt.Sprintf("quota %s %s: ledger %s, kubernetes %s", key, name, g.String(), w.String()))
			}
		}
	}
	for key := range ledger {
		if _, ok := kube[key]; !ok {
			diffs = append(diffs, fmt.Sprintf("quota %s: in the ledger, not in the cluster", key))
		}
	}
	slices.Sort(diffs)
	return strings.Join(diffs, "\n")
}

// converge polls until the ledger's usage equals Kubernetes', and fails
// with the last difference after convergeTimeout.
func converge(t *testing.T, c *kubecluster.Cluster, l *kubecluster.Ledger, logs ...fmt.Stringer) {
	t.Helper()
	deadline := time.Now().Add(convergeTimeout)
	for {
		kube := kubeUsage(t, c)
		d := "kubernetes' sums not known yet (a resource went away while they were taken)"
		if kube != nil {
			d = usageDiff(kube, ledgerUsage(t, l))
		}
		if d == "" && len(kube) > 0 {
			keys := make([]string, 0, len(kube))
			for k := range kube {
				keys = append(keys, k)
			}
			slices.Sort(keys)
			for _, k := range keys {
				t.Logf("%s used (the ledger and kubernetes agree): %v", k, resourceString(kube[k]))
			}
			return
		}
		if time.Now().After(deadline) {
			var sb strings.Builder
			for _, lg := range logs {
				sb.WriteString(lg.String())
			}
			t.Fatalf("the ledger does not equal the cluster after %s:\n%s\nexporter logs:\n%s", convergeTimeout, d, sb.String())
		}
		time.Sleep(pollInterval)
	}
}

// counter numbers the objects of a test.
type counter struct {
	mu sync.Mutex
	n  int
}

func (c *counter) next(prefix string) string {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.n++
	return fmt.Sprintf("%s-%d", prefix, c.n)
}

func resourceString(l corev1.ResourceList) string {
	var parts []string
	for name, v := range l {
		parts = append(parts, string(name)+"="+v.String())
	}
	slices.Sort(parts)
	return strings.Join(parts, " ")
}

// populated starts a cluster (clusterFlags and extraFlags) and a ledger
// (serveArgs), then creates the cluster-scoped objects and team-a's,
// counted in the returned counter.
func populated(t *testing.T, extraFlags []string, serveArgs ...string) (*kubecluster.Cluster, *kubecluster.Ledger, *counter) {
	t.Helper()
	c := kubecluster.Start(t, kubecluster.Options{APIServerFlags: append(extraFlags, clusterFlags...)})
	l := kubecluster.Serve(t, serveArgs...)
	n := &counter{}
	clusterObjects(t, c)
	namespaceObjects(t, c, "team-a", n)
	return c, l, n
}
