package ledgertest

import (
	"context"
	"fmt"
	"net"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/quotaledger/quota/ledger"
)

// ClusterReadyTimeout bounds the wait for a cluster's members to elect a
// JetStream meta leader.
const ClusterReadyTimeout = 60 * time.Second

// Cluster is a JetStream cluster of embedded servers in this process, on
// loopback, each storing in a t.TempDir() of its own.
type Cluster struct {
	t testing.TB
	// Members are the running servers; a stopped one is nil until Restart.
	Members []*ledger.Embedded
	// Mesh carries the members' routes: Mesh.Cut(i) partitions member i.
	Mesh    *Mesh
	configs []ledger.EmbeddedConfig
	mu      sync.Mutex
}

// FreePorts returns n TCP ports free on loopback when asked (another
// process may take one before it is used).
func FreePorts(t testing.TB, n int) []int {
	t.Helper()
	var ports []int
	var listeners []net.Listener
	for range n {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		listeners = append(listeners, l)
		ports = append(ports, l.Addr().(*net.TCPAddr).Port)
	}
	for _, l := range listeners {
		l.Close()
	}
	return ports
}

// StartCluster starts n members named m1, m2, ..., each routing to all
// through a Mesh of relays,
// waits until they have a meta leader, and stops them when the test ends.
func StartCluster(t testing.TB, n int) *Cluster {
	t.Helper()
	ports := FreePorts(t, n)
	c := &Cluster{t: t, Members: make([]*ledger.Embedded, n), Mesh: StartMesh(t, ports)}
	for i := range n {
		c.configs = append(c.configs, ledger.EmbeddedConfig{
			Port: ledger.RandomPort, StoreDir: t.TempDir(), ServerName: fmt.Sprintf("m%d", i+1),
			Cluster: ledger.ClusterConfig{Name: "ledgertest", Port: ports[i], Routes: c.Mesh.Routes[i], Advertise: c.Mesh.Advertise[i]},
		})
	}
	// Members start together: each waits for the others' routes.
	var wg sync.WaitGroup
	errs := make([]error, n)
	for i := range n {
		wg.Go(func() {
			var err error
			c.Members[i], err = ledger.StartEmbedded(c.configs[i])
			errs[i] = err
		})
	}
	wg.Wait()
	t.Cleanup(c.stopAll)
	for i, err := range errs {
		if err != nil {
			t.Fatalf("start member m%d: %v", i+1, err)
		}
	}
	c.WaitReady()
	return c
}

// Stop shuts member i down, as a crash looks to the others: its routes
// close.
func (c *Cluster) Stop(i int) {
	c.mu.Lock()
	m := c.Members[i]
	c.Members[i] = nil
	c.mu.Unlock()
	if m != nil {
		m.Shutdown()
	}
}

// Restart starts member i again on its store.
func (c *Cluster) Restart(i int) {
	c.t.Helper()
	m, err := ledger.StartEmbedded(c.configs[i])
	if err != nil {
		c.t.Fatalf("restart member m%d: %v", i+1, err)
	}
	c.mu.Lock()
	c.Members[i] = m
	c.mu.Unlock()
}

func (c *Cluster) stopAll() {
	for i := range c.Members {
		c.Stop(i)
	}
}

// URLs are the client URLs of the running members but those of except,
// comma-separated, as nats.Connect takes them.
func (c *Cluster) URLs(except ...int) string {
	c.mu.Lock()
	defer c.mu.Unlock()
	var urls []string
	for i, m := range c.Members {
		if m != nil && !slices.Contains(except, i) {
			urls = append(urls, m.ClientURL())
		}
	}
	return strings.Join(urls, ",")
}

// Connect connects to the running members but those of except,
// reconnecting for ever, and closes the connection when the test ends.
// Told nothing of other servers, the client stays with those.
func (c *Cluster) Connect(except ...int) (*nats.Conn, jetstream.JetStream) {
	c.t.Helper()
	nc, err := nats.Connect(c.URLs(except...), nats.MaxReconnects(-1), nats.ReconnectWait(100*time.Millisecond), nats.IgnoreDiscoveredServers())
	if err != nil {
		c.t.Fatal(err)
	}
	c.t.Cleanup(nc.Close)
	js, err := jetstream.New(nc)
	if err != nil {
		c.t.Fatal(err)
	}
	return nc, js
}

// WaitReady waits until the running members answer JetStream's account
// information, which takes a meta leader.
func (c *Cluster) WaitReady() {
	c.t.Helper()
	_, js := c.Connect()
	WaitJetStream(c.t, js, ClusterReadyTimeout)
}

// WaitJetStream waits, at most within, until js answers JetStream's
// account information: a cluster's members have a meta leader.
func WaitJetStream(t testing.TB, js jetstream.JetStream, within time.Duration) {
	t.Helper()
	deadline := time.Now().Add(within)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		_, err := js.AccountInfo(ctx)
		cancel()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("the cluster's JetStream did not get ready within %s: %v", within, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// Leader returns the index of the member that leads stream, waiting
// for one.
func (c *Cluster) Leader(js jetstream.JetStream, stream string) int {
	c.t.Helper()
	deadline := time.Now().Add(ClusterReadyTimeout)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		s, err := js.Stream(ctx, stream)
		cancel()
		if err == nil && s.CachedInfo().Cluster != nil {
			leader := s.CachedInfo().Cluster.Leader
			c.mu.Lock()
			for i, m := range c.Members {
				if m != nil && c.configs[i].ServerName == leader {
					c.mu.Unlock()
					return i
				}
			}
			c.mu.Unlock()
		}
		if time.Now().After(deadline) {
			c.t.Fatalf("stream %s has no leader among the running members within %s (%v)", stream, ClusterReadyTimeout, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// OpenStream opens the ledger's streams with cfg on the cluster, asking
// again while the cluster cannot answer or place them yet (a meta leader
// that does not know every member online yet).
func (c *Cluster) OpenStream(js jetstream.JetStream, cfg ledger.Config) *ledger.Stream {
	c.t.Helper()
	deadline := time.Now().Add(ClusterReadyTimeout)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		s, err := ledger.Open(ctx, js, cfg)
		cancel()
		if err == nil {
			return s
		}
		if !ledger.Unavailable(err) || time.Now().After(deadline) {
			c.t.Fatalf("open the streams on the cluster: %v", err)
		}
		time.Sleep(250 * time.Millisecond)
	}
}
