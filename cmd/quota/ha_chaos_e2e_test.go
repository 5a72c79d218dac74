//go:build ha

package main

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/quotaledger/quota/ledger"
	"github.com/quotaledger/quota/projector"
)

// The tests of this file run three `quota serve` members through faults
// under load, each for a minute or more: `make chaos` runs them (go test
// -tags ha), `make test` does not.

// Load of the fault tests.
const (
	haClients         = 16
	haNamespaces      = 8
	haAnswerTimeout   = 15 * time.Second
	haReservationTTL  = "30m"
	haWorkloadEvents  = 20000
	haRandomKillsMin  = 20
	haSettleAfterHeal = 20 * time.Second
)

// haLoad is haClients admitters asking for pods into haNamespaces
// namespaces until halted, each through the members its urls give it.
type haLoad struct {
	y    *tally
	stop chan struct{}
	wg   sync.WaitGroup

	mu      sync.Mutex
	answers []time.Time // when each decided (allowed or denied) answer came
}

// podsHard is the pods quota of the load's namespace i: 50, 200, 450,
// ..., so that some fill up early, their last units raced for, and
// others take reservations to the end.
func podsHard(i int) int { return 50 * (i + 1) * (i + 1) }

// namespacesOfLoad are the load's namespaces.
func namespacesOfLoad() []string {
	var ns []string
	for i := range haNamespaces {
		ns = append(ns, fmt.Sprintf("load-%d", i))
	}
	return ns
}

// startLoad gives each namespace of the load its quota of podsHard pods
// (through member 0) and starts the admitters; urls(k) are client k's
// servers.
func (c *haCluster) startLoad(urls func(k int) string) *haLoad {
	c.t.Helper()
	var quotas strings.Builder
	for i, ns := range namespacesOfLoad() {
		fmt.Fprintf(&quotas, "apiVersion: v1\nkind: ResourceQuota\nmetadata:\n  name: pods\n  namespace: %s\nspec:\n  hard:\n    pods: \"%d\"\n---\n", ns, podsHard(i))
	}
	c.mustRun(0, "ingest", fileWriter(c.t, c.t.TempDir())("quotas.yaml", quotas.String()))
	c.waitApplied() // each member holds the quotas
	l := &haLoad{y: newTally(), stop: make(chan struct{})}
	namespaces := namespacesOfLoad()
	for k := range haClients {
		a := newAdmitter(c.t, urls(k))
		l.wg.Go(func() {
			for n := 0; ; n++ {
				select {
				case <-l.stop:
					return
				default:
				}
				uid := fmt.Sprintf("c%d-%d", k, n)
				ns := namespaces[(k+n)%len(namespaces)]
				v, why := a.admitPod(ns, "p-"+uid, uid, haAnswerTimeout)
				l.y.add(ns, uid, v, why)
				if v != failed {
					l.mu.Lock()
					l.answers = append(l.answers, time.Now())
					l.mu.Unlock()
				}
			}
		})
	}
	return l
}

// halt stops the admitters and waits for their last answers.
func (l *haLoad) halt() {
	close(l.stop)
	l.wg.Wait()
}

// decided counts the decided answers so far.
func (l *haLoad) decided() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.answers)
}

// waitDecided waits until n more answers are decided than when called,
// at most limit.
func (l *haLoad) waitDecided(t testing.TB, n int, limit time.Duration) {
	t.Helper()
	want := l.decided() + n
	poll(t, fmt.Sprintf("%d more decided admissions", n), limit, func() bool { return l.decided() >= want })
}

// longestGap is the longest time without a decided answer between from
// and to.
func (l *haLoad) longestGap(from, to time.Time) time.Duration {
	l.mu.Lock()
	times := append([]time.Time(nil), l.answers...)
	l.mu.Unlock()
	sort.Slice(times, func(i, j int) bool { return times[i].Before(times[j]) })
	last, gap := from, time.Duration(0)
	for _, at := range times {
		if at.Before(from) || at.After(to) {
			continue
		}
		gap = max(gap, at.Sub(last))
		last = at
	}
	return max(gap, to.Sub(last))
}

