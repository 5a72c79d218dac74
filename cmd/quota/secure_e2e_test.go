package main

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/jwt/v2"
	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nkeys"
)

// TestSecuredNATS runs serve against an external NATS that asks for TLS
// with a client certificate and authenticates users by NKey, and the
// clients against it: with --nkey and the --tls-* flags everything works,
// and without them the connection is refused with the reason.
func TestSecuredNATS(t *testing.T) {
	dir := t.TempDir()
	ca, caKey := newCertificate(t, "quota test CA", nil, nil, true)
	srvCert, srvKey := newCertificate(t, "nats", ca, caKey, false)
	cliCert, cliKey := newCertificate(t, "quota", ca, caKey, false)
	caFile := writePEM(t, dir, "ca.pem", "CERTIFICATE", ca.Raw)
	certFile := writePEM(t, dir, "client.pem", "CERTIFICATE", cliCert.Raw)
	keyDER, err := x509.MarshalECPrivateKey(cliKey)
	if err != nil {
		t.Fatal(err)
	}
	keyFile := writePEM(t, dir, "client-key.pem", "EC PRIVATE KEY", keyDER)

	user, err := nkeys.CreateUser()
	if err != nil {
		t.Fatal(err)
	}
	pub, err := user.PublicKey()
	if err != nil {
		t.Fatal(err)
	}
	seed, err := user.Seed()
	if err != nil {
		t.Fatal(err)
	}
	seedFile := filepath.Join(dir, "user.nk")
	if err := os.WriteFile(seedFile, seed, 0o600); err != nil {
		t.Fatal(err)
	}

	pool := x509.NewCertPool()
	pool.AddCert(ca)
	ns := startNATS(t, &server.Options{
		JetStream: true, StoreDir: filepath.Join(dir, "js"),
		TLS: true, TLSVerify: true,
		TLSConfig: &tls.Config{
			Certificates: []tls.Certificate{{Certificate: [][]byte{srvCert.Raw}, PrivateKey: srvKey}},
			ClientCAs:    pool,
			ClientAuth:   tls.RequireAndVerifyClientCert,
			MinVersion:   tls.VersionTLS12,
		},
		Nkeys: []*server.NkeyUser{{Nkey: pub}},
	})
	url := "tls://" + ns.Addr().String()
	secure := []string{"--nkey", seedFile, "--tls-ca", caFile, "--tls-cert", certFile, "--tls-key", keyFile}

	s := startServer(t, filepath.Join(dir, "data"), append([]string{"--nats", url}, secure...)...)
	sample := filepath.Join(samplesDir, "sample-team-a")
	s.mustRun(append([]string{"ingest", filepath.Join(sample, "events.jsonl")}, secure...)...)
	want, err := os.ReadFile(filepath.Join(sample, "describe.txt"))
	if err != nil {
		t.Fatal(err)
	}
	if got := s.mustRun(append([]string{"describe", "-n", "sample-team-a"}, secure...)...); strings.TrimSpace(got) != strings.TrimSpace(string(want)) {
		t.Errorf("describe over the secured NATS:\n%s\nwant:\n%s", got, want)
	}

	for _, tc := range []struct {
		name   string
		flags  []string
		reason string
	}{
		{"no CA", []string{"--nkey", seedFile, "--tls-cert", certFile, "--tls-key", keyFile}, "certificate signed by unknown authority"},
		{"no NKey", []string{"--tls-ca", caFile, "--tls-cert", certFile, "--tls-key", keyFile}, "Authorization Violation"},
		{"a certificate without its key", []string{"--nkey", seedFile, "--tls-ca", caFile, "--tls-cert", certFile}, "--tls-cert and --tls-key go together"},
	} {
		_, errOut, code := s.run(append([]string{"describe", "-n", "sample-team-a"}, tc.flags...)...)
		if code != exitError || !strings.Contains(errOut, tc.reason) {
			t.Errorf("%s: exit %d, %q; want exit %d naming %q", tc.name, code, errOut, exitError, tc.reason)
		}
		if strings.HasPrefix(tc.reason, "--") {
			continue
		}
		if !strings.Contains(errOut, "see --creds, --nkey, --tls-ca") || strings.Contains(errOut, "is 'quota serve' running") {
			t.Errorf("%s: %q should point to the credential and TLS flags, not ask whether serve runs", tc.name, errOut)
		}
	}
}

