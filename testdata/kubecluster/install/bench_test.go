package install

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"runtime/pprof"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/quotaledger/quota/testdata/kubecluster/kubecluster"
)

// Bench sizes: BENCH_CREATES pod creates per run (default 1000), by each
// of benchClients.
var benchClients = []int{1, 32}

// The ways the benchmark creates pods, each on a kube-apiserver of its
// own: none enforces quota at all (the API server's own ceiling), plugin
// is kube-apiserver's ResourceQuota admission plugin, ledger is `quota
// webhook` with the plugin off.
var benchWays = []string{"none", "plugin", "ledger"}

// The ledger's processes, as benchRun.cpu names them, after the test's
// own ("apiserver": kube-apiserver, etcd and the clients, in this
// process).
var ledgerProcs = []string{"serve", "export", "webhook"}

// benchRun is one measured run: creates by a number of clients.
type benchRun struct {
	clients                   int
	creates, conflicts, other int
	elapsed                   time.Duration
	latencies                 []time.Duration
	// cpu is each process's CPU time over the run, divided by the
	// creates: "apiserver" (this process), and the ledger's.
	cpu map[string]time.Duration
	// admission is the API server's mean time over an allowed create in
	// the enforcer: the ResourceQuota plugin's validation, or its call
	// of the webhook (from its own metrics).
	admission time.Duration
	// webhook is the webhook's mean time over an allowed review, and
	// reserve the ledger's over a reserving create (from their metrics).
	webhook, reserve time.Duration
	// appends and casConflicts are the ledger's reservation appends and
	// those the namespace's compare-and-swap refused.
	appends, casConflicts float64
}

func (r benchRun) perSecond() float64 { return float64(r.creates) / r.elapsed.Seconds() }

func (r benchRun) quantile(q float64) time.Duration {
	if len(r.latencies) == 0 {
		return 0
	}
	l := slices.Clone(r.latencies)
	slices.Sort(l)
	return l[min(len(l)-1, int(q*float64(len(l))))]
}

// BenchmarkPodCreates creates pods through a real kube-apiserver, in a
// namespace with a quota on pods and CPU that they never reach, by 1 and
// by 32 concurrent clients, three ways in the same run (benchWays):
//
//   - none: no quota enforcement at all, the API server's ceiling.
//   - plugin: kube-apiserver's built-in ResourceQuota admission plugin
//     enforces. No quota controller runs here: the benchmark sets the
//     quota's status (hard, and zero used) itself, as the controller's
//     first sync would, and the plugin then keeps used up to date on every
//     create through its compare-and-swap on the quota's status.
//   - ledger: the plugin is off, and the ledger enforces through `quota
//     webhook`, registered as deploy/ registers it, fed by `quota export`.
//
// It reports creates per second and the p50 and p99 of a create's latency
// as the client sees it, the 409 Conflicts, the CPU each process spent
// per create and the API server's time in the enforcer, and the ratios of
// the ways. With BENCH_SPLIT_CPUS=1 the test process (kube-apiserver,
// etcd, the clients) runs on the first half of the CPUs and the ledger's
// processes on the other half, as on a cluster where they run on other
// nodes than the control plane. With BENCH_PROFILE=DIR each run writes
// a CPU profile of the test process to DIR/WAY-CLIENTS.pprof. Run it with
// make bench-webhook.
func BenchmarkPodCreates(b *testing.B) {
	creates := 1000
	if v := os.Getenv("BENCH_CREATES"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 32 {
			b.Fatalf("BENCH_CREATES=%q: want a number of creates, at least 32", v)
		}
		creates = n
	}
	cpus := "shared by every process"
	if os.Getenv("BENCH_SPLIT_CPUS") != "" {
		cpus = splitCPUs(b)
	}
	profiles := os.Getenv("BENCH_PROFILE")
	results := map[string][]benchRun{}
	for _, way := range benchWays {
		b.Run(way, func(b *testing.B) {
			var (
				c *kubecluster.Cluster
				e *enforcer
			)
			switch way {
			case "none":
				c = kubecluster.Start(b, kubecluster.Options{APIServerFlags: []string{"--disable-admission-plugins=ResourceQuota"}})
			case "plugin":
				c = kubecluster.Start(b, kubecluster.Options{})
			default:
				e = startEnforcer(b, time.Minute, "--disable-admission-plugins=ResourceQuota")
				c = e.cluster
			}
			for _, clients := range benchClients {
				ns := fmt.Sprintf("bench-%s-%d", way, clients)
				c.CreateNamespace(b, ns)
				if way != "none" {
					benchQuota(b, c, ns, way == "plugin")
				}
				before := measure(b, c, e)
				stop := startProfile(b, profiles, fmt.Sprintf("%s-%d", way, clients))
				r := createPods(b, c.Config, ns, clients, creates)
				stop()
				measure(b, c, e).since(before, &r)
				results[way] = append(results[way], r)
				checkCounted(b, c, e, ns, r.creates)
				b.ReportMetric(r.perSecond(), fmt.Sprintf("creates/s@%d", clients))
				b.ReportMetric(float64(r.quantile(0.99).Microseconds())/1000, fmt.Sprintf("p99-ms@%d", clients))
				b.ReportMetric(float64(r.conflicts), fmt.Sprintf("409s@%d", clients))
				for name, t := range r.cpu {
					b.ReportMetric(float64(t.Microseconds())/1000, fmt.Sprintf("%s-cpu-ms@%d", name, clients))
				}
			}
		})
	}
	for _, way := range benchWays {
		if len(results[way]) != len(benchClients) {
			return
		}
	}
	printBench(creates, cpus, results)
}