// checkAdmissions checks the load's admissions: no namespace admitted
// past its quota; every allowed create's reservation in the log (nothing
// acknowledged lost); each reservation charged once (used equals the
// reservations held); reservations beyond those allowed only for
// requests that failed (an answer lost, a deadline passed); and every
// member's projection equal to a fold of the log (verifyAll).
func (c *haCluster) checkAdmissions(l *haLoad) {
	c.t.Helper()
	c.verifyAll()
	for n, ns := range namespacesOfLoad() {
		hard := podsHard(n)
		allowed := l.y.allowed[ns]
		if len(allowed) > hard {
			c.t.Errorf("%s: %d creates allowed, past its quota of %d pods", ns, len(allowed), hard)
		}
		ids := c.reservedIDs(ns)
		for _, uid := range allowed {
			if !ids[uid] {
				c.t.Errorf("%s's allowed create %s holds no reservation", ns, uid)
			}
		}
		used, err := strconv.Atoi(describedUsed(c.t, c.procs[0], ns, "pods", "pods"))
		if err != nil || used != len(ids) || used > hard || used-len(allowed) > len(l.y.failures) {
			c.t.Errorf("%s uses %d pods (%v) for %d reservations, %d allowed, %d failed; quota %d",
				ns, used, err, len(ids), len(allowed), len(l.y.failures), hard)
		}
	}
}

// verifyAll runs replay --verify against every member, once the log's
// replicas are all current and each member has applied everything the
// log holds. A verify that fails for want of a leader (a cluster that
// has just healed elects some again) is run again, at most
// verifyAttemptsMax times.
func (c *haCluster) verifyAll() {
	c.t.Helper()
	poll(c.t, "every replica of the log current", haServeTimeout, func() bool {
		out, _, code := c.run(0, "status", "-o", "json")
		var st projector.Status
		if code != 0 || json.Unmarshal([]byte(out), &st) != nil || st.Log.Leader == "" || len(st.Log.Peers) != 2 {
			return false
		}
		return st.Log.Peers[0].Current && st.Log.Peers[1].Current
	})
	c.waitApplied()
	for i := range c.procs {
		for attempt := 1; ; attempt++ {
			out, errOut, code := c.verify(i)
			if code == 2 && attempt < verifyAttemptsMax && (strings.Contains(errOut, "no response") || strings.Contains(errOut, "timeout")) {
				c.t.Logf("replay --verify at m%d, attempt %d: %s", i+1, attempt, strings.TrimSpace(errOut))
				continue
			}
			if code != 0 || !strings.HasPrefix(out, "no drift at seq ") {
				c.t.Errorf("replay --verify at m%d: exit %d\n%s%s", i+1, code, out, errOut)
			}
			break
		}
	}
}

// verifyAttemptsMax bounds the runs of replay --verify against a member.
const verifyAttemptsMax = 3

// ingestAll starts quota ingest of file through every member, returning
// at once.
func (c *haCluster) ingestAll(file string) *exec.Cmd {
	c.t.Helper()
	cmd := exec.Command(binary, "ingest", "-q", file, "--server", c.urls())
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		c.t.Fatal(err)
	}
	return cmd
}

// checkIngested runs the ingest of file again once its first run has
// ended: after a first run that succeeded, every event is already in the
// log (nothing acknowledged lost); after one that failed, the second
// appends the rest and succeeds.
func (c *haCluster) checkIngested(first *exec.Cmd, file string) {
	c.t.Helper()
	err := first.Wait()
	out, errOut, code := c.run(0, "ingest", file)
	out += errOut
	if code != 0 {
		c.t.Fatalf("ingest again after the fault: exit %d\n%s", code, out)
	}
	if err == nil && !strings.Contains(out, " 0 appended") {
		c.t.Errorf("the ingest that succeeded through the fault, run again, appends more: %s", out)
	}
	c.t.Logf("ingest through the fault: %v; again: %s", err, strings.TrimSpace(out))
}

// reportFailures logs the load's failures, each of which must say why.
func (l *haLoad) reportFailures(t *testing.T) {
	t.Helper()
	for _, f := range l.y.failures {
		if strings.HasSuffix(f, ": ") {
			t.Errorf("a failure that says nothing: %q", f)
		}
	}
	shown := l.y.failures[:min(len(l.y.failures), 10)]
	t.Logf("%d decided, %d failed; first failures: %s", l.decided(), len(l.y.failures), strings.Join(shown, "\n  "))
}

