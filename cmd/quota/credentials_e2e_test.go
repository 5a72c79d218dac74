package main

import (
	"bytes"
	"crypto/tls"
	"crypto/x509"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestCredentialsRenewKeepsTheCA serves the webhook with the pair and the
// client CA `quota credentials` wrote, renews them with --renew while it
// runs, and checks: the CAs and NATS keys are the same bytes; the webhook
// reloads the new serving certificate, which verifies against the CA
// kube-apiserver was given first, and exports its expiry; the new client
// pair is taken. Without the CA key, --renew fails saying what to do.
func TestCredentialsRenewKeepsTheCA(t *testing.T) {
	dir := t.TempDir()
	s := startServer(t, filepath.Join(dir, "data"))
	s.mustRun("ingest", fileWriter(t, dir)("quota.yaml", podsQuota))
	creds := filepath.Join(dir, "credentials")
	s.mustRun("credentials", creds)
	kept := []string{"ca.crt", "ca.key", "client-ca.crt", "client-ca.key", "auth.conf", "webhook.nk", "export.nk", "operator.nk", "apiserver-kubeconfig.yaml", "admission-config.yaml"}
	before := map[string][]byte{}
	for _, f := range append(kept, "tls.crt", "apiserver-client.crt") {
		b, err := os.ReadFile(filepath.Join(creds, f))
		if err != nil {
			t.Fatal(err)
		}
		before[f] = b
	}
	for _, f := range []string{"ca.key", "client-ca.key"} {
		if fi, err := os.Stat(filepath.Join(creds, f)); err != nil || fi.Mode().Perm() != 0o600 {
			t.Errorf("%s: %v, mode %v; want 0600", f, err, fi.Mode().Perm())
		}
	}
	// kube-apiserver's caBundle, as applied at install.
	caBundle := x509.NewCertPool()
	caBundle.AppendCertsFromPEM(before["ca.crt"])
	pki := &webhookPKI{pool: caBundle, certFile: filepath.Join(creds, "tls.crt"), keyFile: filepath.Join(creds, "tls.key")}
	w := startWebhook(t, pki, s.url, "--client-ca", filepath.Join(creds, "client-ca.crt"), "--cert-poll-interval", "50ms")
	const host = "quota-webhook.quota-system.svc"
	served := func() *x509.Certificate {
		t.Helper()
		conn, err := tls.Dial("tcp", strings.TrimPrefix(w.base, "https://"), &tls.Config{RootCAs: caBundle, ServerName: host})
		if err != nil {
			t.Fatalf("handshake with the caBundle given at install: %v", err)
		}
		defer conn.Close()
		return conn.ConnectionState().PeerCertificates[0]
	}
	old := served()

	if out := s.mustRun("credentials", "--renew", creds); !strings.Contains(out, "renewed tls.crt, tls.key, apiserver-client.crt, apiserver-client.key") {
		t.Errorf("credentials --renew said %q", out)
	}
	for _, f := range kept {
		b, err := os.ReadFile(filepath.Join(creds, f))
		if err != nil || !bytes.Equal(b, before[f]) {
			t.Errorf("--renew changed %s (%v)", f, err)
		}
	}
	renewed := readCertificateFile(t, filepath.Join(creds, "tls.crt"))
	if renewed.SerialNumber.Cmp(old.SerialNumber) == 0 || renewed.NotAfter.Before(old.NotAfter) {
		t.Fatalf("renewed serving certificate: serial %s, ends %s; the old one: %s, %s", renewed.SerialNumber, renewed.NotAfter, old.SerialNumber, old.NotAfter)
	}
	deadline := time.Now().Add(30 * time.Second)
	for served().SerialNumber.Cmp(renewed.SerialNumber) != 0 {
		if time.Now().After(deadline) {
			t.Fatalf("the renewed certificate is not served 30s on\n%s", w.logs)
		}
		time.Sleep(20 * time.Millisecond)
	}
	w.client = clientWith(t, caBundle, host, filepath.Join(creds, "apiserver-client.crt"), filepath.Join(creds, "apiserver-client.key"))
	if r := w.admit("r", "/validate", review("r", "team", true, podObject("r", "", ""))); !r.Allowed {
		t.Errorf("a review with the renewed client pair: denied: %v", r.Result)
	}
	if code, text := w.get("/metrics"); code != http.StatusOK ||
		gauge(t, text, "quota_webhook_certificate_expiry_timestamp_seconds") != float64(renewed.NotAfter.Unix()) {
		t.Errorf("certificate expiry after the renewal: want %d\n%s", renewed.NotAfter.Unix(), text)
	}

	if err := os.Remove(filepath.Join(creds, "ca.key")); err != nil {
		t.Fatal(err)
	}
	_, errOut, code := s.run("credentials", "--renew", creds)
	if code != exitError || !strings.Contains(errOut, "ca.key") || !strings.Contains(errOut, "quota credentials NEWDIR") {
		t.Errorf("--renew without the CA key: exit %d, %q; want exit %d naming ca.key and what to do", code, errOut, exitError)
	}
}
