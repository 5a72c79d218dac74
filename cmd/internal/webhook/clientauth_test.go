package webhook

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net/http"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// issued is a certificate with its key.
type issued struct {
	cert *x509.Certificate
	key  *ecdsa.PrivateKey
}

// issue signs a certificate for name with parent (itself when nil),
// valid from notBefore to notAfter.
func issue(t *testing.T, name string, parent *issued, isCA bool, usage x509.ExtKeyUsage, notBefore, notAfter time.Time) *issued {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(time.Now().UnixNano()), Subject: pkix.Name{CommonName: name},
		NotBefore: notBefore, NotAfter: notAfter, KeyUsage: x509.KeyUsageDigitalSignature,
		IsCA: isCA, BasicConstraintsValid: true,
	}
	if isCA {
		tmpl.KeyUsage |= x509.KeyUsageCertSign
	} else {
		tmpl.ExtKeyUsage = []x509.ExtKeyUsage{usage}
	}
	signer := &issued{cert: tmpl, key: key}
	if parent != nil {
		signer = parent
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, signer.cert, &key.PublicKey, signer.key)
	if err != nil {
		t.Fatal(err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	return &issued{cert: cert, key: key}
}

// TestClientCAVerify checks each rule by which a caller is taken or
// refused, on the certificates a TLS handshake would hand over.
func TestClientCAVerify(t *testing.T) {
	now := time.Now()
	day := 24 * time.Hour
	ca := issue(t, "client CA", nil, true, 0, now.Add(-day), now.Add(365*day))
	other := issue(t, "another CA", nil, true, 0, now.Add(-day), now.Add(365*day))
	file := filepath.Join(t.TempDir(), "client-ca.crt")
	if err := os.WriteFile(file, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: ca.cert.Raw}), 0o600); err != nil {
		t.Fatal(err)
	}
	c, err := loadClientCA(file)
	if err != nil {
		t.Fatal(err)
	}
	client := x509.ExtKeyUsageClientAuth
	for _, tc := range []struct {
		name   string
		state  *tls.ConnectionState
		code   int
		reason string
	}{
		{"a certificate of the client CA for client authentication is taken",
			&tls.ConnectionState{PeerCertificates: []*x509.Certificate{issue(t, "kube-apiserver", ca, false, client, now.Add(-day), now.Add(day)).cert}}, 0, ""},
		{"no TLS is no certificate", nil, http.StatusUnauthorized, reasonNoCertificate},
		{"no certificate is 401", &tls.ConnectionState{}, http.StatusUnauthorized, reasonNoCertificate},
		{"a certificate of another CA is 403",
			&tls.ConnectionState{PeerCertificates: []*x509.Certificate{issue(t, "kube-apiserver", other, false, client, now.Add(-day), now.Add(day)).cert}}, http.StatusForbidden, reasonUntrusted},
		{"a self-signed certificate is 403",
			&tls.ConnectionState{PeerCertificates: []*x509.Certificate{issue(t, "self", nil, true, 0, now.Add(-day), now.Add(day)).cert}}, http.StatusForbidden, reasonUntrusted},
		{"a serving certificate of the client CA is 403",
			&tls.ConnectionState{PeerCertificates: []*x509.Certificate{issue(t, "server", ca, false, x509.ExtKeyUsageServerAuth, now.Add(-day), now.Add(day)).cert}}, http.StatusForbidden, reasonUntrusted},
		{"an expired certificate of the client CA is 403, expired",
			&tls.ConnectionState{PeerCertificates: []*x509.Certificate{issue(t, "kube-apiserver", ca, false, client, now.Add(-2*day), now.Add(-day)).cert}}, http.StatusForbidden, reasonExpired},
	} {
		t.Run(tc.name, func(t *testing.T) {
			leaf, refused := c.verify(tc.state, now)
			switch {
			case tc.code == 0 && (refused != nil || leaf == nil):
				t.Fatalf("refused: %+v", refused)
			case tc.code != 0 && (refused == nil || refused.code != tc.code || refused.reason != tc.reason || refused.msg == ""):
				t.Fatalf("got %+v; want %d %s with a message", refused, tc.code, tc.reason)
			}
		})
	}
}

// TestLoadClientCARefusesAFileWithoutCertificates: a webhook told to
// authenticate its callers must not start trusting nobody.
func TestLoadClientCARefusesAFileWithoutCertificates(t *testing.T) {
	file := filepath.Join(t.TempDir(), "client-ca.crt")
	if err := os.WriteFile(file, []byte("not PEM\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := loadClientCA(file); err == nil {
		t.Fatal("a client CA file without a certificate was taken")
	}
}

// TestExpiryWarnings: a certificate far from its end is not warned of;
// one within CertificateExpiryWarning is at once, then once per
// ExpiryWarningInterval.
func TestExpiryWarnings(t *testing.T) {
	t0 := time.Now()
	notAfter := t0.Add(CertificateExpiryWarning + time.Hour)
	var w expiryWarner
	for _, step := range []struct {
		name  string
		at    time.Time
		given bool
	}{
		{"31 days before the end", t0, false},
		{"within 30 days: at once", t0.Add(2 * time.Hour), true},
		{"an hour later", t0.Add(3 * time.Hour), false},
		{"just under a day later", t0.Add(2*time.Hour + ExpiryWarningInterval - time.Second), false},
		{"a day later", t0.Add(2*time.Hour + ExpiryWarningInterval), true},
		{"expired: still daily", notAfter.Add(ExpiryWarningInterval), true},
	} {
		if got := w.due(notAfter, step.at); got != step.given {
			t.Errorf("%s: warned %v, want %v", step.name, got, step.given)
		}
	}
}