// TestHALeaderKilledUnderLoad kills the member leading the log with
// SIGKILL while 16 clients admit pods through all three members and an
// ingest runs: nothing acknowledged is lost, no namespace is admitted
// past its quota, each failure says why, every member's projection passes
// replay --verify, and the killed member, started again, catches up.
func TestHALeaderKilledUnderLoad(t *testing.T) {
	c := startHA(t, "--reservation-ttl", haReservationTTL)
	l := c.startLoad(func(int) string { return c.urls() })
	events := writeWorkload(t, 40, haWorkloadEvents)
	ingest := c.ingestAll(events)
	l.waitDecided(t, 200, time.Minute)
	leader := c.leader(0)
	killed := time.Now()
	c.procs[leader].kill()
	l.waitDecided(t, 300, 2*time.Minute)
	t.Logf("longest gap in decided answers from the kill: %s", l.longestGap(killed, time.Now()))
	c.restart(leader)
	l.waitDecided(t, 200, time.Minute)
	l.halt()
	c.checkIngested(ingest, events)
	l.reportFailures(t)
	c.checkAdmissions(l)
}

// TestHALameDuckUnderLoad stops each member in turn with SIGTERM and
// starts it again, as a rolling restart does, while 16 clients admit pods
// through all three: no admission fails.
func TestHALameDuckUnderLoad(t *testing.T) {
	c := startHA(t, "--reservation-ttl", haReservationTTL)
	l := c.startLoad(func(int) string { return c.urls() })
	l.waitDecided(t, 200, time.Minute)
	for _, i := range []int{c.leader(0), 0, 1, 2} {
		stopped := time.Now()
		c.procs[i].stop()
		l.waitDecided(t, 100, time.Minute)
		t.Logf("m%d stopped: longest gap in decided answers %s", i+1, l.longestGap(stopped, time.Now()))
		c.restart(i)
		l.waitDecided(t, 100, time.Minute)
	}
	l.halt()
	l.reportFailures(t)
	if n := len(l.y.failures); n > 0 {
		t.Errorf("%d admissions failed through a rolling restart, want none", n)
	}
	c.checkAdmissions(l)
}

// TestHAPartitionedMemberStopsDeciding cuts the routes of the member
// leading the log while clients of its own and clients of the other two
// admit pods: once it knows it is cut off it decides nothing (no create
// and no dry run allowed from its projection, which misses what the
// others append), the other two go on, and once healed it converges and
// decides again.
func TestHAPartitionedMemberStopsDeciding(t *testing.T) {
	c := startHA(t, "--reservation-ttl", haReservationTTL)
	cut := c.leader(0)
	l := c.startLoad(func(k int) string {
		if k%4 == 0 {
			return c.url(cut) // a quarter of the clients on the member cut off
		}
		return c.urls(cut)
	})
	l.waitDecided(t, 200, time.Minute)
	c.mesh.Cut(cut)
	cutAt := time.Now()
	alone := newAdmitter(t, c.url(cut))
	l.waitDecided(t, 300, 2*time.Minute)
	// What the member cut off answers once it knows it is: nothing
	// decided, a dry run included; it says so once the request's time
	// is up.
	for k := range 3 {
		if v, why := alone.admitDryRun("load-0", fmt.Sprintf("dry-%d", k), haAnswerTimeout); v != failed || !strings.Contains(why, "503") || !strings.Contains(why, "quorum") {
			t.Errorf("a dry run at the member cut off, %s after the cut: %v %q; want it failed, 503 naming the quorum", time.Since(cutAt).Round(time.Millisecond), v, why)
		}
	}
	c.mesh.Heal(cut)
	healed := time.Now()
	poll(t, "the healed member to decide again", haSettleAfterHeal, func() bool {
		v, _ := alone.admitDryRun("load-0", "dry-healed", 5*time.Second)
		return v != failed
	})
	t.Logf("the healed member decides again %s after the heal", time.Since(healed).Round(time.Millisecond))
	l.waitDecided(t, 100, time.Minute)
	l.halt()
	l.reportFailures(t)
	l.y.mu.Lock()
	for _, f := range l.y.failures {
		if !strings.Contains(f, "quorum") && !strings.Contains(f, "timeout") && !strings.Contains(f, "deadline") && !strings.Contains(f, "unavailable") && !strings.Contains(f, "leader") {
			t.Errorf("a failure at the cut that does not say it is one: %s", f)
		}
	}
	l.y.mu.Unlock()
	c.checkAdmissions(l)
}

