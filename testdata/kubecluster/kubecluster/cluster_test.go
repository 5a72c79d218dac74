package kubecluster_test

import (
	"context"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/quotaledger/quota/testdata/kubecluster/kubecluster"
)

// TestStart creates a namespace and a pod through the clientset and reads
// the pod back through a client built from the kubeconfig file.
func TestStart(t *testing.T) {
	c := kubecluster.Start(t, kubecluster.Options{APIServerFlags: []string{"--disable-admission-plugins=ResourceQuota"}})
	c.CreateNamespace(t, "ns1")
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "p1"},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "busybox"}}},
	}
	ctx := context.Background()
	if _, err := c.Client.CoreV1().Pods("ns1").Create(ctx, pod, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create pod: %v", err)
	}
	cfg, err := clientcmd.BuildConfigFromFlags("", c.Kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	client, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	got, err := client.CoreV1().Pods("ns1").Get(ctx, "p1", metav1.GetOptions{})
	if err != nil {
		t.Fatalf("get pod through the kubeconfig: %v", err)
	}
	if got.Status.Phase != corev1.PodPending && got.Status.Phase != "" {
		t.Errorf("phase = %q, want Pending (no node runs it)", got.Status.Phase)
	}
	if rev := c.Compact(t); rev <= 0 {
		t.Errorf("compacted to revision %d", rev)
	}
}

// TestServe starts `quota serve` and reads its (empty) usage back.
func TestServe(t *testing.T) {
	l := kubecluster.Serve(t)
	out := l.MustRun("describe", "-A", "-o", "json")
	if !strings.Contains(out, `"kind": "ResourceQuotaList"`) && !strings.Contains(out, `"kind":"ResourceQuotaList"`) {
		t.Errorf("describe -o json = %s, want a ResourceQuotaList", out)
	}
}