// checkCounted checks that the ledger counted every pod created. The
// built-in plugin's figure is logged, not checked: it is Kubernetes' own.
func checkCounted(b *testing.B, c *kubecluster.Cluster, e *enforcer, ns string, created int) {
	b.Helper()
	switch {
	case e != nil:
		e.settled(b, ns, created)
		used := resource.MustParse(e.used(b, ns, "pods"))
		if used.Value() != int64(created) {
			b.Errorf("%s: %d pods created, the ledger's used pods says %d", ns, created, used.Value())
		}
	case strings.HasPrefix(ns, "bench-plugin"):
		q, err := c.Client.CoreV1().ResourceQuotas(ns).Get(context.Background(), "quota", metav1.GetOptions{})
		if err != nil {
			b.Fatal(err)
		}
		if got := q.Status.Used.Pods().Value(); got != int64(created) {
			b.Logf("%s: %d pods created, the built-in plugin's used pods says %d", ns, created, got)
		}
	}
}

// printBench prints the table of the runs and the ratios of the ways.
func printBench(creates int, cpus string, results map[string][]benchRun) {
	ms := func(d time.Duration) string {
		if d == 0 {
			return "–"
		}
		return fmt.Sprintf("%.2fms", float64(d)/float64(time.Millisecond))
	}
	fmt.Printf("\npod creates through kube-apiserver, %d per run (BENCH_CREATES); CPUs %s\n", creates, cpus)
	fmt.Printf("%-7s %-6s %9s %8s %8s %4s %5s %9s | %-22s\n", "clients", "way", "creates/s", "p50", "p99", "409s", "other", "enforcer", "CPU per create")
	for i, clients := range benchClients {
		for _, way := range benchWays {
			r := results[way][i]
			cpu := "apiserver " + ms(r.cpu["apiserver"])
			if way == "ledger" {
				for _, p := range ledgerProcs {
					cpu += ", " + p + " " + ms(r.cpu[p])
				}
			}
			fmt.Printf("%-7d %-6s %9.1f %8s %8s %4d %5d %9s | %s\n", clients, way, r.perSecond(), ms(r.quantile(0.5)), ms(r.quantile(0.99)),
				r.conflicts, r.other, ms(r.admission), cpu)
		}
		none, plugin, ledger := results["none"][i], results["plugin"][i], results["ledger"][i]
		fmt.Printf("%-7d creates/s: ledger/plugin %.2fx; to the ceiling (none): plugin %.2fx, ledger %.2fx. p99 ledger/plugin %.2fx\n", clients,
			ledger.perSecond()/plugin.perSecond(), plugin.perSecond()/none.perSecond(), ledger.perSecond()/none.perSecond(),
			float64(ledger.quantile(0.99))/float64(plugin.quantile(0.99)))
		fmt.Printf("%-7d ledger: the webhook took %s a review, the ledger %s a reserving create; %.0f Reserve events for %d creates, %.0f refused by the compare-and-swap\n",
			clients, ms(ledger.webhook), ms(ledger.reserve), ledger.appends, ledger.creates, ledger.casConflicts)
	}
	fmt.Println("enforcer: the API server's mean time in the ResourceQuota plugin, or in its call of the webhook, over an allowed create")
	fmt.Println("CPU per create: apiserver is the test process (kube-apiserver, etcd and the clients); serve, export and webhook the ledger's processes")
}