// TestHAWholeClusterRestart stops all three members and starts them
// again: every quota's usage, and every reservation, is as before.
func TestHAWholeClusterRestart(t *testing.T) {
	c := startHA(t, "--reservation-ttl", haReservationTTL)
	l := c.startLoad(func(int) string { return c.urls() })
	l.waitDecided(t, 300, time.Minute)
	l.halt()
	before := c.mustRun(0, "describe", "-A", "-o", "json")
	for i := range c.procs {
		c.procs[i].stop()
	}
	for i := range c.procs {
		c.spawn(i)
	}
	for i := range c.procs {
		c.procs[i].waitServing(haServeTimeout)
	}
	for i := range c.procs {
		if after := c.mustRun(i, "describe", "-A", "-o", "json"); usedOf(t, after) != usedOf(t, before) {
			t.Errorf("m%d after the restart: %s\nwant %s", i+1, usedOf(t, after), usedOf(t, before))
		}
	}
	c.checkAdmissions(l)
}

// usedOf lists each quota's used figures of describe -A -o json.
func usedOf(t *testing.T, describe string) string {
	t.Helper()
	var e expectation
	if err := json.Unmarshal([]byte(describe), &e); err != nil {
		t.Fatal(err)
	}
	var lines []string
	for _, q := range e.Items {
		lines = append(lines, q.Namespace+"/"+q.Name+" "+statusStrings(q.Status.Used))
	}
	return strings.Join(lines, "; ")
}

// TestHARandomKills kills a random member, with SIGKILL or SIGTERM, at
// random moments, and starts it again, at least haRandomKillsMin times,
// under load and with an ingest running; the seed (HA_SEED, else the
// time) is printed, and replays the same choices.
func TestHARandomKills(t *testing.T) {
	seed := uint64(time.Now().UnixNano())
	if s := os.Getenv("HA_SEED"); s != "" {
		var err error
		if seed, err = strconv.ParseUint(s, 10, 64); err != nil {
			t.Fatalf("HA_SEED %q: %v", s, err)
		}
	}
	t.Logf("seed %d (HA_SEED=%d replays it)", seed, seed)
	rng := rand.New(rand.NewPCG(seed, 0))
	c := startHA(t, "--reservation-ttl", haReservationTTL)
	l := c.startLoad(func(int) string { return c.urls() })
	events := writeWorkload(t, seed, haWorkloadEvents)
	ingest := c.ingestAll(events)
	for k := range haRandomKillsMin {
		// A random moment: after a random number of decided answers.
		l.waitDecided(t, 20+rng.IntN(200), time.Minute)
		i := rng.IntN(3)
		how := "SIGKILL"
		if rng.IntN(3) == 0 {
			how = "SIGTERM"
			c.procs[i].stop()
		} else {
			c.procs[i].kill()
		}
		t.Logf("kill %d: m%d by %s", k+1, i+1, how)
		l.waitDecided(t, rng.IntN(100), 2*time.Minute)
		c.restart(i)
	}
	l.waitDecided(t, 100, time.Minute)
	l.halt()
	c.checkIngested(ingest, events)
	l.reportFailures(t)
	c.checkAdmissions(l)
}

// leader is the member that leads the log's replicas, as member i sees it
// once one does and its followers are current.
func (c *haCluster) leader(i int) int {
	c.t.Helper()
	var last ledger.LogStatus
	deadline := time.Now().Add(haServeTimeout)
	for time.Now().Before(deadline) {
		out, _, code := c.run(i, "status", "-o", "json")
		var st projector.Status
		if code == 0 && json.Unmarshal([]byte(out), &st) == nil {
			last = st.Log
			for m := range c.ports {
				if st.Log.Leader == fmt.Sprintf("m%d", m+1) {
					return m
				}
			}
		}
		time.Sleep(200 * time.Millisecond) // poll interval, bounded by the deadline
	}
	c.t.Fatalf("no leader of the log within %s, as m%d sees it: %+v", haServeTimeout, i+1, last)
	return -1
}

// admitDryRun asks whether pod name could be created in namespace ns,
// as a dry run, which reserves nothing.
func (a *admitter) admitDryRun(ns, name string, timeout time.Duration) (verdict, string) {
	return a.review(ns, name, "dry-"+name, true, timeout)
}

// restart starts member i again on its data and waits until it serves.
func (c *haCluster) restart(i int) {
	c.t.Helper()
	c.spawn(i).waitServing(haServeTimeout)
}

// urls are the members' client URLs but those of except, as --server and
// nats.Connect take them.
func (c *haCluster) urls(except ...int) string {
	var urls []string
	for i := range c.ports {
		if !slices.Contains(except, i) {
			urls = append(urls, c.url(i))
		}
	}
	return strings.Join(urls, ",")
}
