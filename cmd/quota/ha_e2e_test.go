package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	admissionv1 "k8s.io/api/admission/v1"

	"github.com/quotaledger/quota/ledger"
	"github.com/quotaledger/quota/ledger/ledgertest"
	"github.com/quotaledger/quota/projector"
)

// haServeTimeout bounds the wait for a member to serve: a cluster
// electing its leaders, a member catching up.
const haServeTimeout = 90 * time.Second

// haCluster is three `quota serve` members on loopback forming one
// embedded JetStream cluster, with three replicas of the log; their
// routes go through relays (ledgertest.Mesh), which cut a member off.
// Each member keeps its client port across restarts.
type haCluster struct {
	t     testing.TB
	mesh  *ledgertest.Mesh
	dirs  []string
	args  [][]string
	ports []int
	procs []*ledgerProc
}

// startHA starts the three members, extra added to each one's flags, and
// waits until every one serves.
func startHA(t testing.TB, extra ...string) *haCluster {
	t.Helper()
	const n = 3
	ports := ledgertest.FreePorts(t, 2*n)
	c := &haCluster{t: t, mesh: ledgertest.StartMesh(t, ports[n:], ports[:n]...), ports: ports[:n], procs: make([]*ledgerProc, n)}
	for i := range n {
		c.dirs = append(c.dirs, t.TempDir())
		c.args = append(c.args, append([]string{
			"--listen", net.JoinHostPort("127.0.0.1", strconv.Itoa(ports[i])),
			"--server-name", fmt.Sprintf("m%d", i+1),
			"--cluster-listen", net.JoinHostPort("127.0.0.1", strconv.Itoa(ports[n+i])),
			"--routes", strings.Join(c.mesh.Routes[i], ","),
			"--cluster-advertise", c.mesh.Advertise[i],
			"--replicas", "3",
		}, extra...))
	}
	for i := range n {
		c.spawn(i)
	}
	for i := range n {
		c.procs[i].waitServing(haServeTimeout)
	}
	return c
}

// spawn starts member i, without waiting for it to serve. With
// $HA_LOGS set, its log is written there when the test ends.
func (c *haCluster) spawn(i int) *ledgerProc {
	p := spawnServer(c.t, c.dirs[i], c.args[i]...)
	c.procs[i] = p
	if dir := os.Getenv("HA_LOGS"); dir != "" {
		name := filepath.Join(dir, fmt.Sprintf("%s-m%d-%d.log", c.t.Name(), i+1, time.Now().UnixNano()))
		c.t.Cleanup(func() { _ = os.WriteFile(name, []byte(p.logs.String()), 0o644) })
	}
	return p
}

// url is member i's client URL.
func (c *haCluster) url(i int) string {
	return "nats://" + net.JoinHostPort("127.0.0.1", strconv.Itoa(c.ports[i]))
}

// run runs a client subcommand against member i.
func (c *haCluster) run(i int, args ...string) (string, string, int) {
	c.t.Helper()
	return c.procs[i].run(args...)
}

// mustRun runs a client subcommand against member i; it must succeed.
func (c *haCluster) mustRun(i int, args ...string) string {
	c.t.Helper()
	out, errOut, code := c.run(i, args...)
	if code != 0 {
		c.t.Fatalf("quota %s at m%d: exit %d\nstdout: %s\nstderr: %s\nlog:\n%s", strings.Join(args, " "), i+1, code, out, errOut, c.procs[i].logs)
	}
	return out
}

// name is member i's --server-name.
func (c *haCluster) name(i int) string { return fmt.Sprintf("m%d", i+1) }

// status is member i's quota status: asked of it by name, since NATS
// hands a query to any member.
func (c *haCluster) status(i int) projector.Status {
	c.t.Helper()
	var st projector.Status
	if err := json.Unmarshal([]byte(c.mustRun(i, "status", "-o", "json", "--member", c.name(i))), &st); err != nil {
		c.t.Fatal(err)
	}
	if st.Projection.Server != c.name(i) {
		c.t.Fatalf("quota status --member %s answered by %s", c.name(i), st.Projection.Server)
	}
	return st
}

// waitApplied waits until every member's projection has applied what the
// log holds now.
func (c *haCluster) waitApplied() {
	c.t.Helper()
	last := c.status(0).Log.LastSeq
	for i := range c.procs {
		poll(c.t, fmt.Sprintf("m%d to apply seq %d", i+1, last), haServeTimeout, func() bool {
			return c.status(i).Projection.AppliedSeq >= last
		})
	}
}

// verify runs replay --verify on member i's projection.
func (c *haCluster) verify(i int) (stdout, stderr string, code int) {
	c.t.Helper()
	return c.run(i, "replay", "--verify", "--member", c.name(i))
}

// admitter asks a ledger to admit pod creates over quota.admit.<ns>, as
// quota webhook relays kube-apiserver's reviews: through
// ledger.RequestAnswer, moving to another member when one goes into
// lame-duck mode.
type admitter struct {
	nc *nats.Conn
}

// newAdmitter connects to the servers at urls, for ever reconnecting.
func newAdmitter(t testing.TB, urls string) *admitter {
	t.Helper()
	nc, err := nats.Connect(urls, nats.MaxReconnects(-1), nats.ReconnectWait(50*time.Millisecond), nats.ReconnectBufSize(-1),
		nats.LameDuckModeHandler(func(nc *nats.Conn) { _ = nc.ForceReconnect() }))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	return &admitter{nc: nc}
}

// verdict is what an admission request came to.
type verdict int

const (
	allowed verdict = iota
	denied
	failed // no answer, or an answer that decides nothing (a 5xx)
)

// admitPod asks to create pod name in namespace ns under review uid. The
// reason is the failure's, or the denial's message.
func (a *admitter) admitPod(ns, name, uid string, timeout time.Duration) (verdict, string) {
	return a.review(ns, name, uid, false, timeout)
}

