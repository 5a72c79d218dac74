package ledger_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/quotaledger/quota/ledger"
	"github.com/quotaledger/quota/ledger/ledgertest"
)

// TestClusterConfigIsChecked names each wrong cluster setting.
func TestClusterConfigIsChecked(t *testing.T) {
	routes := []string{"nats://a:6222", "nats://b:6222", "nats://c:6222"}
	for _, tc := range []struct {
		name string
		cfg  ledger.EmbeddedConfig
		want string // "" when valid
	}{
		{"a server of its own", ledger.EmbeddedConfig{StoreDir: "d"}, ""},
		{"a member", ledger.EmbeddedConfig{StoreDir: "d", ServerName: "a", Cluster: ledger.ClusterConfig{Port: 6222, Routes: routes}}, ""},
		{"a member needs a name", ledger.EmbeddedConfig{StoreDir: "d", Cluster: ledger.ClusterConfig{Port: 6222, Routes: routes}}, "ServerName is required"},
		{"a member needs a route port", ledger.EmbeddedConfig{StoreDir: "d", ServerName: "a", Cluster: ledger.ClusterConfig{Routes: routes}}, "Cluster.Port 0 is outside"},
		{"a route port needs routes", ledger.EmbeddedConfig{StoreDir: "d", Cluster: ledger.ClusterConfig{Port: 6222}}, "without Cluster.Routes"},
		{"a route is a nats URL", ledger.EmbeddedConfig{StoreDir: "d", ServerName: "a", Cluster: ledger.ClusterConfig{Port: 6222, Routes: []string{"http://a:6222"}}}, `"http://a:6222": want nats://HOST:PORT`},
		{"a route has a port", ledger.EmbeddedConfig{StoreDir: "d", ServerName: "a", Cluster: ledger.ClusterConfig{Port: 6222, Routes: []string{"nats://a"}}}, `"nats://a": want nats://HOST:PORT`},
		{"a route is listed once", ledger.EmbeddedConfig{StoreDir: "d", ServerName: "a", Cluster: ledger.ClusterConfig{Port: 6222, Routes: append(routes, routes[0])}}, "lists nats://a:6222 twice"},
		{"a cluster name has no dot", ledger.EmbeddedConfig{StoreDir: "d", ServerName: "a", Cluster: ledger.ClusterConfig{Name: "q.1", Port: 6222, Routes: routes}}, `Cluster.Name "q.1"`},
		{"lame duck's grace is within it", ledger.EmbeddedConfig{StoreDir: "d", ServerName: "a", Cluster: ledger.ClusterConfig{Port: 6222, Routes: routes, LameDuckDuration: time.Second, LameDuckGracePeriod: 2 * time.Second}}, "is not shorter than LameDuckDuration"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.cfg.Validate()
			if tc.want == "" {
				if err != nil {
					t.Fatalf("got %v, want valid", err)
				}
				return
			}
			if !errors.Is(err, ledger.ErrInvalidConfig) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("got %v, want ErrInvalidConfig saying %q", err, tc.want)
			}
		})
	}
}