// startProfile starts a CPU profile of this process (kube-apiserver,
// etcd, the clients) into dir/name.pprof when dir is set, and returns
// what stops it.
func startProfile(b *testing.B, dir, name string) (stop func()) {
	b.Helper()
	if dir == "" {
		return func() {}
	}
	f, err := os.Create(filepath.Join(dir, name+".pprof"))
	if err != nil {
		b.Fatal(err)
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		b.Fatal(err)
	}
	return func() {
		pprof.StopCPUProfile()
		if err := f.Close(); err != nil {
			b.Fatal(err)
		}
	}
}

// splitCPUs runs this process on the first half of the CPUs and every
// quota subprocess on the other half, and says so.
func splitCPUs(b *testing.B) string {
	b.Helper()
	n := runtime.NumCPU()
	if n < 2 {
		b.Fatalf("BENCH_SPLIT_CPUS needs at least 2 CPUs, this machine has %d", n)
	}
	mine, theirs := fmt.Sprintf("0-%d", n/2-1), fmt.Sprintf("%d-%d", n/2, n-1)
	if out, err := exec.Command("taskset", "-a", "-p", "-c", mine, strconv.Itoa(os.Getpid())).CombinedOutput(); err != nil {
		b.Fatalf("taskset this process to CPUs %s: %v\n%s", mine, err, out)
	}
	kubecluster.QuotaCPUs = theirs
	b.Cleanup(func() { kubecluster.QuotaCPUs = "" })
	return fmt.Sprintf("split: kube-apiserver, etcd and the clients on %s, the ledger on %s", mine, theirs)
}

// sample is what measure reads before and after a run.
type sample struct {
	cpu                          map[string]time.Duration
	admissionSum, admissionCount float64
	webhookSum, webhookCount     float64
	reserveSum, reserveCount     float64
	appends, casConflicts        float64
}

// measure reads the processes' CPU time and the metrics of the API server
// and, with e, of the ledger.
func measure(b *testing.B, c *kubecluster.Cluster, e *enforcer) sample {
	b.Helper()
	s := sample{cpu: map[string]time.Duration{"apiserver": cpuTime(b, os.Getpid())}}
	apiserver := apiserverMetrics(b, c)
	if e == nil {
		s.admissionSum = apiserver[`apiserver_admission_controller_admission_duration_seconds_sum{name="ResourceQuota",operation="CREATE",rejected="false",type="validate"}`]
		s.admissionCount = apiserver[`apiserver_admission_controller_admission_duration_seconds_count{name="ResourceQuota",operation="CREATE",rejected="false",type="validate"}`]
		return s
	}
	s.admissionSum = apiserver[`apiserver_admission_webhook_admission_duration_seconds_sum{name="`+webhookName+`",operation="CREATE",rejected="false",type="validating"}`]
	s.admissionCount = apiserver[`apiserver_admission_webhook_admission_duration_seconds_count{name="`+webhookName+`",operation="CREATE",rejected="false",type="validating"}`]
	for name, p := range map[string]*kubecluster.Proc{"serve": e.ledger.Proc, "export": e.export, "webhook": e.webhook} {
		s.cpu[name] = cpuTime(b, p.Cmd.Process.Pid)
	}
	hook := e.webhookMetrics(b)
	s.webhookCount = metric(b, hook, `quota_webhook_request_duration_seconds_count{verdict="allowed"}`)
	s.webhookSum = metric(b, hook, `quota_webhook_request_duration_seconds_sum{verdict="allowed"}`)
	ledger := e.ledgerMetrics(b)
	s.reserveSum = metric(b, ledger, `quota_admission_duration_seconds_sum{mode="reserving"}`)
	s.reserveCount = metric(b, ledger, `quota_admission_duration_seconds_count{mode="reserving"}`)
	s.appends = metric(b, ledger, "quota_admission_reserve_appends_total")
	s.casConflicts = metric(b, ledger, "quota_admission_reserve_conflicts_total")
	return s
}

// since sets r's figures from the change between before and s.
func (s sample) since(before sample, r *benchRun) {
	mean := func(sum, count float64) time.Duration {
		if count <= 0 {
			return 0
		}
		return time.Duration(sum / count * float64(time.Second))
	}
	r.cpu = map[string]time.Duration{}
	for name, t := range s.cpu {
		r.cpu[name] = (t - before.cpu[name]) / time.Duration(max(r.creates, 1))
	}
	r.admission = mean(s.admissionSum-before.admissionSum, s.admissionCount-before.admissionCount)
	r.webhook = mean(s.webhookSum-before.webhookSum, s.webhookCount-before.webhookCount)
	r.reserve = mean(s.reserveSum-before.reserveSum, s.reserveCount-before.reserveCount)
	r.appends = s.appends - before.appends
	r.casConflicts = s.casConflicts - before.casConflicts
}

