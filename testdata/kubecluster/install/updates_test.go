package install

import (
	"context"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// podUpdatesWebhook is the name deploy/ gives the webhook of pod updates,
// whose matchConditions skip those that change nothing quota reads.
const podUpdatesWebhook = "pod-updates.quota.ledger.quotaledger.io"

// podUpdates are the API server's counts of the pod updates it sent to
// the ledger and of those deploy/'s matchConditions kept from it.
func podUpdates(t *testing.T, e *enforcer) (sent, skipped float64) {
	t.Helper()
	for sample, v := range apiserverMetrics(t, e.cluster) {
		if !strings.Contains(sample, `name="`+podUpdatesWebhook+`"`) || !strings.Contains(sample, `operation="UPDATE"`) {
			continue
		}
		switch {
		case strings.HasPrefix(sample, "apiserver_admission_webhook_admission_duration_seconds_count{"):
			sent += v
		case strings.HasPrefix(sample, "apiserver_admission_match_condition_exclusions_total{"):
			skipped += v
		}
	}
	return sent, skipped
}

// testPodUpdates updates a pod in ways that change nothing quota reads of
// it, which the API server does not send to the ledger, and in ways that
// do, which it sends; each update is made, and the ledger still counts the
// pod.
func testPodUpdates(t *testing.T, e *enforcer) {
	c := e.cluster
	ctx := context.Background()
	e.namespaceWithPods(t, "updates", 2)
	if _, err := c.Client.CoreV1().Pods("updates").Create(ctx, pod("u"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	e.settled(t, "updates", 1)
	deadline := int64(600)
	for _, tc := range []struct {
		what   string
		sent   bool
		change func(p *corev1.Pod)
	}{
		{"a label", false, func(p *corev1.Pod) { p.Labels = map[string]string{"tier": "web"} }},
		{"an annotation", false, func(p *corev1.Pod) { p.Annotations = map[string]string{"note": "x"} }},
		{"an image", false, func(p *corev1.Pod) { p.Spec.Containers[0].Image = "registry.example/app:2" }},
		{"a toleration", false, func(p *corev1.Pod) {
			p.Spec.Tolerations = append(p.Spec.Tolerations, corev1.Toleration{Key: "k", Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule})
		}},
		{"a finalizer", false, func(p *corev1.Pod) { p.Finalizers = []string{"example.com/hold"} }},
		{"an active deadline (the Terminating scope)", true, func(p *corev1.Pod) { p.Spec.ActiveDeadlineSeconds = &deadline }},
	} {
		p, err := c.Client.CoreV1().Pods("updates").Get(ctx, "u", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		tc.change(p)
		sent, skipped := podUpdates(t, e)
		if _, err := c.Client.CoreV1().Pods("updates").Update(ctx, p, metav1.UpdateOptions{}); err != nil {
			t.Fatalf("update %s: %v", tc.what, err)
		}
		sentAfter, skippedAfter := podUpdates(t, e)
		if got := sentAfter - sent; got != map[bool]float64{true: 1, false: 0}[tc.sent] || skippedAfter-skipped != 1-got {
			t.Errorf("update %s: %v sent to the ledger, %v skipped; want sent %v", tc.what, got, skippedAfter-skipped, tc.sent)
		}
	}

	t.Run("a resize is always sent", func(t *testing.T) {
		p, err := c.Client.CoreV1().Pods("updates").Get(ctx, "u", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		p.Spec.Containers[0].Resources.Requests[corev1.ResourceCPU] = resource.MustParse("200m")
		sent, _ := podUpdates(t, e)
		if _, err := c.Client.CoreV1().Pods("updates").UpdateResize(ctx, "u", p, metav1.UpdateOptions{}); err != nil {
			t.Fatalf("resize: %v", err)
		}
		if after, _ := podUpdates(t, e); after-sent != 1 {
			t.Errorf("resize: %v sent to the ledger, want 1", after-sent)
		}
	})
	e.settled(t, "updates", 1)
}