// TestAppendsSurviveTheLossOfTheLeader appends from eight writers to a
// stream replicated on three members and cuts the routes of the member
// leading it halfway, the writers connected to the other two: every
// append is acknowledged (sent again with its message ID while the
// others elect a new leader), and once the cut is healed each event is
// stored exactly once. An append sent again after it was stored is a
// duplicate, even one expecting the subject's last sequence as it was
// before it.
func TestAppendsSurviveTheLossOfTheLeader(t *testing.T) {
	if testing.Short() {
		t.Skip("runs a three-member cluster through a leader election")
	}
	c := ledgertest.StartCluster(t, 3)
	_, js := c.Connect()
	c.OpenStream(js, ledger.Config{Replicas: 3})
	leader := c.Leader(js, ledger.DefaultStreamName)
	_, js = c.Connect(leader)
	// The writers' own bound, above nats-server's longest election
	// timeout (9 s), so that an append in flight at the cut is
	// acknowledged rather than failed.
	s := c.OpenStream(js, ledger.Config{Replicas: 3, AckWaitTimeout: 30 * time.Second})

	const writers, each = 8, 60
	var acked, resent atomic.Int64
	var wg sync.WaitGroup
	errs := make(chan error, writers*each)
	for w := range writers {
		wg.Go(func() {
			for i := range each {
				ev := pod(fmt.Sprintf("ns%d", w), fmt.Sprintf("p%d", i))
				started := time.Now()
				if _, err := s.Append(context.Background(), ev, ledger.AppendOptions{MsgID: ev.Namespace + "/" + ev.Name}); err != nil {
					errs <- fmt.Errorf("append %s/%s: %w", ev.Namespace, ev.Name, err)
					continue
				}
				if time.Since(started) > ledger.AppendAttemptTimeout {
					resent.Add(1)
				}
				acked.Add(1)
			}
		})
	}
	for acked.Load() < writers*each/3 {
		time.Sleep(10 * time.Millisecond)
	}
	c.Mesh.Cut(leader)
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if resent.Load() == 0 {
		t.Errorf("no append waited past one attempt: the cut left none in flight, and nothing was sent again")
	}
	c.Mesh.Heal(leader)

	seen := map[string]int{}
	for _, r := range ledgertest.ReadAll(t, s, 1) {
		seen[r.Event.Namespace+"/"+r.Event.Name]++
	}
	for w := range writers {
		for i := range each {
			if key := fmt.Sprintf("ns%d/p%d", w, i); seen[key] != 1 {
				t.Errorf("%s is stored %d times, want once", key, seen[key])
			}
		}
	}

	// Sent again, an append stored already is a duplicate, its
	// expectation of the subject notwithstanding.
	first, err := s.Append(context.Background(), pod("cas", "a"), ledger.AppendOptions{MsgID: "cas/a", ExpectLastSubjectSeq: new(uint64)})
	if err != nil {
		t.Fatal(err)
	}
	again, err := s.Append(context.Background(), pod("cas", "a"), ledger.AppendOptions{MsgID: "cas/a", ExpectLastSubjectSeq: new(uint64)})
	if err != nil || !again.Duplicate || again.Seq != first.Seq {
		t.Fatalf("the conditional append sent again: %+v, %v; want a duplicate of seq %d", again, err, first.Seq)
	}
}

// TestQuorumIsLostAndFound cuts the routes of the member leading a
// stream of three replicas: it says it is out of contact with the
// quorum within QuorumContactWindow (and a little), before the others
// can have elected a leader without it; they, once they have, say they
// are in contact; and once healed, so does it.
func TestQuorumIsLostAndFound(t *testing.T) {
	if testing.Short() {
		t.Skip("runs a three-member cluster")
	}
	c := ledgertest.StartCluster(t, 3)
	_, js := c.Connect()
	c.OpenStream(js, ledger.Config{Replicas: 3})
	leader := c.Leader(js, ledger.DefaultStreamName)
	// A client attached to the stream keeps what it makes beside it (quota
	// export's bucket) as many times.
	a, err := ledger.Attach(context.Background(), js, ledger.Config{})
	if err != nil {
		t.Fatal(err)
	}
	if got := a.Config().Replicas; got != 3 {
		t.Fatalf("attached to a stream of 3 replicas: Config().Replicas %d", got)
	}
	for i, m := range c.Members {
		waitQuorum(t, m, fmt.Sprintf("m%d with every member up", i+1), func(err error) bool { return err == nil })
	}
	c.Mesh.Cut(leader)
	cut := time.Now()
	waitQuorum(t, c.Members[leader], "the leader cut off", func(err error) bool { return errors.Is(err, ledger.ErrNoQuorum) })
	took := time.Since(cut)
	t.Logf("the cut-off leader knew it %s after the cut", took)
	if took > 2*ledger.QuorumContactWindow {
		t.Errorf("the cut-off leader knew it %s after the cut, want within about %s", took, ledger.QuorumContactWindow)
	}
	for _, i := range []int{(leader + 1) % 3, (leader + 2) % 3} {
		waitQuorum(t, c.Members[i], fmt.Sprintf("m%d on the majority's side", i+1), func(err error) bool { return err == nil })
	}
	c.Mesh.Heal(leader)
	waitQuorum(t, c.Members[leader], "the old leader healed", func(err error) bool { return err == nil })
}

