package main

import (
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/quotaledger/quota/ledger"
	"github.com/quotaledger/quota/ledger/ledgertest"
	"github.com/quotaledger/quota/projector"
)

// TestServeOnAClusterKeepsReplicas runs serve against a three-node NATS
// cluster, first with one copy of each stream, then with --replicas 3: the
// ledger's streams and its snapshots' object store then have three
// copies, and the ledger works on them.
func TestServeOnAClusterKeepsReplicas(t *testing.T) {
	dir := t.TempDir()
	const nodes = 3
	routePorts := make([]int, nodes)
	for i := range routePorts {
		routePorts[i] = freePort(t)
	}
	var routes []string
	for _, p := range routePorts {
		routes = append(routes, fmt.Sprintf("nats://127.0.0.1:%d", p))
	}
	var servers []*server.Server
	for i := range nodes {
		servers = append(servers, startNATS(t, &server.Options{
			ServerName: fmt.Sprintf("n%d", i+1),
			JetStream:  true, StoreDir: filepath.Join(dir, fmt.Sprintf("n%d", i+1)),
			Cluster: server.ClusterOpts{Name: "quota-test", Host: "127.0.0.1", Port: routePorts[i]},
			Routes:  server.RoutesFromStr(strings.Join(routes, ",")),
		}))
	}
	url := servers[0].ClientURL()
	ledgertest.WaitJetStream(t, jetStreamAt(t, url), 30*time.Second)

	// A first server makes the streams with one copy and takes the events;
	// the next one, with --replicas 3, raises the copies.
	data := filepath.Join(dir, "data")
	s := startServer(t, data, "--nats", url)
	sample := filepath.Join(samplesDir, "sample-team-a")
	s.mustRun("ingest", filepath.Join(sample, "events.jsonl"))
	s.stop()
	s = startServer(t, data, "--nats", url, "--replicas", "3")
	want, err := os.ReadFile(filepath.Join(sample, "describe.txt"))
	if err != nil {
		t.Fatal(err)
	}
	if got := s.mustRun("describe", "-n", "sample-team-a"); strings.TrimSpace(got) != strings.TrimSpace(string(want)) {
		t.Errorf("describe on the cluster:\n%s\nwant:\n%s", got, want)
	}
	js := jetStreamAt(t, url)
	// The snapshots' object store is the stream OBJ_<bucket>.
	for _, name := range []string{ledger.DefaultStreamName, ledger.DefaultRejectStreamName, "OBJ_" + projector.DefaultSnapshotBucket} {
		// Raised from one copy, a stream elects a leader of its new group
		// and copies its messages over: wait for that.
		deadline := time.Now().Add(30 * time.Second)
		for {
			st, err := js.Stream(context.Background(), name)
			if err != nil {
				t.Fatal(err)
			}
			info := st.CachedInfo()
			if info.Config.Replicas == 3 && info.Cluster != nil && info.Cluster.Leader != "" && currentReplicas(info.Cluster) == 2 {
				break
			}
			if time.Now().After(deadline) {
				t.Errorf("stream %s 30 s after serve asked for 3 copies: %d replicas configured, cluster %+v; want a leader and two current followers", name, info.Config.Replicas, info.Cluster)
				break
			}
			time.Sleep(100 * time.Millisecond)
		}
	}
}

// freePort returns a TCP port free on loopback when asked.
func freePort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// currentReplicas counts a stream's followers that are caught up.
func currentReplicas(c *jetstream.ClusterInfo) int {
	n := 0
	for _, r := range c.Replicas {
		if r.Current {
			n++
		}
	}
	return n
}

// jetStreamAt connects to the NATS server at url for the test's own
// checks, closed when the test ends.
func jetStreamAt(t *testing.T, url string) jetstream.JetStream {
	t.Helper()
	nc, err := nats.Connect(url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	return js
}

// startNATS starts an in-process NATS server on opts (on loopback, a free
// port, quiet), stopped when the test ends.
func startNATS(t *testing.T, opts *server.Options) *server.Server {
	t.Helper()
	opts.Host, opts.Port, opts.NoSigs, opts.NoLog = "127.0.0.1", server.RANDOM_PORT, true, true
	ns, err := server.NewServer(opts)
	if err != nil {
		t.Fatal(err)
	}
	ns.Start()
	t.Cleanup(ns.Shutdown)
	if !ns.ReadyForConnections(10 * time.Second) {
		t.Fatal("the NATS server did not get ready")
	}
	return ns
}
