package install

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"io"
	"math/big"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"

	"github.com/quotaledger/quota/testdata/kubecluster/kubecluster"
)

// webhookName is the name deploy/ gives the webhook.
const webhookName = "quota.ledger.quotaledger.io"

// enforcer is a kube-apiserver whose quotas the ledger enforces.
type enforcer struct {
	cluster *kubecluster.Cluster
	ledger  *kubecluster.Ledger
	webhook *kubecluster.Proc
	// webhookURL is the webhook's https://HOST:PORT, and webhookClient
	// trusts its certificate.
	webhookURL    string
	webhookClient *http.Client
	export        *kubecluster.Proc
	// credentials holds what `quota credentials` wrote: each component
	// reaches the ledger's NATS with its own key, as deploy/ runs them.
	credentials string
}

// startEnforcer starts kube-apiserver with extra flags, `quota serve`
// (reservations held for ttl) requiring the keys `quota credentials`
// makes, `quota export` feeding it the cluster's objects, and `quota
// webhook`, registered for what deploy/ registers it for; the exporter and
// the webhook each with its own key.
func startEnforcer(t testing.TB, ttl time.Duration, apiserverFlags ...string) *enforcer {
	t.Helper()
	return startEnforcerWith(t, enforcerOptions{ttl: ttl, apiserverFlags: apiserverFlags})
}

// enforcerOptions are what startEnforcerWith varies.
type enforcerOptions struct {
	// ttl is how long the ledger holds a reservation.
	ttl time.Duration
	// apiserverFlags are added to kube-apiserver's.
	apiserverFlags []string
	// feed, when set, has the ledger release reservations by the feed's
	// progress, with feed as the API server's request timeout, instead
	// of after ttl.
	feed time.Duration
	// clientCA, when set, has the webhook take reviews only from the client
	// certificate `quota credentials` made for kube-apiserver, and
	// kube-apiserver present it, as the admission configuration `quota
	// credentials` wrote tells it to.
	clientCA bool
}

// startEnforcerWith starts what startEnforcer does, as o says. The webhook
// starts before kube-apiserver, whose admission configuration names the
// webhook's address.
func startEnforcerWith(t testing.TB, o enforcerOptions) *enforcer {
	t.Helper()
	creds := filepath.Join(t.TempDir(), "credentials")
	if out, err := exec.Command(kubecluster.Quota(t), "credentials", creds, "--apiserver-dir", creds).CombinedOutput(); err != nil {
		t.Fatalf("quota credentials: %v\n%s", err, out)
	}
	serveArgs := []string{"--reservation-ttl", o.ttl.String(), "--auth", filepath.Join(creds, "auth.conf"), "--metrics-listen", "127.0.0.1:0"}
	if o.feed > 0 {
		serveArgs = append(serveArgs, "--reservation-release", "feed", "--api-request-timeout", o.feed.String())
	}
	l := kubecluster.Serve(t, serveArgs...)
	e := &enforcer{ledger: l, credentials: creds}
	caPEM, certFile, keyFile := servingCertificate(t, t.TempDir())
	args := []string{"webhook", "--listen", "127.0.0.1:0", "--tls-cert", certFile, "--tls-key", keyFile, "--server", l.URL, "--nkey", e.key("webhook")}
	if o.clientCA {
		args = append(args, "--client-ca", filepath.Join(creds, "client-ca.crt"))
	}
	e.startWebhook(t, caPEM, args)
	flags := o.apiserverFlags
	if o.clientCA {
		flags = append(slices.Clip(flags), "--admission-control-config-file="+e.admissionConfig(t))
	}
	e.cluster = kubecluster.Start(t, kubecluster.Options{APIServerFlags: flags})
	e.startExport(t)
	e.register(t, e.webhookURL+"/validate", caPEM)
	e.startDenyWebhook(t, caPEM, certFile, keyFile)
	return e
}

