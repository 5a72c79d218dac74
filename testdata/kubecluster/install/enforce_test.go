package install

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// reservationTTL is how long the ledger holds an admitted create whose
// object does not appear.
const reservationTTL = 3 * time.Second

// TestTheLedgerEnforcesQuotas runs kube-apiserver with its ResourceQuota
// plugin off and the ledger's webhook registered as deploy/ registers it:
// the ledger alone enforces the quotas.
func TestTheLedgerEnforcesQuotas(t *testing.T) {
	e := startEnforcer(t, reservationTTL, "--disable-admission-plugins=ResourceQuota")
	c := e.cluster
	ctx := context.Background()
	create := func(ns, name string, dryRun bool) error {
		opts := metav1.CreateOptions{}
		if dryRun {
			opts.DryRun = []string{metav1.DryRunAll}
		}
		_, err := c.Client.CoreV1().Pods(ns).Create(ctx, pod(name), opts)
		return err
	}

	t.Run("creates up to the quota, the next refused in Kubernetes' words", func(t *testing.T) {
		e.namespaceWithPods(t, "upto", 3)
		for i := range 3 {
			if err := create("upto", fmt.Sprintf("p%d", i), false); err != nil {
				t.Fatalf("create %d of 3: %v", i+1, err)
			}
		}
		err := create("upto", "p3", false)
		const words = `pods "p3" is forbidden: exceeded quota: quota, requested: pods=1, used: pods=3, limited: pods=3`
		if !isQuotaDenial(err) || !strings.Contains(err.Error(), words) {
			t.Fatalf("the fourth create: %v; want the webhook's refusal saying %q", err, words)
		}
	})

	t.Run("a generateName create's reservation is confirmed by its own ADDED event", func(t *testing.T) {
		e.namespaceWithPods(t, "generated", 2)
		p := pod("")
		p.GenerateName = "web-"
		start := time.Now()
		created, err := c.Client.CoreV1().Pods("generated").Create(ctx, p, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		// The review carried the generated name: the pod's ADDED event
		// replaces the reservation well before its TTL could.
		e.settled(t, "generated", 1)
		if took := time.Since(start); took >= reservationTTL {
			t.Errorf("the reservation went %s after the create, not before its TTL of %s", took, reservationTTL)
		}
		out, _, _ := e.run("explain", "quota", "-n", "generated")
		if !strings.Contains(out, "pods/"+created.Name) {
			t.Errorf("explain does not name the generated pod %s:\n%s", created.Name, out)
		}
	})

	t.Run("32 concurrent creates against the last 20 units make exactly 20 pods", func(t *testing.T) {
		e.namespaceWithPods(t, "burst", 25)
		for i := range 5 {
			if err := create("burst", fmt.Sprintf("first-%d", i), false); err != nil {
				t.Fatal(err)
			}
		}
		var (
			wg               sync.WaitGroup
			mu               sync.Mutex
			allowed, refused int
			unexpected       []error
		)
		for i := range 32 {
			wg.Go(func() {
				err := create("burst", fmt.Sprintf("burst-%d", i), false)
				mu.Lock()
				defer mu.Unlock()
				switch {
				case err == nil:
					allowed++
				case isQuotaDenial(err):
					refused++
				default:
					unexpected = append(unexpected, err)
				}
			})
		}
		wg.Wait()
		if len(unexpected) > 0 {
			t.Errorf("creates failed other than by quota: %v", errors.Join(unexpected...))
		}
		pods, err := c.Client.CoreV1().Pods("burst").List(ctx, metav1.ListOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if allowed != 20 || refused != 12 || len(pods.Items) != 25 {
			t.Errorf("%d allowed, %d refused, %d pods in the namespace; want 20, 12 and 25", allowed, refused, len(pods.Items))
		}
	})

	t.Run("a dry-run create reserves nothing", func(t *testing.T) {
		e.namespaceWithPods(t, "dryrun", 1)
		for i := range 3 {
			if err := create("dryrun", fmt.Sprintf("dry-%d", i), true); err != nil {
				t.Fatalf("dry-run create %d: %v", i+1, err)
			}
		}
		if got := e.used(t, "dryrun", "pods"); got != "0" {
			t.Errorf("after three dry runs: used pods %s, want 0", got)
		}
		if err := create("dryrun", "real", false); err != nil {
			t.Fatalf("a real create after the dry runs: %v", err)
		}
		if err := create("dryrun", "dry-past", true); !isQuotaDenial(err) {
			t.Errorf("a dry run past the quota: %v; want refused", err)
		}
	})

	t.Run("a create refused later in the chain is released after its TTL", func(t *testing.T) {
		e.namespaceWithPods(t, "refused", 2)
		if err := create("refused", "a", false); err != nil {
			t.Fatal(err)
		}
		e.settled(t, "refused", 1)
		// Another validating webhook refuses the pod after the ledger
		// reserved its unit.
		doomed := pod("doomed")
		doomed.Labels = map[string]string{denyLabel: "true"}
		if _, err := c.Client.CoreV1().Pods("refused").Create(ctx, doomed, metav1.CreateOptions{}); err == nil || !strings.Contains(err.Error(), denyWebhook) {
			t.Fatalf("a create the other webhook refuses: %v", err)
		}
		// Until the TTL the refused create holds its unit.
		start := time.Now()
		if err := create("refused", "b", true); !isQuotaDenial(err) {
			t.Errorf("while the refused create's reservation holds: %v; want refused by quota", err)
		}
		deadline := start.Add(reservationTTL + 30*time.Second)
		for {
			err := create("refused", "b", false)
			if err == nil {
				break
			}
			if !isQuotaDenial(err) || time.Now().After(deadline) {
				t.Fatalf("create b %s after the refused create: %v", time.Since(start).Round(time.Millisecond), err)
			}
			time.Sleep(100 * time.Millisecond)
		}
		t.Logf("the refused create's unit was released %s after it", time.Since(start).Round(time.Millisecond))
	})

	t.Run("a create refused at storage for its name holds no second unit", func(t *testing.T) {
		e.namespaceWithPods(t, "conflict", 2)
		if err := create("conflict", "a", false); err != nil {
			t.Fatal(err)
		}
		e.settled(t, "conflict", 1)
		if err := create("conflict", "a", false); !apierrors.IsAlreadyExists(err) {
			t.Fatalf("a second create of the same name: %v; want AlreadyExists", err)
		}
		// The reservation names the pod that exists: it charges the pod
		// once, and its expiry leaves the pod charged.
		if err := create("conflict", "b", true); err != nil {
			t.Errorf("a create in the second unit after the name conflict: %v", err)
		}
		e.settled(t, "conflict", 1)
		if err := create("conflict", "b", false); err != nil {
			t.Errorf("a create in the second unit after the reservation's expiry: %v", err)
		}
		if err := create("conflict", "c", true); !isQuotaDenial(err) {
			t.Errorf("a third pod after the expiry: %v; want refused (a and b use the quota)", err)
		}
	})

	t.Run("after a delete the freed unit is taken at once", func(t *testing.T) {
		e.namespaceWithPods(t, "delete", 2)
		for _, name := range []string{"a", "b"} {
			if err := create("delete", name, false); err != nil {
				t.Fatal(err)
			}
		}
		if err := create("delete", "c", false); !isQuotaDenial(err) {
			t.Fatalf("a create past the quota: %v; want refused", err)
		}
		e.settled(t, "delete", 2)
		if err := c.Client.CoreV1().Pods("delete").Delete(ctx, "a", metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
		// No controller recounts here, and no reservation is left to
		// expire: what frees the unit is the pod's DELETED event.
		start := time.Now()
		for {
			err := create("delete", "c", false)
			if err == nil {
				break
			}
			if !isQuotaDenial(err) || time.Since(start) > 10*time.Second {
				t.Fatalf("create c %s after the delete: %v", time.Since(start).Round(time.Millisecond), err)
			}
			time.Sleep(20 * time.Millisecond)
		}
		t.Logf("the freed unit was taken %s after the delete", time.Since(start).Round(time.Millisecond))
	})

	t.Run("pod updates that change nothing quota reads are not sent", func(t *testing.T) {
		testPodUpdates(t, e)
	})

	// Each component did all of this with only its own subjects.
	for name, p := range map[string]string{"quota export": e.export.Logs.String(), "quota webhook": e.webhook.Logs.String()} {
		if strings.Contains(strings.ToLower(p), "permissions violation") {
			t.Errorf("%s met a permissions violation of its key:\n%s", name, p)
		}
	}
}
