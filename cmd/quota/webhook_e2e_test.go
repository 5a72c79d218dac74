package main

import (
	"bufio"
	"bytes"
	"crypto/ecdsa"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	admissionv1 "k8s.io/api/admission/v1"

	"github.com/quotaledger/quota/ledger/ledgertest"
)

// webhookProc is a running `quota webhook` subprocess and an HTTPS client
// that trusts its certificate's CA.
type webhookProc struct {
	t      *testing.T
	cmd    *exec.Cmd
	base   string
	client *http.Client
	logs   *ledgertest.LogBuffer
	done   chan error
}

// webhookPKI is a CA and a serving certificate for 127.0.0.1 it signed,
// written to files in a directory.
type webhookPKI struct {
	ca                *x509.Certificate
	caKey             *ecdsa.PrivateKey
	pool              *x509.CertPool
	certFile, keyFile string
	// serial is the serial number of the certificate in the files.
	serial string
}

func newWebhookPKI(t *testing.T, dir string) *webhookPKI {
	t.Helper()
	ca, caKey := newCertificate(t, "quota webhook test CA", nil, nil, true)
	pool := x509.NewCertPool()
	pool.AddCert(ca)
	p := &webhookPKI{ca: ca, caKey: caKey, pool: pool, certFile: filepath.Join(dir, "tls.crt"), keyFile: filepath.Join(dir, "tls.key")}
	p.reissue(t)
	return p
}

// reissue writes a new serving certificate and key over the files.
func (p *webhookPKI) reissue(t *testing.T) {
	t.Helper()
	cert, key := newCertificate(t, "quota-webhook", p.ca, p.caKey, false)
	der, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	writePEM(t, filepath.Dir(p.keyFile), filepath.Base(p.keyFile), "EC PRIVATE KEY", der)
	writePEM(t, filepath.Dir(p.certFile), filepath.Base(p.certFile), "CERTIFICATE", cert.Raw)
	p.serial = cert.SerialNumber.String()
}

var webhookServing = regexp.MustCompile(`quota webhook serving.* listen=(\S+)`)

// startWebhook runs `quota webhook` on a free port against the NATS at
// natsURL and waits until it listens.
func startWebhook(t *testing.T, pki *webhookPKI, natsURL string, extra ...string) *webhookProc {
	t.Helper()
	args := append([]string{"webhook", "--listen", "127.0.0.1:0", "--tls-cert", pki.certFile, "--tls-key", pki.keyFile, "--server", natsURL, "--shutdown-delay", "0s"}, extra...)
	cmd := exec.Command(binary, args...)
	pr, pw := io.Pipe()
	w := &webhookProc{t: t, cmd: cmd, logs: &ledgertest.LogBuffer{}, done: make(chan error, 1),
		client: &http.Client{Timeout: time.Minute, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pki.pool}}}}
	cmd.Stderr, cmd.Stdout = pw, w.logs
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	addrs := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(pr)
		for sc.Scan() {
			line := sc.Text()
			w.logs.Write([]byte(line + "\n"))
			if m := webhookServing.FindStringSubmatch(line); m != nil {
				select {
				case addrs <- m[1]:
				default:
				}
			}
		}
	}()
	go func() {
		err := cmd.Wait()
		pw.Close()
		w.done <- err
	}()
	select {
	case addr := <-addrs:
		w.base = "https://" + addr
	case err := <-w.done:
		t.Fatalf("quota webhook exited before serving: %v\n%s", err, w.logs)
	case <-time.After(30 * time.Second):
		_ = cmd.Process.Kill()
		t.Fatalf("quota webhook did not start in 30s\n%s", w.logs)
	}
	t.Cleanup(w.stop)
	return w
}

// stop ends the webhook with SIGTERM and waits for a clean exit.
func (w *webhookProc) stop() {
	if w.cmd.ProcessState != nil {
		return
	}
	_ = w.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case err := <-w.done:
		if err != nil {
			w.t.Errorf("quota webhook did not exit cleanly: %v\n%s", err, w.logs)
		}
	case <-time.After(time.Minute):
		_ = w.cmd.Process.Kill()
		w.t.Errorf("quota webhook did not stop within a minute of SIGTERM\n%s", w.logs)
	}
}