// startWebhook runs `quota webhook` with args and waits until it serves
// on a port of 127.0.0.1, under a certificate of the CA in caPEM.
func (e *enforcer) startWebhook(t testing.TB, caPEM []byte, args []string) {
	t.Helper()
	addrs := make(chan string, 1)
	serving := regexp.MustCompile(`quota webhook serving.* listen=(\S+)`)
	e.webhook = kubecluster.StartQuota(t, func(line string) {
		if m := serving.FindStringSubmatch(line); m != nil {
			select {
			case addrs <- m[1]:
			default:
			}
		}
	}, args...)
	var addr string
	select {
	case addr = <-addrs:
	case <-e.webhook.Done():
		t.Fatalf("quota webhook exited before serving\n%s", e.webhook.Logs)
	case <-time.After(30 * time.Second):
		t.Fatalf("quota webhook did not serve within 30s\n%s", e.webhook.Logs)
	}
	e.webhookURL = "https://" + addr
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(caPEM)
	e.webhookClient = &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}}
}

// admissionConfig returns the admission configuration `quota credentials`
// wrote, its kubeconfig's user renamed from the webhook Service's host to
// the webhook's address here: kube-apiserver picks the user by the host it
// calls, and the test registers the webhook by URL.
func (e *enforcer) admissionConfig(t testing.TB) string {
	t.Helper()
	path := filepath.Join(e.credentials, "apiserver-kubeconfig.yaml")
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	const service = `"quota-webhook.quota-system.svc"`
	if n := strings.Count(string(b), service); n != 1 {
		t.Fatalf("%s names the Service's host %d times, want once:\n%s", path, n, b)
	}
	b = []byte(strings.Replace(string(b), service, `"`+strings.TrimPrefix(e.webhookURL, "https://")+`"`, 1))
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
	return filepath.Join(e.credentials, "admission-config.yaml")
}

// key is the NKey seed file of component.
func (e *enforcer) key(component string) string {
	return filepath.Join(e.credentials, component+".nk")
}

// run runs a quota client command against the ledger with the operator's
// key.
func (e *enforcer) run(args ...string) (stdout, stderr string, code int) {
	return e.ledger.Run(append(args, "--nkey", e.key("operator"))...)
}

var exportMetrics = regexp.MustCompile(`quota export metrics.*url=(\S+)`)