// waitQuorum waits until m's Quorum for the event stream satisfies ok.
func waitQuorum(t *testing.T, m *ledger.Embedded, what string, ok func(error) bool) {
	t.Helper()
	deadline := time.Now().Add(ledgertest.ClusterReadyTimeout)
	for {
		err := m.Quorum(ledger.DefaultStreamName)
		if ok(err) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: Quorum still %v after %s", what, err, ledgertest.ClusterReadyTimeout)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// TestRequestSentAgainAfterAReconnection asks through a member that goes
// away before the request is answered: the client reconnects to another
// member and sends the request again, and gets the answer to that. The
// responder answers only the second copy, as when the answer to the first
// was published while the client was between servers.
func TestRequestSentAgainAfterAReconnection(t *testing.T) {
	if testing.Short() {
		t.Skip("runs a three-member cluster")
	}
	c := ledgertest.StartCluster(t, 3)
	responder, _ := c.Connect(0, 1)
	copies := make(chan int, 4)
	var n atomic.Int64
	sub, err := responder.Subscribe("ask", func(m *nats.Msg) {
		k := int(n.Add(1))
		copies <- k
		if k >= 2 {
			_ = m.Respond([]byte("answer"))
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Unsubscribe()
	if err := responder.Flush(); err != nil {
		t.Fatal(err)
	}
	// The client starts on member 0 and knows the others.
	client, err := nats.Connect(c.Members[0].ClientURL()+","+c.URLs(0), nats.DontRandomize(), nats.MaxReconnects(-1), nats.ReconnectWait(50*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	defer client.Close()
	type result struct {
		m   *nats.Msg
		err error
	}
	done := make(chan result, 1)
	go func() {
		m, err := ledger.RequestAnswer(context.Background(), client, "ask", []byte("q"), 20*time.Second)
		done <- result{m, err}
	}()
	if k := <-copies; k != 1 {
		t.Fatalf("first copy numbered %d", k)
	}
	c.Stop(0)
	select {
	case r := <-done:
		if r.err != nil || string(r.m.Data) != "answer" {
			t.Fatalf("got %v, %v; want the answer to the request sent again", r.m, r.err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("no answer 30 s after the member went away")
	}
}

// TestReaderGoesOnAcrossTheLossOfALeader reads the stream through one
// member while another appends and the member leading the stream (and
// most likely the cluster's meta group, and the reader's consumer) is
// cut off: the reader goes on once the others have elected leaders, and
// returns every event exactly once, in order.
func TestReaderGoesOnAcrossTheLossOfALeader(t *testing.T) {
	if testing.Short() {
		t.Skip("runs a three-member cluster through a leader election")
	}
	c := ledgertest.StartCluster(t, 3)
	_, js := c.Connect()
	c.OpenStream(js, ledger.Config{Replicas: 3})
	leader := c.Leader(js, ledger.DefaultStreamName)
	writer, reader := (leader+1)%3, (leader+2)%3
	_, jsw := c.Connect(leader, reader)
	w := c.OpenStream(jsw, ledger.Config{Replicas: 3, AckWaitTimeout: 30 * time.Second})
	_, jsr := c.Connect(leader, writer)
	rd, err := c.OpenStream(jsr, ledger.Config{Replicas: 3}).Reader(context.Background(), 1)
	if err != nil {
		t.Fatal(err)
	}
	defer rd.Close()

	const total = 400
	appended := make(chan error, 1)
	go func() {
		for i := range total {
			if i == total/4 {
				c.Mesh.Cut(leader)
			}
			ev := pod("w", fmt.Sprintf("p%d", i))
			if _, err := w.Append(context.Background(), ev, ledger.AppendOptions{MsgID: ev.Name}); err != nil {
				appended <- err
				return
			}
		}
		appended <- nil
	}()
	var got []string
	last := uint64(0)
	deadline := time.Now().Add(2 * time.Minute)
	for len(got) < total && time.Now().Before(deadline) {
		recs, err := rd.Next(context.Background(), 100, time.Second)
		if err != nil {
			t.Fatalf("read after %d records: %v", len(got), err)
		}
		for _, r := range recs {
			if r.Seq <= last {
				t.Fatalf("record %d after %d: out of order or again", r.Seq, last)
			}
			last = r.Seq
			got = append(got, r.Event.Name)
		}
	}
	if err := <-appended; err != nil {
		t.Fatal(err)
	}
	for i := range total {
		if i >= len(got) || got[i] != fmt.Sprintf("p%d", i) {
			t.Fatalf("read %d records, the %dth of them %v; want p0 to p%d in order", len(got), i, got[min(i, len(got)-1):min(i+1, len(got))], total-1)
		}
	}
}
