package install

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strconv"
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

// benchRun is one measured run: creates by a number of clients.
type benchRun struct {
	clients                   int
	creates, conflicts, other int
	elapsed                   time.Duration
	latencies                 []time.Duration
	// webhookMean is the mean time the webhook took over an allowed
	// review (the ledger's decision and the hop to it), when it enforced.
	webhookMean time.Duration
	// appends and conflicts are the ledger's reservation appends and
	// those the namespace's compare-and-swap refused, when it enforced.
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
// by 32 concurrent clients, two ways in the same run:
//
//   - plugin: kube-apiserver's built-in ResourceQuota admission plugin
//     enforces. No quota controller runs here: the benchmark sets the
//     quota's status (hard, and zero used) itself, as the controller's
//     first sync would, and the plugin then keeps used up to date on every
//     create through its compare-and-swap on the quota's status.
//   - ledger: the plugin is off, and the ledger enforces through `quota
//     webhook`, registered as deploy/ registers it, fed by the cluster's
//     watch streams (or `quota export`).
//
// It reports creates per second and the p50 and p99 of a create's latency
// as the client sees it, the 409 Conflicts each way, and the ledger's
// figures as ratios to the plugin's. Run it with make bench.
func BenchmarkPodCreates(b *testing.B) {
	creates := 1000
	if v := os.Getenv("BENCH_CREATES"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 32 {
			b.Fatalf("BENCH_CREATES=%q: want a number of creates, at least 32", v)
		}
		creates = n
	}
	results := map[string][]benchRun{}
	for _, way := range []string{"plugin", "ledger"} {
		b.Run(way, func(b *testing.B) {
			var (
				c *kubecluster.Cluster
				e *enforcer
			)
			if way == "plugin" {
				c = kubecluster.Start(b, kubecluster.Options{})
			} else {
				e = startEnforcer(b, time.Minute, "--disable-admission-plugins=ResourceQuota")
				c = e.cluster
			}
			for _, clients := range benchClients {
				ns := fmt.Sprintf("bench-%s-%d", way, clients)
				c.CreateNamespace(b, ns)
				benchQuota(b, c, ns, way == "plugin")
				var count0, seconds0, appends0, cas0 float64
				if e != nil {
					count0, seconds0 = e.webhookAllowed(b)
					appends0 = e.ledgerMetric(b, "quota_admission_reserve_appends_total")
					cas0 = e.ledgerMetric(b, "quota_admission_reserve_conflicts_total")
				}
				r := createPods(b, c.Config, ns, clients, creates)
				if e != nil {
					count, seconds := e.webhookAllowed(b)
					if count > count0 {
						r.webhookMean = time.Duration((seconds - seconds0) / (count - count0) * float64(time.Second))
					}
					r.appends = e.ledgerMetric(b, "quota_admission_reserve_appends_total") - appends0
					r.casConflicts = e.ledgerMetric(b, "quota_admission_reserve_conflicts_total") - cas0
				}
				results[way] = append(results[way], r)
				// Each way's enforcer counted every pod created.
				counted := ""
				if e != nil {
					e.settled(b, ns, r.creates)
					used := resource.MustParse(e.used(b, ns, "pods"))
					counted = strconv.FormatInt(used.Value(), 10)
				} else {
					q, err := c.Client.CoreV1().ResourceQuotas(ns).Get(context.Background(), "quota", metav1.GetOptions{})
					if err != nil {
						b.Fatal(err)
					}
					counted = strconv.FormatInt(q.Status.Used.Pods().Value(), 10)
				}
				switch {
				case counted == strconv.Itoa(r.creates):
				case e != nil:
					b.Errorf("%s: %d pods created, the ledger's used pods says %s", ns, r.creates, counted)
				default:
					// The built-in plugin's figure is Kubernetes' own: a
					// miscount there is reported, not the benchmark's failure.
					b.Logf("%s: %d pods created, the built-in plugin's used pods says %s", ns, r.creates, counted)
				}
				b.ReportMetric(r.perSecond(), fmt.Sprintf("creates/s@%d", clients))
				b.ReportMetric(float64(r.quantile(0.99).Microseconds())/1000, fmt.Sprintf("p99-ms@%d", clients))
				b.ReportMetric(float64(r.conflicts), fmt.Sprintf("409s@%d", clients))
			}
		})
	}
	plugin, ledger := results["plugin"], results["ledger"]
	if len(plugin) != len(benchClients) || len(ledger) != len(benchClients) {
		return
	}
	fmt.Printf("\npod creates through kube-apiserver, %d per run (BENCH_CREATES)\n", creates)
	fmt.Printf("%-8s %-7s %10s %9s %9s %6s %6s\n", "clients", "way", "creates/s", "p50", "p99", "409s", "other")
	for i, clients := range benchClients {
		for _, r := range []struct {
			way string
			run benchRun
		}{{"plugin", plugin[i]}, {"ledger", ledger[i]}} {
			fmt.Printf("%-8d %-7s %10.1f %9s %9s %6d %6d\n", clients, r.way, r.run.perSecond(),
				r.run.quantile(0.5).Round(10*time.Microsecond), r.run.quantile(0.99).Round(10*time.Microsecond), r.run.conflicts, r.run.other)
		}
		fmt.Printf("%-8d ledger/plugin: creates/s %.2fx, p99 %.2fx; the webhook took %s a review on average\n", clients,
			ledger[i].perSecond()/plugin[i].perSecond(), float64(ledger[i].quantile(0.99))/float64(plugin[i].quantile(0.99)),
			ledger[i].webhookMean.Round(10*time.Microsecond))
		fmt.Printf("%-8d the ledger appended %.0f Reserve events for %d creates; %.0f of its appends lost the namespace's compare-and-swap\n",
			clients, ledger[i].appends, ledger[i].creates, ledger[i].casConflicts)
	}
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