// newCertificate makes an ECDSA certificate for 127.0.0.1, signed by
// parent (self-signed when parent is nil), a CA when isCA.
func newCertificate(t *testing.T, name string, parent *x509.Certificate, parentKey *ecdsa.PrivateKey, isCA bool) (*x509.Certificate, *ecdsa.PrivateKey) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(time.Now().UnixNano()),
		Subject:               pkix.Name{CommonName: name},
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().Add(time.Hour),
		KeyUsage:              x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign,
		ExtKeyUsage:           []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth},
		IPAddresses:           []net.IP{net.ParseIP("127.0.0.1")},
		IsCA:                  isCA,
		BasicConstraintsValid: true,
	}
	signer, signerKey := tmpl, key
	if parent != nil {
		signer, signerKey = parent, parentKey
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, signer, &key.PublicKey, signerKey)
	if err != nil {
		t.Fatal(err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	return cert, key
}

func writePEM(t *testing.T, dir, name, kind string, der []byte) string {
	t.Helper()
	path := filepath.Join(dir, name)
	if err := os.WriteFile(path, pem.EncodeToMemory(&pem.Block{Type: kind, Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestCredsFile runs serve and the clients against a NATS server in
// decentralized JWT authentication, with a user credentials file.
func TestCredsFile(t *testing.T) {
	dir := t.TempDir()
	operator, err := nkeys.CreateOperator()
	if err != nil {
		t.Fatal(err)
	}
	opub, _ := operator.PublicKey()
	oc := jwt.NewOperatorClaims(opub)
	ojwt, err := oc.Encode(operator)
	if err != nil {
		t.Fatal(err)
	}
	if oc, err = jwt.DecodeOperatorClaims(ojwt); err != nil {
		t.Fatal(err)
	}
	resolver := &server.MemAccResolver{}
	newAccount := func(jetStream bool) (nkeys.KeyPair, string) {
		kp, err := nkeys.CreateAccount()
		if err != nil {
			t.Fatal(err)
		}
		pub, _ := kp.PublicKey()
		ac := jwt.NewAccountClaims(pub)
		if jetStream {
			ac.Limits.JetStreamLimits = jwt.JetStreamLimits{MemoryStorage: -1, DiskStorage: -1, Streams: -1, Consumer: -1}
		}
		token, err := ac.Encode(operator)
		if err != nil {
			t.Fatal(err)
		}
		if err := resolver.Store(pub, token); err != nil {
			t.Fatal(err)
		}
		return kp, pub
	}
	_, sysPub := newAccount(false)
	account, _ := newAccount(true)
	user, err := nkeys.CreateUser()
	if err != nil {
		t.Fatal(err)
	}
	upub, _ := user.PublicKey()
	ujwt, err := jwt.NewUserClaims(upub).Encode(account)
	if err != nil {
		t.Fatal(err)
	}
	seed, _ := user.Seed()
	creds, err := jwt.FormatUserConfig(ujwt, seed)
	if err != nil {
		t.Fatal(err)
	}
	credsFile := filepath.Join(dir, "user.creds")
	if err := os.WriteFile(credsFile, creds, 0o600); err != nil {
		t.Fatal(err)
	}

	ns := startNATS(t, &server.Options{
		JetStream: true, StoreDir: filepath.Join(dir, "js"),
		TrustedOperators: []*jwt.OperatorClaims{oc}, AccountResolver: resolver, SystemAccount: sysPub,
	})
	url := "nats://" + ns.Addr().String()
	s := startServer(t, filepath.Join(dir, "data"), "--nats", url, "--creds", credsFile)
	sample := filepath.Join(samplesDir, "sample-team-a")
	s.mustRun("ingest", filepath.Join(sample, "events.jsonl"), "--creds", credsFile)
	want, err := os.ReadFile(filepath.Join(sample, "describe.txt"))
	if err != nil {
		t.Fatal(err)
	}
	if got := s.mustRun("describe", "-n", "sample-team-a", "--creds", credsFile); strings.TrimSpace(got) != strings.TrimSpace(string(want)) {
		t.Errorf("describe with a credentials file:\n%s\nwant:\n%s", got, want)
	}
	if _, errOut, code := s.run("describe", "-n", "sample-team-a"); code != exitError || !strings.Contains(errOut, "see --creds") {
		t.Errorf("without the credentials: exit %d, %q; want exit %d pointing to --creds", code, errOut, exitError)
	}
}
