package install

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	admissionv1 "k8s.io/api/admission/v1"
	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/quotaledger/quota/testdata/kubecluster/kubecluster"
)

// TestTheWebhookTakesReviewsOnlyFromTheAPIServer runs the webhook with
// --client-ca and kube-apiserver with the admission configuration `quota
// credentials` wrote, which makes it present its client certificate: the
// API server's creates are decided as without it, while a review forged
// by a caller that reaches the webhook's port (a create of 10 CPUs, the
// whole quota) gets 401 without a certificate and 403 with one of another
// installation's client CA, and reserves nothing.
func TestTheWebhookTakesReviewsOnlyFromTheAPIServer(t *testing.T) {
	// A reservation would be held for a minute: long past the checks.
	e := startEnforcerWith(t, enforcerOptions{ttl: time.Minute, apiserverFlags: []string{"--disable-admission-plugins=ResourceQuota"}, clientCA: true})
	c := e.cluster
	const ns = "forged"
	c.CreateNamespace(t, ns)
	createQuota(t, c, ns, corev1.ResourceList{corev1.ResourceRequestsCPU: resource.MustParse("10")})
	e.waitQuota(t, ns)

	ghost := forgedReview(t, ns, "ghost", "10")
	other := filepath.Join(t.TempDir(), "other")
	if out, err := exec.Command(kubecluster.Quota(t), "credentials", other).CombinedOutput(); err != nil {
		t.Fatalf("quota credentials: %v\n%s", err, out)
	}
	intruder := e.clientWith(t, filepath.Join(other, "apiserver-client.crt"), filepath.Join(other, "apiserver-client.key"))
	for _, tc := range []struct {
		name   string
		client *http.Client
		code   int
		says   string
	}{
		{"no client certificate", e.webhookClient, http.StatusUnauthorized, "no client certificate"},
		{"another installation's client certificate", intruder, http.StatusForbidden, "not accepted by the client CA"},
	} {
		resp, err := tc.client.Post(e.webhookURL+"/validate", "application/json", bytes.NewReader(ghost))
		if err != nil {
			t.Fatalf("a forged review with %s: %v", tc.name, err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		var st metav1.Status
		if err := json.Unmarshal(body, &st); err != nil || resp.StatusCode != tc.code || int(st.Code) != tc.code || !strings.Contains(st.Message, tc.says) {
			t.Errorf("a forged review with %s: HTTP %d %s; want %d with a Status saying %q", tc.name, resp.StatusCode, body, tc.code, tc.says)
		}
	}
	out, errOut, _ := e.run("explain", "quota", "-n", ns)
	if strings.Contains(out+errOut, "reserved") || strings.Contains(out+errOut, "ghost") {
		t.Errorf("the ledger holds a forged reservation:\n%s%s", out, errOut)
	}
	if got := e.used(t, ns, "requests.cpu"); got != "0" {
		t.Errorf("after the forged reviews: used requests.cpu %s, want 0", got)
	}

	// The whole quota is free for the API server's own create, and the
	// next is refused in Kubernetes' words.
	ctx := context.Background()
	if _, err := c.Client.CoreV1().Pods(ns).Create(ctx, podRequesting("real", "10"), metav1.CreateOptions{}); err != nil {
		t.Fatalf("a create of the whole quota through the API server: %v\nwebhook:\n%s", err, e.webhook.Logs)
	}
	if _, err := c.Client.CoreV1().Pods(ns).Create(ctx, pod("over"), metav1.CreateOptions{}); !isQuotaDenial(err) {
		t.Errorf("a create past the quota: %v; want the webhook's refusal", err)
	}

	m := e.webhookMetrics(t)
	for sample, want := range map[string]float64{
		`quota_webhook_unauthenticated_total{reason="no_certificate"}`: 1,
		`quota_webhook_unauthenticated_total{reason="untrusted"}`:      1,
		`quota_webhook_unauthenticated_total{reason="expired"}`:        0,
		`quota_webhook_requests_total{verdict="error"}`:                0,
	} {
		if got := metric(t, m, sample); got != want {
			t.Errorf("%s = %v, want %v", sample, got, want)
		}
	}
	if got := metric(t, m, `quota_webhook_requests_total{verdict="allowed"}`); got < 1 {
		t.Errorf("no review of the API server's allowed: %v", got)
	}
	cert := readCertificate(t, filepath.Join(e.credentials, "apiserver-client.crt"))
	if got := metric(t, m, "quota_webhook_client_certificate_expiry_timestamp_seconds"); got != float64(cert.NotAfter.Unix()) {
		t.Errorf("client certificate expiry %v, want the API server's %d", got, cert.NotAfter.Unix())
	}
	if n := strings.Count(e.webhook.Logs.String(), "review refused: caller not authenticated"); n != 2 {
		t.Errorf("%d log lines of refused callers, want 2:\n%s", n, e.webhook.Logs)
	}
}

// forgedReview is an AdmissionReview of a CREATE of a pod requesting cpu
// in ns, as a caller other than the API server could write one.
func forgedReview(t *testing.T, ns, name, cpu string) []byte {
	t.Helper()
	p := podRequesting(name, cpu)
	p.Namespace, p.UID = ns, "0ddba11"
	object, err := json.Marshal(p)
	if err != nil {
		t.Fatal(err)
	}
	b, err := json.Marshal(admissionv1.AdmissionReview{
		TypeMeta: metav1.TypeMeta{APIVersion: "admission.k8s.io/v1", Kind: "AdmissionReview"},
		Request: &admissionv1.AdmissionRequest{
			UID: "f0e1d2", Namespace: ns, Name: name, Operation: admissionv1.Create,
			Kind:     metav1.GroupVersionKind{Version: "v1", Kind: "Pod"},
			Resource: metav1.GroupVersionResource{Version: "v1", Resource: "pods"},
			Object:   runtime.RawExtension{Raw: object},
			UserInfo: authenticationv1.UserInfo{Username: "mallory"},
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// podRequesting is pod(name) requesting cpu.
func podRequesting(name, cpu string) *corev1.Pod {
	p := pod(name)
	p.Spec.Containers[0].Resources.Requests[corev1.ResourceCPU] = resource.MustParse(cpu)
	return p
}

// clientWith is an HTTPS client of the webhook presenting the pair in
// certFile and keyFile.
func (e *enforcer) clientWith(t *testing.T, certFile, keyFile string) *http.Client {
	t.Helper()
	pair, err := tls.LoadX509KeyPair(certFile, keyFile)
	if err != nil {
		t.Fatal(err)
	}
	cfg := e.webhookClient.Transport.(*http.Transport).TLSClientConfig.Clone()
	cfg.Certificates = []tls.Certificate{pair}
	return &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{TLSClientConfig: cfg}}
}

// readCertificate reads the first certificate of a PEM file.
func readCertificate(t *testing.T, path string) *x509.Certificate {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	block, _ := pem.Decode(b)
	if block == nil {
		t.Fatalf("%s: no PEM", path)
	}
	cert, err := x509.ParseCertificate(block.Bytes)
	if err != nil {
		t.Fatal(err)
	}
	return cert
}
