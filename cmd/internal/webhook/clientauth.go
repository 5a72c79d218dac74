package webhook

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net/http"
	"os"
	"time"
)

// Reasons a caller is refused, the label of quota_webhook_unauthenticated_total.
const (
	// reasonNoCertificate: the caller presented no client certificate (401).
	reasonNoCertificate = "no_certificate"
	// reasonExpired: its certificate is of the client CA but expired, or
	// not yet valid (403).
	reasonExpired = "expired"
	// reasonUntrusted: its certificate is not one the client CA signed for
	// client authentication (403).
	reasonUntrusted = "untrusted"
)

// clientCA is the CA whose client certificates may post reviews.
type clientCA struct {
	file  string
	roots *x509.CertPool
}

// loadClientCA reads the CA certificates of file.
func loadClientCA(file string) (*clientCA, error) {
	b, err := os.ReadFile(file)
	if err != nil {
		return nil, fmt.Errorf("client CA: %w", err)
	}
	roots := x509.NewCertPool()
	if !roots.AppendCertsFromPEM(b) {
		return nil, fmt.Errorf("client CA %s: %w", file, ErrNoClientCA)
	}
	return &clientCA{file: file, roots: roots}, nil
}

// refusal is why a caller may not post reviews.
type refusal struct {
	code   int
	reason string
	msg    string
}

// verify returns the client certificate of state if the client CA signed
// it for client authentication and it is valid at now, or why not.
// The TLS handshake only asked for a certificate and checked that the
// caller holds its key: verifying it here, rather than in the handshake,
// lets a refused caller be answered, counted and logged, and leaves the
// probes and /metrics, which present none, served.
func (c *clientCA) verify(state *tls.ConnectionState, now time.Time) (*x509.Certificate, *refusal) {
	if state == nil || len(state.PeerCertificates) == 0 {
		return nil, &refusal{http.StatusUnauthorized, reasonNoCertificate, fmt.Sprintf(
			"no client certificate: reviews are taken only from kube-apiserver presenting a certificate of the webhook's client CA (%s), "+
				"as its admission configuration's kubeconfig names one", c.file)}
	}
	leaf := state.PeerCertificates[0]
	intermediates := x509.NewCertPool()
	for _, cert := range state.PeerCertificates[1:] {
		intermediates.AddCert(cert)
	}
	_, err := leaf.Verify(x509.VerifyOptions{
		Roots: c.roots, Intermediates: intermediates, CurrentTime: now,
		KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
	})
	if err == nil {
		return leaf, nil
	}
	reason := reasonUntrusted
	if invalid := (x509.CertificateInvalidError{}); errors.As(err, &invalid) && invalid.Reason == x509.Expired {
		reason = reasonExpired
	}
	return nil, &refusal{http.StatusForbidden, reason, fmt.Sprintf(
		"client certificate %q (issuer %q) not accepted by the client CA %s: %v", leaf.Subject.String(), leaf.Issuer.String(), c.file, err)}
}