// review sends the review of a pod create.
func (a *admitter) review(ns, name, uid string, dryRun bool, timeout time.Duration) (verdict, string) {
	pod := fmt.Sprintf(`{"apiVersion":"v1","kind":"Pod","metadata":{"name":%q,"namespace":%q},"spec":{"containers":[{"name":"c","image":"registry.example/app:1"}]}}`, name, ns)
	body := fmt.Sprintf(`{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","request":{"uid":%q,"namespace":%q,"operation":"CREATE","dryRun":%t,`+
		`"kind":{"group":"","version":"v1","kind":"Pod"},"resource":{"group":"","version":"v1","resource":"pods"},"object":%s}}`, uid, ns, dryRun, pod)
	sentTo := a.nc.ConnectedServerName()
	msg, err := ledger.RequestAnswer(context.Background(), a.nc, "quota.admit."+ns, []byte(body), timeout)
	if err != nil {
		return failed, fmt.Sprintf("%v (sent through %s, now on %s after %d reconnects)", err, sentTo, a.nc.ConnectedServerName(), a.nc.Reconnects)
	}
	var review admissionv1.AdmissionReview
	if err := json.Unmarshal(msg.Data, &review); err != nil || review.Response == nil || review.Response.UID != "" && string(review.Response.UID) != uid {
		return failed, fmt.Sprintf("bad reply %s: %v", msg.Data, err)
	}
	r := review.Response
	switch {
	case r.Allowed:
		return allowed, ""
	case r.Result != nil && r.Result.Code == 403:
		return denied, r.Result.Message
	case r.Result != nil:
		return failed, fmt.Sprintf("%d %s", r.Result.Code, r.Result.Message)
	}
	return failed, string(msg.Data)
}

// tally counts the verdicts of a load, per namespace, and keeps the uids
// allowed and the failures' reasons.
type tally struct {
	mu       sync.Mutex
	allowed  map[string][]string // namespace: uids
	denied   map[string]int
	failures []string
}

func newTally() *tally {
	return &tally{allowed: map[string][]string{}, denied: map[string]int{}}
}

func (y *tally) add(ns, uid string, v verdict, why string) {
	y.mu.Lock()
	defer y.mu.Unlock()
	switch v {
	case allowed:
		y.allowed[ns] = append(y.allowed[ns], uid)
	case denied:
		y.denied[ns]++
	default:
		y.failures = append(y.failures, fmt.Sprintf("%s %s: %s", ns, uid, why))
	}
}

// reservedIDs are the reservation ids explain lists for the pods quota
// of namespace ns, as whichever member answers sees them.
func (c *haCluster) reservedIDs(ns string) map[string]bool {
	c.t.Helper()
	ids := map[string]bool{}
	for _, m := range reservedID.FindAllStringSubmatch(c.mustRun(0, "explain", "pods", "-n", ns), -1) {
		ids[m[1]] = true
	}
	return ids
}

var reservedID = regexp.MustCompile(`reserved \(([^,)]+),`)

// TestThreeMembersShareAdmissions runs three members and asks each, from
// a client of its own, to admit pods into one namespace at once: the
// quota's last units go to exactly as many as it holds, whichever member
// decided; every member's describe and replay --verify agree; quota
// status names the leader and the two other members, current.
func TestThreeMembersShareAdmissions(t *testing.T) {
	if testing.Short() {
		t.Skip("runs a three-member cluster")
	}
	c := startHA(t, "--reservation-ttl", "10m")
	write := fileWriter(t, t.TempDir())
	c.mustRun(0, "ingest", write("quota.yaml", "apiVersion: v1\nkind: ResourceQuota\nmetadata:\n  name: pods\n  namespace: team\nspec:\n  hard:\n    pods: \"20\"\n"))
	c.waitApplied()
	y := newTally()
	var wg sync.WaitGroup
	for i := range 3 {
		a := newAdmitter(t, c.url(i))
		wg.Go(func() {
			for k := range 10 {
				uid := fmt.Sprintf("m%d-%d", i+1, k)
				v, why := a.admitPod("team", "p-"+uid, uid, 20*time.Second)
				y.add("team", uid, v, why)
			}
		})
	}
	wg.Wait()
	if len(y.failures) > 0 || len(y.allowed["team"]) != 20 || y.denied["team"] != 10 {
		t.Fatalf("30 creates into a quota of 20 pods, through three members: %d allowed, %d denied, failures %v; want 20 and 10, none",
			len(y.allowed["team"]), y.denied["team"], y.failures)
	}
	ids := c.reservedIDs("team")
	for _, uid := range y.allowed["team"] {
		if !ids[uid] {
			t.Errorf("explain holds no reservation %s, allowed", uid)
		}
	}
	c.waitApplied()
	for i := range 3 {
		if out, errOut, code := c.verify(i); code != 0 || !strings.HasPrefix(out, "no drift at seq ") {
			t.Errorf("replay --verify --member %s: exit %d %q %s", c.name(i), code, out, errOut)
		}
	}
	st := c.status(2)
	if st.Log.Replicas != 3 || st.Log.Leader == "" || len(st.Log.Peers) != 2 {
		t.Fatalf("quota status at m3: %+v; want 3 replicas, a leader, 2 other members", st.Log)
	}
	text := c.mustRun(2, "status")
	for _, p := range st.Log.Peers {
		if !p.Current {
			t.Errorf("member %s is not current: %+v", p.Name, p)
		}
	}
	for m := range 3 {
		if name := fmt.Sprintf("m%d", m+1); !strings.Contains(text, name) {
			t.Errorf("quota status does not name member %s:\n%s", name, text)
		}
	}
}