// post sends body to path and returns the status code and the body.
func (w *webhookProc) post(path string, body []byte) (int, []byte) {
	w.t.Helper()
	resp, err := w.client.Post(w.base+path, "application/json", bytes.NewReader(body))
	if err != nil {
		w.t.Fatalf("POST %s: %v", path, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		w.t.Fatal(err)
	}
	return resp.StatusCode, b
}

// get returns the status code and body of GET path.
func (w *webhookProc) get(path string) (int, string) {
	w.t.Helper()
	resp, err := w.client.Get(w.base + path)
	if err != nil {
		w.t.Fatalf("GET %s: %v", path, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// review is an AdmissionReview of a CREATE of object in namespace ns, as
// kube-apiserver sends one: the object's final name and uid set.
func review(uid, ns string, dryRun bool, object string) []byte {
	b, err := json.Marshal(map[string]any{
		"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview",
		"request": map[string]any{
			"uid": uid, "namespace": ns, "operation": "CREATE", "dryRun": dryRun,
			"kind":     map[string]string{"group": "", "version": "v1", "kind": "Pod"},
			"resource": map[string]string{"group": "", "version": "v1", "resource": "pods"},
			"object":   json.RawMessage(object),
			"userInfo": map[string]any{"username": "alice"},
		},
	})
	if err != nil {
		panic(err)
	}
	return b
}

// podObject is a pod as kube-apiserver hands it to validating admission.
func podObject(name, generateName, uid string) string {
	gn := ""
	if generateName != "" {
		gn = `"generateName":"` + generateName + `",`
	}
	return `{"apiVersion":"v1","kind":"Pod","metadata":{` + gn + `"name":"` + name + `","namespace":"team","uid":"` + uid + `"},` +
		`"spec":{"containers":[{"name":"c","image":"registry.example/web:1"}]}}`
}

// admit posts the review of uid to path and returns the response of the
// AdmissionReview replied.
func (w *webhookProc) admit(uid, path string, review []byte) *admissionv1.AdmissionResponse {
	t := w.t
	t.Helper()
	code, body := w.post(path, review)
	if code != http.StatusOK {
		t.Fatalf("review %s: HTTP %d: %s", uid, code, body)
	}
	var out admissionv1.AdmissionReview
	if err := json.Unmarshal(body, &out); err != nil || out.Response == nil {
		t.Fatalf("review %s: reply %s: %v", uid, body, err)
	}
	if string(out.Response.UID) != uid {
		t.Fatalf("review %s: reply for %s", uid, out.Response.UID)
	}
	return out.Response
}

const podsQuota = "apiVersion: v1\nkind: ResourceQuota\nmetadata:\n  name: pods\n  namespace: team\nspec:\n  hard:\n    pods: \"2\"\n"

// TestWebhookRelaysTheLedgersDecisions sends AdmissionReviews to `quota
// webhook` over HTTPS as kube-apiserver does: creates up to the quota are
// allowed and reserved, the next is refused with Kubernetes' quota
// message, a dry run reserves nothing, the reservation of a generateName
// pod (whose final name the review carries) is confirmed by the pod's
// ADDED event, and a create whose object never appears is released when
// its reservation's TTL runs out. Malformed reviews get HTTP errors, and
// the metrics count every verdict.
func TestWebhookRelaysTheLedgersDecisions(t *testing.T) {
	s := startServer(t, t.TempDir(), "--reservation-ttl", "2s")
	write := fileWriter(t, t.TempDir())
	s.mustRun("ingest", write("quota.yaml", podsQuota))
	if got := describedUsed(t, s, "team", "pods", "pods"); got != "0" {
		t.Fatalf("before: used pods %s, want 0", got)
	}
	pki := newWebhookPKI(t, t.TempDir())
	w := startWebhook(t, pki, s.url)
	if code, body := w.get("/readyz"); code != http.StatusOK {
		t.Fatalf("/readyz: %d %s", code, body)
	}

	// A dry run past nothing reserves nothing.
	if r := w.admit("d1", "/validate", review("d1", "team", true, podObject("dry", "", ""))); !r.Allowed {
		t.Fatalf("dry run: denied: %v", r.Result)
	}
	if got := describedUsed(t, s, "team", "pods", "pods"); got != "0" {
		t.Errorf("after a dry run: used pods %s, want 0", got)
	}
	// kube-apiserver resolves generateName before validating admission:
	// the review carries the final name and uid.
	if r := w.admit("c1", "/validate", review("c1", "team", false, podObject("web-x7k2p", "web-", "41d0"))); !r.Allowed {
		t.Fatalf("first create: denied: %v", r.Result)
	}
	if r := w.admit("c2", "/validate", review("c2", "team", false, podObject("lost", "", "41d1"))); !r.Allowed {
		t.Fatalf("second create: denied: %v", r.Result)
	}
	r := w.admit("c3", "/validate", review("c3", "team", false, podObject("third", "", "41d2")))
	const refusal = "exceeded quota: pods, requested: pods=1, used: pods=2, limited: pods=2"
	if r.Allowed || r.Result == nil || r.Result.Code != 403 || !strings.Contains(r.Result.Message, refusal) {
		t.Fatalf("third create: %+v; want a 403 saying %q", r.Result, refusal)
	}
	// A dry run that does not fit is refused the same way, and reserves
	// nothing either.
	if r := w.admit("d2", "/validate", review("d2", "team", true, podObject("dry2", "", ""))); r.Allowed {
		t.Fatal("dry run past the quota: allowed")
	}

	// The pod's own ADDED event confirms its reservation: it counts once.
	s.mustRun("ingest", write("added.json", `{"type":"ADDED","object":`+podObject("web-x7k2p", "web-", "41d0")+"}\n"))
	// The create of "lost" failed later in the chain: no event comes, and
	// its reservation goes when its TTL has run out.
	deadline := time.Now().Add(30 * time.Second)
	for describedUsed(t, s, "team", "pods", "pods") != "1" {
		if time.Now().After(deadline) {
			t.Fatalf("used pods %s 30s on, want 1: the confirmed pod, the lost create released\n%s",
				describedUsed(t, s, "team", "pods", "pods"), s.mustRun("explain", "pods", "-n", "team"))
		}
		time.Sleep(50 * time.Millisecond)
	}
	if out := s.mustRun("explain", "pods", "-n", "team"); strings.Contains(out, "reserved") || !strings.Contains(out, "pods/web-x7k2p") || strings.Contains(out, "lost") {
		t.Errorf("explain after the release:\n%s", out)
	}
	if r := w.admit("c4", "/validate", review("c4", "team", false, podObject("fourth", "", "41d3"))); !r.Allowed {
		t.Errorf("a create in the released unit: denied: %v", r.Result)
	}

	for _, tc := range []struct {
		name string
		body string
		code int
		says string
	}{
		{"not JSON", "pods please", 400, "not an AdmissionReview"},
		{"v1beta1", `{"apiVersion":"admission.k8s.io/v1beta1","kind":"AdmissionReview","request":{"uid":"x","namespace":"team"}}`, 400, "admissionReviewVersions"},
		{"no request", `{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview"}`, 400, "no request"},
		{"no namespace", `{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","request":{"uid":"x","operation":"CREATE"}}`, 400, "has no namespace"},
		{"a namespace no subject can name", `{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","request":{"uid":"x","namespace":"a.b"}}`, 400, "namespace"},
	} {
		code, body := w.post("/validate", []byte(tc.body))
		var st struct {
			Kind    string `json:"kind"`
			Code    int    `json:"code"`
			Message string `json:"message"`
		}
		if err := json.Unmarshal(body, &st); err != nil || code != tc.code || st.Kind != "Status" || st.Code != tc.code || !strings.Contains(st.Message, tc.says) {
			t.Errorf("%s: HTTP %d %s; want %d with a Status saying %q", tc.name, code, body, tc.code, tc.says)
		}
	}

	_, text := w.get("/metrics")
	for _, want := range []string{
		`quota_webhook_requests_total{verdict="allowed"} 4`,
		`quota_webhook_requests_total{verdict="denied"} 2`,
		`quota_webhook_requests_total{verdict="error"} 5`,
		`quota_webhook_request_duration_seconds_count{verdict="allowed"} 4`,
		`quota_webhook_requests_in_flight 0`,
		`quota_webhook_nats_connected 1`,
	} {
		if !strings.Contains(text, want+"\n") {
			t.Errorf("metrics lack %q", want)
		}
	}
}

// TestWebhookAnswersWithinTheTimeoutAndWithoutNATS runs the ledger on an
// external NATS: a ledger that does not answer (stopped with SIGSTOP) gets
// the review a 504 within the API server's ?timeout=, and once NATS is
// gone the webhook is not ready and answers reviews with a 503 at once.
func TestWebhookAnswersWithinTheTimeoutAndWithoutNATS(t *testing.T) {
	dir := t.TempDir()
	ns := startNATS(t, &server.Options{JetStream: true, StoreDir: filepath.Join(dir, "js")})
	s := startServer(t, filepath.Join(dir, "data"), "--nats", ns.ClientURL())
	s.mustRun("ingest", fileWriter(t, dir)("quota.yaml", podsQuota))
	pki := newWebhookPKI(t, t.TempDir())
	w := startWebhook(t, pki, ns.ClientURL())
	if r := w.admit("a", "/validate", review("a", "team", true, podObject("a", "", ""))); !r.Allowed {
		t.Fatalf("with the ledger up: denied: %v", r.Result)
	}

	if err := s.cmd.Process.Signal(syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	waitStopped(t, s.cmd.Process.Pid)
	start := time.Now()
	code, body := w.post("/validate?timeout=2s", review("b", "team", true, podObject("b", "", "")))
	took := time.Since(start)
	if err := s.cmd.Process.Signal(syscall.SIGCONT); err != nil {
		t.Fatal(err)
	}
	if code != http.StatusGatewayTimeout || !strings.Contains(string(body), "did not answer quota.admit.team within 1.8s") {
		t.Errorf("a ledger that does not answer: HTTP %d %s; want 504", code, body)
	}
	if took >= 2*time.Second {
		t.Errorf("answered after %s, not within the API server's timeout of 2s", took)
	}

	ns.Shutdown()
	deadline := time.Now().Add(30 * time.Second)
	for {
		code, body := w.get("/readyz")
		if code == http.StatusServiceUnavailable && strings.Contains(body, "not connected") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("/readyz with NATS gone: %d %s", code, body)
		}
		time.Sleep(20 * time.Millisecond)
	}
	if code, _ := w.get("/healthz"); code != http.StatusOK {
		t.Errorf("/healthz with NATS gone: %d, want 200 (the process serves)", code)
	}
	code, body = w.post("/validate", review("c", "team", false, podObject("c", "", "")))
	if code != http.StatusServiceUnavailable || !strings.Contains(string(body), "NATS is not connected") {
		t.Errorf("with NATS gone: HTTP %d %s; want 503 saying NATS is not connected", code, body)
	}
}

// TestWebhookReloadsItsCertificate replaces the serving certificate's
// files, as cert-manager does: new connections get the new certificate
// without a restart, and a half-written pair leaves the old one serving.
func TestWebhookReloadsItsCertificate(t *testing.T) {
	s := startServer(t, t.TempDir())
	pki := newWebhookPKI(t, t.TempDir())
	w := startWebhook(t, pki, s.url, "--cert-poll-interval", "50ms")
	served := func() string {
		t.Helper()
		conn, err := tls.Dial("tcp", strings.TrimPrefix(w.base, "https://"), &tls.Config{RootCAs: pki.pool})
		if err != nil {
			t.Fatalf("handshake: %v", err)
		}
		defer conn.Close()
		return conn.ConnectionState().PeerCertificates[0].SerialNumber.String()
	}
	if got := served(); got != pki.serial {
		t.Fatalf("serving serial %s, want %s", got, pki.serial)
	}
	old := pki.serial
	// A certificate written without its key does not load: the old pair
	// keeps serving.
	keyPEM, err := os.ReadFile(pki.keyFile)
	if err != nil {
		t.Fatal(err)
	}
	pki.reissue(t)
	newKey, err := os.ReadFile(pki.keyFile)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(pki.keyFile, keyPEM, 0o600); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(30 * time.Second)
	for !strings.Contains(w.logs.String(), "serving certificate not reloaded") {
		if time.Now().After(deadline) {
			t.Fatalf("a mismatched pair was not reported\n%s", w.logs)
		}
		time.Sleep(20 * time.Millisecond)
	}
	if got := served(); got != old {
		t.Errorf("with a mismatched pair on disk: serving %s, want the old %s", got, old)
	}
	if err := os.WriteFile(pki.keyFile, newKey, 0o600); err != nil {
		t.Fatal(err)
	}
	for served() != pki.serial {
		if time.Now().After(deadline) {
			t.Fatalf("the new certificate %s was not served within 30s\n%s", pki.serial, w.logs)
		}
		time.Sleep(20 * time.Millisecond)
	}
	if r := w.admit("r", "/validate", review("r", "team", true, podObject("r", "", ""))); !r.Allowed {
		t.Errorf("after the rotation: denied: %v", r.Result)
	}
}

// TestWebhookStopsAfterItsShutdownDelay stops the webhook with SIGTERM:
// it turns not ready at once, goes on answering reviews through its
// --shutdown-delay (the cluster is still sending some), then exits
// cleanly.
func TestWebhookStopsAfterItsShutdownDelay(t *testing.T) {
	s := startServer(t, t.TempDir())
	pki := newWebhookPKI(t, t.TempDir())
	w := startWebhook(t, pki, s.url, "--shutdown-delay", "5s")
	if code, _ := w.get("/readyz"); code != http.StatusOK {
		t.Fatalf("/readyz before the stop: %d", code)
	}
	if err := w.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(20 * time.Second)
	for {
		code, body := w.get("/readyz")
		if code == http.StatusServiceUnavailable && strings.Contains(body, "stopping") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("/readyz 20s after SIGTERM: %d %s", code, body)
		}
		time.Sleep(20 * time.Millisecond)
	}
	if r := w.admit("s", "/validate", review("s", "team", true, podObject("s", "", ""))); !r.Allowed {
		t.Errorf("a review during the shutdown delay: denied: %v", r.Result)
	}
	select {
	case err := <-w.done:
		if err != nil {
			t.Errorf("the webhook did not exit cleanly: %v\n%s", err, w.logs)
		}
	case <-time.After(time.Minute):
		t.Fatalf("the webhook did not exit within a minute of SIGTERM\n%s", w.logs)
	}
	if !strings.Contains(w.logs.String(), "still taking reviews") {
		t.Errorf("the webhook's log does not say it went on taking reviews:\n%s", w.logs)
	}
}

// waitStopped waits until every thread of process pid is stopped: a
// SIGSTOP is delivered to each thread as it is next scheduled, and on a
// busy machine a thread may first run on.
func waitStopped(t *testing.T, pid int) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		tasks, err := filepath.Glob(fmt.Sprintf("/proc/%d/task/*/stat", pid))
		if err != nil || len(tasks) == 0 {
			t.Fatalf("threads of process %d: %v", pid, err)
		}
		stopped := true
		for _, task := range tasks {
			b, err := os.ReadFile(task)
			if err != nil {
				stopped = false
				break
			}
			// The state follows the command's closing parenthesis.
			i := bytes.LastIndexByte(b, ')')
			if i < 0 || i+2 >= len(b) || b[i+2] != 'T' {
				stopped = false
				break
			}
		}
		if stopped {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("process %d did not stop within 10s of SIGSTOP", pid)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// as is w with client as its HTTPS client.
func (w *webhookProc) as(client *http.Client) *webhookProc {
	c := *w
	c.client = client
	return &c
}

// clientWith is an HTTPS client that trusts roots and presents the pair
// in certFile and keyFile.
func clientWith(t *testing.T, roots *x509.CertPool, serverName, certFile, keyFile string) *http.Client {
	t.Helper()
	pair, err := tls.LoadX509KeyPair(certFile, keyFile)
	if err != nil {
		t.Fatal(err)
	}
	return &http.Client{Timeout: time.Minute, Transport: &http.Transport{TLSClientConfig: &tls.Config{
		RootCAs: roots, ServerName: serverName, Certificates: []tls.Certificate{pair}}}}
}

// gauge is the value of the metric sample named in the text of /metrics.
func gauge(t *testing.T, metrics, sample string) float64 {
	t.Helper()
	m := regexp.MustCompile(`(?m)^` + regexp.QuoteMeta(sample) + ` (\S+)$`).FindStringSubmatch(metrics)
	if m == nil {
		t.Fatalf("no %s in the metrics", sample)
	}
	v, err := strconv.ParseFloat(m[1], 64)
	if err != nil {
		t.Fatalf("%s: %v", sample, err)
	}
	return v
}

// TestWebhookTakesReviewsOnlyFromItsClientCA runs the webhook with the
// client CA `quota credentials` writes: a review forged by a caller
// without a certificate gets 401 and one with a certificate of another CA
// 403, each with a Status saying why, a log line and a count, and neither
// reserves anything; the certificate made for kube-apiserver is taken and
// its create reserved. The probes and /metrics need no certificate.
func TestWebhookTakesReviewsOnlyFromItsClientCA(t *testing.T) {
	dir := t.TempDir()
	s := startServer(t, filepath.Join(dir, "data"))
	s.mustRun("ingest", fileWriter(t, dir)("quota.yaml", podsQuota))
	creds := filepath.Join(dir, "credentials")
	s.mustRun("credentials", creds)
	pki := newWebhookPKI(t, t.TempDir())
	w := startWebhook(t, pki, s.url, "--client-ca", filepath.Join(creds, "client-ca.crt"))

	ghost := review("ghost", "team", false, podObject("ghost", "", "6f00"))
	intruderCA, intruderKey := newCertificate(t, "intruder CA", nil, nil, true)
	cert, key := newCertificate(t, "kube-apiserver", intruderCA, intruderKey, false)
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	intruder := clientWith(t, pki.pool, "", writePEM(t, dir, "intruder.crt", "CERTIFICATE", cert.Raw), writePEM(t, dir, "intruder.key", "EC PRIVATE KEY", keyDER))
	for _, tc := range []struct {
		name   string
		caller *webhookProc
		code   int
		says   string
	}{
		{"no certificate", w, http.StatusUnauthorized, "no client certificate"},
		{"a certificate of another CA", w.as(intruder), http.StatusForbidden, "not accepted by the client CA"},
	} {
		code, body := tc.caller.post("/validate", ghost)
		var st struct {
			Kind    string `json:"kind"`
			Code    int    `json:"code"`
			Message string `json:"message"`
		}
		if err := json.Unmarshal(body, &st); err != nil || code != tc.code || st.Kind != "Status" || st.Code != tc.code || !strings.Contains(st.Message, tc.says) {
			t.Errorf("a forged review with %s: HTTP %d %s; want %d with a Status saying %q", tc.name, code, body, tc.code, tc.says)
		}
	}
	if got := describedUsed(t, s, "team", "pods", "pods"); got != "0" {
		t.Errorf("after the forged reviews: used pods %s, want 0\n%s", got, s.mustRun("explain", "pods", "-n", "team"))
	}

	apiserver := w.as(clientWith(t, pki.pool, "", filepath.Join(creds, "apiserver-client.crt"), filepath.Join(creds, "apiserver-client.key")))
	if r := apiserver.admit("c1", "/validate", review("c1", "team", false, podObject("real", "", "6f01"))); !r.Allowed {
		t.Fatalf("kube-apiserver's create: denied: %v", r.Result)
	}
	if got := describedUsed(t, s, "team", "pods", "pods"); got != "1" {
		t.Errorf("after kube-apiserver's create: used pods %s, want 1", got)
	}
	for _, path := range []string{"/healthz", "/readyz"} {
		if code, body := w.get(path); code != http.StatusOK {
			t.Errorf("%s without a certificate: %d %s", path, code, body)
		}
	}
	code, text := w.get("/metrics")
	if code != http.StatusOK {
		t.Fatalf("/metrics without a certificate: %d", code)
	}
	for _, want := range []string{
		`quota_webhook_unauthenticated_total{reason="no_certificate"} 1`,
		`quota_webhook_unauthenticated_total{reason="untrusted"} 1`,
		`quota_webhook_unauthenticated_total{reason="expired"} 0`,
		`quota_webhook_requests_total{verdict="allowed"} 1`,
		`quota_webhook_requests_total{verdict="error"} 0`,
	} {
		if !strings.Contains(text, want+"\n") {
			t.Errorf("metrics lack %q", want)
		}
	}
	clientCert := readCertificateFile(t, filepath.Join(creds, "apiserver-client.crt"))
	if got := gauge(t, text, "quota_webhook_client_certificate_expiry_timestamp_seconds"); got != float64(clientCert.NotAfter.Unix()) {
		t.Errorf("client certificate expiry %v, want %d", got, clientCert.NotAfter.Unix())
	}
	if n := strings.Count(w.logs.String(), "review refused: caller not authenticated"); n != 2 {
		t.Errorf("%d log lines of refused callers, want 2:\n%s", n, w.logs)
	}
}

// readCertificateFile reads the first certificate of a PEM file.
func readCertificateFile(t *testing.T, path string) *x509.Certificate {
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

// TestWebhookWarnsOfItsCertificatesExpiry serves a certificate that ends
// within the hour: its expiry is exported, and the log warns of it at
// start. One that `quota credentials` made, good for a year, is exported
// the same and warned of not at all.
func TestWebhookWarnsOfItsCertificatesExpiry(t *testing.T) {
	s := startServer(t, t.TempDir())
	pki := newWebhookPKI(t, t.TempDir())
	w := startWebhook(t, pki, s.url)
	_, text := w.get("/metrics")
	if got, want := gauge(t, text, "quota_webhook_certificate_expiry_timestamp_seconds"), readCertificateFile(t, pki.certFile).NotAfter.Unix(); got != float64(want) {
		t.Errorf("certificate expiry %v, want %d", got, want)
	}
	if !strings.Contains(w.logs.String(), "serving certificate expires soon") {
		t.Errorf("no warning of a certificate that ends within the hour:\n%s", w.logs)
	}
	// quota status hears of it from the webhook, and warns too.
	var status string
	for deadline := time.Now().Add(10 * time.Second); !strings.Contains(status, "WARNING: the serving certificate expires in"); {
		if time.Now().After(deadline) {
			t.Fatalf("quota status does not warn of the webhook's certificate:\n%s", status)
		}
		time.Sleep(50 * time.Millisecond)
		status = s.mustRun("status")
	}
	host, _ := os.Hostname()
	if !strings.Contains(status, "Webhook "+host+": certificate expires "+readCertificateFile(t, pki.certFile).NotAfter.UTC().Format(time.RFC3339)) {
		t.Errorf("quota status does not name the webhook and its certificate's expiry:\n%s", status)
	}

	creds := filepath.Join(t.TempDir(), "credentials")
	s.mustRun("credentials", creds)
	yearly := &webhookPKI{pool: x509.NewCertPool(), certFile: filepath.Join(creds, "tls.crt"), keyFile: filepath.Join(creds, "tls.key")}
	yearly.pool.AddCert(readCertificateFile(t, filepath.Join(creds, "ca.crt")))
	w = startWebhook(t, yearly, s.url)
	w.client = clientWith(t, yearly.pool, "quota-webhook.quota-system.svc", filepath.Join(creds, "apiserver-client.crt"), filepath.Join(creds, "apiserver-client.key"))
	_, text = w.get("/metrics")
	if got, want := gauge(t, text, "quota_webhook_certificate_expiry_timestamp_seconds"), readCertificateFile(t, yearly.certFile).NotAfter.Unix(); got != float64(want) {
		t.Errorf("certificate expiry %v, want %d", got, want)
	}
	if strings.Contains(w.logs.String(), "expires soon") {
		t.Errorf("a warning of a certificate good for a year:\n%s", w.logs)
	}
}