// startExport runs `quota export` with its key and waits until it leads
// and has every resource in the log.
func (e *enforcer) startExport(t testing.TB) {
	t.Helper()
	urls := make(chan string, 1)
	e.export = kubecluster.StartQuota(t, func(line string) {
		if m := exportMetrics.FindStringSubmatch(line); m != nil {
			select {
			case urls <- strings.Trim(m[1], `"`):
			default:
			}
		}
	}, "export", "--server", e.ledger.URL, "--nkey", e.key("export"), "--kubeconfig", e.cluster.Kubeconfig,
		"--metrics-listen", "127.0.0.1:0", "--discovery-interval", "5s")
	var url string
	select {
	case url = <-urls:
	case <-e.export.Done():
		t.Fatalf("quota export exited before serving metrics\n%s", e.export.Logs)
	case <-time.After(60 * time.Second):
		t.Fatalf("quota export did not serve metrics within 60s\n%s", e.export.Logs)
	}
	ready := strings.TrimSuffix(url, "/metrics") + "/readyz"
	deadline := time.Now().Add(60 * time.Second)
	for {
		resp, err := http.Get(ready)
		if err == nil {
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK && strings.Contains(string(body), "leading") {
				return
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("quota export not leading with every resource synced within 60s\n%s", e.export.Logs)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// register registers the webhook at url, trusted through caPEM, with
// deploy/'s rules, exemptions and policies.
func (e *enforcer) register(t testing.TB, url string, caPEM []byte) {
	c := e.cluster
	t.Helper()
	vwc := deployWebhookConfiguration(t)
	for i := range vwc.Webhooks {
		vwc.Webhooks[i].ClientConfig = admissionregistrationv1.WebhookClientConfig{URL: &url, CABundle: caPEM}
	}
	ctx := context.Background()
	if _, err := c.Client.AdmissionregistrationV1().ValidatingWebhookConfigurations().Create(ctx, vwc, metav1.CreateOptions{}); err != nil {
		t.Fatalf("register the webhook: %v", err)
	}
	// The apiserver picks a new configuration up within a second or so:
	// until a create in a namespace with a quota of no pods is refused,
	// it is not in force.
	ns := "webhook-registered"
	c.CreateNamespace(t, ns)
	createQuota(t, c, ns, corev1.ResourceList{corev1.ResourcePods: resource.MustParse("0")})
	e.waitQuota(t, ns)
	deadline := time.Now().Add(60 * time.Second)
	for {
		_, err := c.Client.CoreV1().Pods(ns).Create(ctx, pod("probe"), metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
		if err != nil && strings.Contains(err.Error(), webhookName) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("the webhook is not in force 60s after its registration: a dry-run create in %s: %v\nwebhook:\n%s", ns, err, e.webhook.Logs)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// createQuota creates the ResourceQuota "quota" in ns and waits until the
// ledger holds it.
func createQuota(t testing.TB, c *kubecluster.Cluster, ns string, hard corev1.ResourceList) {
	t.Helper()
	q := &corev1.ResourceQuota{ObjectMeta: metav1.ObjectMeta{Name: "quota"}, Spec: corev1.ResourceQuotaSpec{Hard: hard}}
	if _, err := c.Client.CoreV1().ResourceQuotas(ns).Create(context.Background(), q, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create the quota of %s: %v", ns, err)
	}
}

// namespaceWithPods creates namespace ns with a quota of pods pods, and
// waits until the ledger holds the quota.
func (e *enforcer) namespaceWithPods(t testing.TB, ns string, pods int) {
	t.Helper()
	e.cluster.CreateNamespace(t, ns)
	createQuota(t, e.cluster, ns, corev1.ResourceList{corev1.ResourcePods: *resource.NewQuantity(int64(pods), resource.DecimalSI)})
	e.waitQuota(t, ns)
}

// waitQuota waits until the ledger describes the quota of ns.
func (e *enforcer) waitQuota(t testing.TB, ns string) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		out, _, code := e.run("describe", "quota", "-n", ns)
		if code == 0 && strings.Contains(out, "Name:") {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("the ledger does not hold the quota of %s 30s after its create: %s\nquota export:\n%s", ns, out, e.export.Logs)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// used is the ledger's used figure of resource in the quota of ns.
func (e *enforcer) used(t testing.TB, ns, res string) string {
	t.Helper()
	line := regexp.MustCompile(`(?m)^` + regexp.QuoteMeta(res) + `\s+(\S+)\s+\S+$`)
	out, errOut, _ := e.run("describe", "quota", "-n", ns)
	m := line.FindStringSubmatch(out)
	if m == nil {
		t.Fatalf("describe quota -n %s shows no %s line: %s%s", ns, res, out, errOut)
	}
	return m[1]
}

// pod is a pod of one container that the apiserver takes without any
// controller.
func pod(name string) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{
			Name: "c", Image: "registry.example/app:1",
			Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("100m")}},
		}}},
	}
}

// servingCertificate writes a serving certificate for 127.0.0.1 and its
// key, signed by a new CA, and returns the CA's PEM.
func servingCertificate(t testing.TB, dir string) (caPEM []byte, certFile, keyFile string) {
	t.Helper()
	newKey := func() *ecdsa.PrivateKey {
		k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
		if err != nil {
			t.Fatal(err)
		}
		return k
	}
	caKey, key := newKey(), newKey()
	ca := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "install test CA"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
		KeyUsage: x509.KeyUsageCertSign, IsCA: true, BasicConstraintsValid: true,
	}
	caDER, err := x509.CreateCertificate(rand.Reader, ca, ca, &caKey.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	leaf := &x509.Certificate{
		SerialNumber: big.NewInt(2), Subject: pkix.Name{CommonName: "127.0.0.1"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		IPAddresses: []net.IP{net.ParseIP("127.0.0.1")},
	}
	der, err := x509.CreateCertificate(rand.Reader, leaf, ca, &key.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	certFile, keyFile = filepath.Join(dir, "tls.crt"), filepath.Join(dir, "tls.key")
	if err := os.WriteFile(certFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(keyFile, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER}), 0o600); err != nil {
		t.Fatal(err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: caDER}), certFile, keyFile
}

// isQuotaDenial reports whether err is the webhook's refusal with
// Kubernetes' quota wording.
func isQuotaDenial(err error) bool {
	return apierrors.IsForbidden(err) && strings.Contains(err.Error(), "admission webhook \""+webhookName+"\" denied the request") &&
		strings.Contains(err.Error(), "exceeded quota")
}

// deployWebhookConfiguration reads deploy/'s ValidatingWebhookConfiguration.
func deployWebhookConfiguration(t testing.TB) *admissionregistrationv1.ValidatingWebhookConfiguration {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(repoRoot(t), "deploy", "base", "webhookconfiguration.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var vwc admissionregistrationv1.ValidatingWebhookConfiguration
	if err := yaml.UnmarshalStrict(b, &vwc); err != nil {
		t.Fatalf("deploy/base/webhookconfiguration.yaml: %v", err)
	}
	return &vwc
}

// repoRoot is the repository this module sits in.
func repoRoot(t testing.TB) string {
	t.Helper()
	out, err := exec.Command("go", "env", "GOMOD").Output()
	if err != nil {
		t.Fatalf("go env GOMOD: %v", err)
	}
	// testdata/kubecluster/go.mod
	return filepath.Dir(filepath.Dir(filepath.Dir(strings.TrimSpace(string(out)))))
}

// settled waits until the ledger's quota of ns uses n pods, none of them
// a reservation: every create's own event has arrived.
func (e *enforcer) settled(t testing.TB, ns string, n int) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		out, errOut, _ := e.run("explain", "quota", "-n", ns)
		out += errOut
		used, err := resource.ParseQuantity(e.used(t, ns, "pods"))
		if err == nil && used.Value() == int64(n) && !strings.Contains(out, "reserved") {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("the ledger's pods of %s, 30s on, want %d with no reservation:\n%s", ns, n, out)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// webhookMetrics reads the webhook's metrics (see parseMetrics).
func (e *enforcer) webhookMetrics(t testing.TB) map[string]float64 {
	t.Helper()
	return scrape(t, e.webhookClient, e.webhookURL+"/metrics")
}

var serveMetrics = regexp.MustCompile(`quota ledger serving.* metrics=(\S+)`)

// ledgerMetrics reads quota serve's metrics (see parseMetrics).
func (e *enforcer) ledgerMetrics(t testing.TB) map[string]float64 {
	t.Helper()
	m := serveMetrics.FindStringSubmatch(e.ledger.Logs.String())
	if m == nil {
		t.Fatalf("no metrics URL in quota serve's log:\n%s", e.ledger.Logs)
	}
	return scrape(t, http.DefaultClient, m[1])
}

func scrape(t testing.TB, client *http.Client, url string) map[string]float64 {
	t.Helper()
	resp, err := client.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return parseMetrics(body)
}

// parseMetrics reads a Prometheus text exposition: each sample's value by
// its name and labels as written (`name{label="v"}`).
func parseMetrics(body []byte) map[string]float64 {
	out := map[string]float64{}
	for _, line := range strings.Split(string(body), "\n") {
		i := strings.LastIndexByte(line, ' ')
		if i < 0 || strings.HasPrefix(line, "#") {
			continue
		}
		if v, err := strconv.ParseFloat(line[i+1:], 64); err == nil {
			out[line[:i]] = v
		}
	}
	return out
}

// metric is the value of a sample of m, failing when there is none.
func metric(t testing.TB, m map[string]float64, sample string) float64 {
	t.Helper()
	v, ok := m[sample]
	if !ok {
		t.Fatalf("the metrics lack %s", sample)
	}
	return v
}
