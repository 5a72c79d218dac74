package export_test

import (
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/quotaledger/quota/testdata/kubecluster/kubecluster"
)

// Sizes of BenchmarkInitialSync; BENCH_PODS overrides benchPods.
const (
	benchPods          = 20_000
	benchNamespaces    = 20
	benchCreateWorkers = 16
)

// BenchmarkInitialSync measures the initial sync of benchPods pods into
// the log by `quota export`, as a ratio to `quota ingest` of the same
// pods (listed from the same API server, as `kubectl get pods -A -o json`
// prints them) in the same run, each into a ledger of its own; and the
// exporter's peak RSS. Run it with make bench-cluster.
func BenchmarkInitialSync(b *testing.B) {
	pods := benchPods
	if v := os.Getenv("BENCH_PODS"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil {
			b.Fatalf("BENCH_PODS=%q: %v", v, err)
		}
		pods = n
	}
	c := kubecluster.Start(b, kubecluster.Options{APIServerFlags: []string{"--disable-admission-plugins=ResourceQuota"}})
	createPods(b, c, pods)

	// quota ingest of the same pods, as kubectl get pods -A -o json
	// prints them.
	raw, err := c.Client.CoreV1().RESTClient().Get().AbsPath("/api/v1/pods").SetHeader("Accept", "application/json").DoRaw(ctx)
	if err != nil {
		b.Fatal(err)
	}
	file := filepath.Join(b.TempDir(), "pods.json")
	if err := os.WriteFile(file, raw, 0o600); err != nil {
		b.Fatal(err)
	}
	ingestLedger := kubecluster.Serve(b)
	start := time.Now()
	cmd := exec.Command(kubecluster.Quota(b), "ingest", "--server", ingestLedger.URL, file)
	if out, err := cmd.CombinedOutput(); err != nil {
		b.Fatalf("quota ingest: %v\n%s", err, out)
	}
	ingestTook := time.Since(start)

	// quota export into a fresh ledger: from its start until every stream
	// has synced.
	exportLedger := kubecluster.Serve(b)
	start = time.Now()
	x := startExporterB(b, c, exportLedger)
	deadline := time.Now().Add(10 * time.Minute)
	for {
		code, body, err := x.get("/readyz")
		if err == nil && code == http.StatusOK && strings.Contains(body, "leading") {
			break
		}
		if x.Exited() || time.Now().After(deadline) {
			b.Fatalf("quota export not ready: %d %s %v\n%s", code, body, err, x.Logs)
		}
		time.Sleep(50 * time.Millisecond)
	}
	exportTook := time.Since(start)
	peak := peakRSS(b, x.Cmd.Process.Pid)
	x.Kill()

	ingestRate := float64(pods) / ingestTook.Seconds()
	exportRate := float64(pods) / exportTook.Seconds()
	b.ReportMetric(exportRate, "export-pods/s")
	b.ReportMetric(ingestRate, "ingest-pods/s")
	b.ReportMetric(exportRate/ingestRate, "export/ingest")
	b.ReportMetric(float64(peak)/(1<<20), "export-peak-RSS-MiB")
	// Printed, not logged: kube-apiserver's logs fill the benchmark's.
	fmt.Printf("%d pods: quota export %s (%.0f pods/s) from its start to ready, quota ingest %s (%.0f pods/s): ratio %.2f (goal >= 0.5); export peak RSS %.1f MiB (goal < 256)",
		pods, exportTook.Round(time.Millisecond), exportRate, ingestTook.Round(time.Millisecond), ingestRate, exportRate/ingestRate, float64(peak)/(1<<20))
	fmt.Println()
	for _, line := range strings.Split(x.Logs.String(), "\n") {
		if strings.Contains(line, "resynced") && strings.Contains(line, "resource=pods") {
			fmt.Printf("export log: %s\n", line)
		}
	}
}

// startExporterB runs `quota export` for a benchmark.
func startExporterB(b *testing.B, c *kubecluster.Cluster, l *kubecluster.Ledger) *exporter {
	b.Helper()
	urls := make(chan string, 1)
	p := kubecluster.StartQuota(b, func(line string) {
		if m := metricsLine.FindStringSubmatch(line); m != nil {
			select {
			case urls <- strings.Trim(m[1], `"`):
			default:
			}
		}
	}, "export", "--server", l.URL, "--kubeconfig", c.Kubeconfig, "--identity", "bench", "--metrics-listen", "127.0.0.1:0")
	x := &exporter{Proc: p, identity: "bench"}
	select {
	case x.metricsURL = <-urls:
	case <-p.Done():
		b.Fatalf("quota export exited\n%s", p.Logs)
	case <-time.After(60 * time.Second):
		b.Fatalf("quota export did not serve metrics\n%s", p.Logs)
	}
	return x
}

// createPods creates n pods over benchNamespaces namespaces.
func createPods(b *testing.B, c *kubecluster.Cluster, n int) {
	b.Helper()
	for i := range benchNamespaces {
		c.CreateNamespace(b, fmt.Sprintf("bench-%d", i))
	}
	work := make(chan int)
	errs := make(chan error, benchCreateWorkers)
	var wg sync.WaitGroup
	for range benchCreateWorkers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range work {
				p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("pod-%d", i), Labels: map[string]string{"app": "bench"}},
					Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "busybox",
						Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: q("100m"), corev1.ResourceMemory: q("64Mi")},
							Limits: corev1.ResourceList{corev1.ResourceCPU: q("200m"), corev1.ResourceMemory: q("128Mi")}}}}}}
				if _, err := c.Client.CoreV1().Pods(fmt.Sprintf("bench-%d", i%benchNamespaces)).Create(ctx, p, metav1.CreateOptions{}); err != nil {
					select {
					case errs <- err:
					default:
					}
					return
				}
			}
		}()
	}
	for i := range n {
		work <- i
	}
	close(work)
	wg.Wait()
	select {
	case err := <-errs:
		b.Fatalf("create pods: %v", err)
	default:
	}
}

// peakRSS is the process's peak resident set size (VmHWM), in bytes.
func peakRSS(b *testing.B, pid int) int64 {
	b.Helper()
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		b.Fatal(err)
	}
	for _, line := range strings.Split(string(data), "\n") {
		if rest, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			f := strings.Fields(rest)
			kb, err := strconv.ParseInt(f[0], 10, 64)
			if err != nil {
				b.Fatal(err)
			}
			return kb << 10
		}
	}
	b.Fatalf("no VmHWM in /proc/%d/status", pid)
	return 0
}