// cpuTime is the user and system CPU time process pid has spent, from
// /proc (in clock ticks of 1/100 s, Linux's fixed USER_HZ).
func cpuTime(b *testing.B, pid int) time.Duration {
	b.Helper()
	raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		b.Fatalf("CPU time of process %d: %v", pid, err)
	}
	// The fields after the command name, which is in parentheses and may
	// hold spaces: state is the first, utime the 12th and stime the 13th.
	s := string(raw)
	fields := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
	if len(fields) < 13 {
		b.Fatalf("/proc/%d/stat: %d fields after the command", pid, len(fields))
	}
	var ticks int64
	for _, f := range fields[11:13] {
		n, err := strconv.ParseInt(f, 10, 64)
		if err != nil {
			b.Fatalf("/proc/%d/stat: %q: %v", pid, f, err)
		}
		ticks += n
	}
	return time.Duration(ticks) * 10 * time.Millisecond
}

// apiserverMetrics reads the API server's metrics (see parseMetrics).
func apiserverMetrics(t testing.TB, c *kubecluster.Cluster) map[string]float64 {
	t.Helper()
	raw, err := c.Client.CoreV1().RESTClient().Get().AbsPath("/metrics").DoRaw(context.Background())
	if err != nil {
		t.Fatalf("the API server's metrics: %v", err)
	}
	return parseMetrics(raw)
}

// benchQuota creates a quota in ns that the benchmark never reaches, with
// the status the quota controller would give it when setStatus.
func benchQuota(b *testing.B, c *kubecluster.Cluster, ns string, setStatus bool) {
	b.Helper()
	hard := corev1.ResourceList{corev1.ResourcePods: resource.MustParse("1000000"), corev1.ResourceRequestsCPU: resource.MustParse("100000")}
	q := &corev1.ResourceQuota{ObjectMeta: metav1.ObjectMeta{Name: "quota"}, Spec: corev1.ResourceQuotaSpec{Hard: hard}}
	ctx := context.Background()
	q, err := c.Client.CoreV1().ResourceQuotas(ns).Create(ctx, q, metav1.CreateOptions{})
	if err != nil {
		b.Fatal(err)
	}
	if setStatus {
		q.Status = corev1.ResourceQuotaStatus{Hard: hard, Used: corev1.ResourceList{corev1.ResourcePods: resource.MustParse("0"), corev1.ResourceRequestsCPU: resource.MustParse("0")}}
		if _, err := c.Client.CoreV1().ResourceQuotas(ns).UpdateStatus(ctx, q, metav1.UpdateOptions{}); err != nil {
			b.Fatal(err)
		}
		return
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		if _, err := c.Client.CoreV1().Pods(ns).Create(ctx, pod("warm"), metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}}); err == nil {
			break
		} else if time.Now().After(deadline) {
			b.Fatalf("a dry-run create in %s: %v", ns, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// createPods creates n pods in ns from clients goroutines, with no client
// side rate limit, and measures them.
func createPods(b *testing.B, cfg *rest.Config, ns string, clients, n int) benchRun {
	b.Helper()
	cfg = rest.CopyConfig(cfg)
	cfg.QPS, cfg.Burst = -1, 0
	client, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	var (
		mu  sync.Mutex
		wg  sync.WaitGroup
		run = benchRun{clients: clients}
	)
	start := time.Now()
	for w := range clients {
		wg.Go(func() {
			var mine []time.Duration
			conflicts, other := 0, 0
			for i := w; i < n; i += clients {
				t0 := time.Now()
				_, err := client.CoreV1().Pods(ns).Create(ctx, pod(fmt.Sprintf("p-%d", i)), metav1.CreateOptions{})
				switch {
				case err == nil:
					mine = append(mine, time.Since(t0))
				case apierrors.IsConflict(err):
					conflicts++
				default:
					other++
					if other == 1 {
						b.Logf("%s: %v", ns, err)
					}
				}
			}
			mu.Lock()
			defer mu.Unlock()
			run.latencies = append(run.latencies, mine...)
			run.conflicts += conflicts
			run.other += other
		})
	}
	wg.Wait()
	run.elapsed = time.Since(start)
	run.creates = len(run.latencies)
	return run
}
