package credentials

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"os"
	"path/filepath"
	"time"
)

// Files of the webhook's serving certificate, named as a
// kubernetes.io/tls Secret's keys.
const (
	CAFile   = "ca.crt"
	CertFile = "tls.crt"
	KeyFile  = "tls.key"
	// CertificateValidity is how long the CA and the serving certificate
	// are valid.
	CertificateValidity = 365 * 24 * time.Hour
)

// ServiceNames are the DNS names by which kube-apiserver reaches the
// Service.
func ServiceNames(namespace, service string) []string {
	return []string{
		service + "." + namespace + ".svc",
		service + "." + namespace + ".svc.cluster.local",
	}
}

// tlsWrite makes a CA, signs with it a serving certificate for the
// Service's names, and writes the CA's certificate and the serving pair;
// the CA's key is dropped.
func tlsWrite(dir, namespace, service string) error {
	now := time.Now()
	serial := func() (*big.Int, error) { return rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 127)) }
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return err
	}
	caSerial, err := serial()
	if err != nil {
		return err
	}
	caTmpl := &x509.Certificate{
		SerialNumber:          caSerial,
		Subject:               pkix.Name{CommonName: "quota webhook CA (" + namespace + ")"},
		NotBefore:             now.Add(-time.Hour),
		NotAfter:              now.Add(CertificateValidity),
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageCRLSign,
		IsCA:                  true,
		BasicConstraintsValid: true,
		MaxPathLenZero:        true,
	}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		return err
	}
	ca, err := x509.ParseCertificate(caDER)
	if err != nil {
		return err
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return err
	}
	names := ServiceNames(namespace, service)
	leafSerial, err := serial()
	if err != nil {
		return err
	}
	leaf := &x509.Certificate{
		SerialNumber: leafSerial,
		Subject:      pkix.Name{CommonName: names[0]},
		DNSNames:     names,
		NotBefore:    now.Add(-time.Hour),
		NotAfter:     now.Add(CertificateValidity),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, leaf, ca, &key.PublicKey, caKey)
	if err != nil {
		return err
	}
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		return err
	}
	for _, f := range []struct {
		name, kind string
		der        []byte
	}{{CAFile, "CERTIFICATE", caDER}, {CertFile, "CERTIFICATE", der}, {KeyFile, "EC PRIVATE KEY", keyDER}} {
		if err := os.WriteFile(filepath.Join(dir, f.name), pem.EncodeToMemory(&pem.Block{Type: f.kind, Bytes: f.der}), 0o600); err != nil {
			return err
		}
	}
	return nil
}
