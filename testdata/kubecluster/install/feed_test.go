package install

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// apiRequestTimeout is the API server's request timeout the ledger
// assumes in the feed tests: how long after its reservation an admitted
// create may still be stored.
const apiRequestTimeout = 5 * time.Second

// TestReservationsEndOnTheFeed runs the ledger as deploy/ does, with
// reservations released by the exporter's feed (--reservation-release
// feed): a reservation whose create a later webhook refuses is released
// once the feed has passed it; with the exporter killed, every
// reservation holds, however long, so no namespace goes past its quota;
// and once the exporter is back the ledger is exact again.
func TestReservationsEndOnTheFeed(t *testing.T) {
	e := startEnforcerWith(t, enforcerOptions{ttl: time.Hour, feed: apiRequestTimeout,
		apiserverFlags: []string{"--disable-admission-plugins=ResourceQuota"}})
	c := e.cluster
	ctx := context.Background()
	create := func(ns, name string, refusedLater bool) error {
		p := pod(name)
		if refusedLater {
			p.Labels = map[string]string{denyLabel: "true"}
		}
		_, err := c.Client.CoreV1().Pods(ns).Create(ctx, p, metav1.CreateOptions{})
		return err
	}

	t.Run("a create refused later in the chain is released by the feed", func(t *testing.T) {
		e.namespaceWithPods(t, "orphan", 1)
		start := time.Now()
		if err := create("orphan", "ghost", true); err == nil || !strings.Contains(err.Error(), denyWebhook) {
			t.Fatalf("create ghost: %v, want the second webhook's refusal", err)
		}
		if err := create("orphan", "web", false); !isQuotaDenial(err) {
			t.Fatalf("create web while ghost's reservation holds: %v, want the ledger's refusal", err)
		}
		held := e.waitUsed(t, "orphan", "0", 4*time.Minute)
		t.Logf("an orphaned reservation held %s with the feed running (API request timeout %s)", held.Sub(start).Round(time.Second), apiRequestTimeout)
		if held.Sub(start) < apiRequestTimeout {
			t.Errorf("released after %s, before the API request timeout %s", held.Sub(start), apiRequestTimeout)
		}
		if err := create("orphan", "web", false); err != nil {
			t.Fatalf("create web after ghost's release: %v", err)
		}
	})

	t.Run("with the exporter killed reservations hold past any timeout, and the ledger is exact once it is back", func(t *testing.T) {
		e.namespaceWithPods(t, "stall", 3)
		e.export.Kill()
		stalled := time.Now()
		for _, name := range []string{"a-1", "a-2"} {
			if err := create("stall", name, false); err != nil {
				t.Fatalf("create %s: %v", name, err)
			}
		}
		if err := create("stall", "ghost", true); err == nil || !strings.Contains(err.Error(), denyWebhook) {
			t.Fatalf("create ghost: %v, want the second webhook's refusal", err)
		}
		if err := create("stall", "a-3", false); !isQuotaDenial(err) {
			t.Fatalf("create a-3 with a-1, a-2 and ghost reserved: %v, want the ledger's refusal", err)
		}
		// Past the request timeout, with margin: nothing is released
		// while the feed is stopped.
		time.Sleep(3 * apiRequestTimeout) // the span the rule must outlast, not a wait for a condition
		for i := 4; i <= 5; i++ {
			if err := create("stall", fmt.Sprintf("a-%d", i), false); !isQuotaDenial(err) {
				t.Fatalf("create a-%d with the exporter down: %v, want the ledger's refusal", i, err)
			}
		}
		pods, err := c.Client.CoreV1().Pods("stall").List(ctx, metav1.ListOptions{})
		if err != nil || len(pods.Items) != 2 {
			t.Fatalf("the cluster holds %d pods in stall (%v), want a-1 and a-2", len(pods.Items), err)
		}
		if out, _, _ := e.run("status"); !strings.Contains(out, "pods") {
			t.Errorf("quota status does not show the pods' feed:\n%s", out)
		}

		restarted := time.Now()
		e.startExport(t)
		held := e.waitUsed(t, "stall", "2", 4*time.Minute)
		t.Logf("with the exporter down for %s, the orphaned reservation held %s, until %s after the exporter was back",
			restarted.Sub(stalled).Round(time.Second), held.Sub(stalled).Round(time.Second), held.Sub(restarted).Round(time.Second))
		e.settled(t, "stall", 2)
		if err := create("stall", "a-6", false); err != nil {
			t.Fatalf("create a-6 once the feed is back: %v", err)
		}
		e.settled(t, "stall", 3)
	})
}

// waitUsed waits, at most limit, until the ledger's quota of ns uses
// pods, and returns when it saw it.
func (e *enforcer) waitUsed(t testing.TB, ns, pods string, limit time.Duration) time.Time {
	t.Helper()
	deadline := time.Now().Add(limit)
	for {
		if e.used(t, ns, "pods") == pods {
			return time.Now()
		}
		if time.Now().After(deadline) {
			out, _, _ := e.run("explain", "quota", "-n", ns)
			status, _, _ := e.run("status")
			t.Fatalf("the ledger's pods of %s, %s on, are not %s:\n%s\n%s\nexport:\n%s", ns, limit, pods, out, status, e.export.Logs)
		}
		time.Sleep(200 * time.Millisecond)
	}
}
