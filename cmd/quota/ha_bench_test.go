//go:build ha

package main

import (
	"fmt"
	"os"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"
)

// benchHAAdmissions is the number of reserving admissions each run of
// BenchmarkHA/reserve makes (BENCH_HA_ADMISSIONS overrides it).
const benchHAAdmissions = 3000

// BenchmarkHA measures, through the binary on loopback (make bench-ha):
// reserving admissions (pod creates into a quota they all fit) from 1 and
// 32 clients, on one member and on three (each client on one member, the
// clients spread over them); and, under 16 clients, the longest time
// without an answer deciding an admission while the member leading the
// log is killed (SIGKILL) and while one is restarted in lame-duck mode
// (SIGTERM). Each figure is reported with the run's own.
func BenchmarkHA(b *testing.B) {
	n := benchHAAdmissions
	if s := os.Getenv("BENCH_HA_ADMISSIONS"); s != "" {
		var err error
		if n, err = strconv.Atoi(s); err != nil || n <= 0 {
			b.Fatalf("BENCH_HA_ADMISSIONS %q: want a positive count", s)
		}
	}
	for _, members := range []int{1, 3} {
		for _, clients := range []int{1, 32} {
			b.Run(fmt.Sprintf("reserve/members=%d/clients=%d", members, clients), func(b *testing.B) {
				for range b.N {
					benchReserve(b, members, clients, n)
				}
			})
		}
	}
	b.Run("gap/leader-killed", func(b *testing.B) {
		for range b.N {
			benchGap(b, func(c *haCluster) { c.procs[c.leader(0)].kill() })
		}
	})
	b.Run("gap/lame-duck", func(b *testing.B) {
		for range b.N {
			benchGap(b, func(c *haCluster) { c.procs[c.leader(0)].stop() })
		}
	})
}

// benchReserve makes n reserving admissions from clients clients on
// members members and reports their rate and latency.
func benchReserve(b *testing.B, members, clients, n int) {
	b.StopTimer()
	var urls []string
	var first *ledgerProc
	if members == 1 {
		first = startServer(b, b.TempDir())
		urls = []string{first.url}
	} else {
		c := startHA(b)
		first = c.procs[0]
		for i := range c.procs {
			urls = append(urls, c.url(i))
		}
	}
	const quota = "apiVersion: v1\nkind: ResourceQuota\nmetadata:\n  name: pods\n  namespace: bench\nspec:\n  hard:\n    pods: \"1000000\"\n"
	first.mustRun("ingest", fileWriter(b, b.TempDir())("quota.yaml", quota))
	describedUsed(b, first, "bench", "pods", "pods") // the quota is in the projection
	var mu sync.Mutex
	var took []time.Duration
	failures := 0
	var wg sync.WaitGroup
	b.StartTimer()
	start := time.Now()
	for k := range clients {
		a := newAdmitter(b, urls[k%len(urls)])
		wg.Go(func() {
			for i := k; i < n; i += clients {
				uid := fmt.Sprintf("c%d-%d", k, i)
				began := time.Now()
				v, _ := a.admitPod("bench", "p-"+uid, uid, haAnswerTimeout)
				d := time.Since(began)
				mu.Lock()
				took = append(took, d)
				if v != allowed {
					failures++
				}
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	elapsed := time.Since(start)
	b.StopTimer()
	if failures > 0 {
		b.Errorf("%d of %d admissions not allowed", failures, n)
	}
	slices.Sort(took)
	b.ReportMetric(float64(n)/elapsed.Seconds(), "admissions/s")
	b.ReportMetric(float64(took[len(took)/2].Microseconds())/1000, "p50-ms")
	b.ReportMetric(float64(took[len(took)*99/100].Microseconds())/1000, "p99-ms")
}

// benchGap runs 16 clients against three members, does fault to the
// cluster, and reports the longest time without a decided answer from
// the fault until the clients have had 300 more.
func benchGap(b *testing.B, fault func(*haCluster)) {
	b.StopTimer()
	c := startHA(b, "--reservation-ttl", haReservationTTL)
	l := c.startLoad(func(int) string { return c.urls() })
	l.waitDecided(b, 300, time.Minute)
	b.StartTimer()
	at := time.Now()
	fault(c)
	l.waitDecided(b, 300, 2*time.Minute)
	gap := l.longestGap(at, time.Now())
	b.StopTimer()
	l.halt()
	b.ReportMetric(gap.Seconds(), "longest-gap-s")
	b.ReportMetric(float64(len(l.y.failures)), "failed")
}
