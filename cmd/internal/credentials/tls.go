package credentials

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// Files of the webhook's certificates. The serving pair and its CA are
// named as a kubernetes.io/tls Secret's keys.
const (
	// CAFile is the CA kube-apiserver trusts for the webhook's serving
	// certificate (the webhook configuration's caBundle).
	CAFile = "ca.crt"
	// CAKeyFile is that CA's key, kept for Renew. It stays out of the
	// cluster.
	CAKeyFile = "ca.key"
	// CertFile and KeyFile are the webhook's serving pair.
	CertFile = "tls.crt"
	KeyFile  = "tls.key"
	// ClientCAFile is the CA the webhook trusts for its callers
	// (`quota webhook --client-ca`); ClientCAKeyFile is its key, kept for
	// Renew and out of the cluster.
	ClientCAFile    = "client-ca.crt"
	ClientCAKeyFile = "client-ca.key"
	// ClientCertFile and ClientKeyFile are kube-apiserver's client pair,
	// signed by the client CA, which it presents to the webhook.
	ClientCertFile = "apiserver-client.crt"
	ClientKeyFile  = "apiserver-client.key"

	// CertificateValidity is how long the serving and client certificates
	// are valid: Renew makes new ones before then.
	CertificateValidity = 365 * 24 * time.Hour
	// CAValidity is how long the CAs are valid: they outlive many
	// renewals, so that kube-apiserver's caBundle and the webhook's
	// --client-ca stay as they are.
	CAValidity = 10 * 365 * 24 * time.Hour
	// CAValidityLeftMin is the least time a CA must have left for Renew to
	// sign with it.
	CAValidityLeftMin = 30 * 24 * time.Hour

	// ClientCommonName is the subject of kube-apiserver's client
	// certificate. The webhook does not read it: any certificate of the
	// client CA may call it.
	ClientCommonName = "kube-apiserver"
)

// ServiceNames are the DNS names by which kube-apiserver reaches the
// Service.
func ServiceNames(namespace, service string) []string {
	return []string{
		service + "." + namespace + ".svc",
		service + "." + namespace + ".svc.cluster.local",
	}
}

// authority is a CA with its key.
type authority struct {
	cert *x509.Certificate
	key  *ecdsa.PrivateKey
}

func serialNumber() (*big.Int, error) {
	return rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 127))
}

// newAuthority makes a CA valid for CAValidity from now, which may sign
// end certificates and no other CA.
func newAuthority(name string, now time.Time) (*authority, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	serial, err := serialNumber()
	if err != nil {
		return nil, err
	}
	tmpl := &x509.Certificate{
		SerialNumber:          serial,
		Subject:               pkix.Name{CommonName: name},
		NotBefore:             now.Add(-time.Hour),
		NotAfter:              now.Add(CAValidity),
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageCRLSign,
		IsCA:                  true,
		BasicConstraintsValid: true,
		MaxPathLenZero:        true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return nil, err
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, err
	}
	return &authority{cert: cert, key: key}, nil
}

// loadAuthority reads a CA and its key from dir, and checks that the key
// is its owner's alone, is the certificate's, and that the CA has at
// least CAValidityLeftMin left at now.
func loadAuthority(dir, certFile, keyFile string, now time.Time) (*authority, error) {
	keyPath := filepath.Join(dir, keyFile)
	fi, err := os.Stat(keyPath)
	if errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("%s: %w: only credentials written with their CA keys can be renewed; "+
			"write a new set with `quota credentials NEWDIR`, copy its %s over this directory's (keeping the NATS keys), "+
			"give kube-apiserver its new files and apply deploy/ again, as on a first install", keyPath, ErrNoCAKey, strings.Join(certificateFiles(), ", "))
	}
	if err != nil {
		return nil, err
	}
	if fi.Mode().Perm()&0o077 != 0 {
		return nil, fmt.Errorf("%s has mode %04o: %w; chmod 600 it (and keep it out of the cluster)", keyPath, fi.Mode().Perm(), ErrCAKeyExposed)
	}
	cert, err := readCertificate(filepath.Join(dir, certFile))
	if err != nil {
		return nil, err
	}
	key, err := readKey(keyPath)
	if err != nil {
		return nil, err
	}
	if !key.PublicKey.Equal(cert.PublicKey) {
		return nil, fmt.Errorf("%s, %s: %w", keyPath, certFile, ErrCAKeyMismatch)
	}
	if left := cert.NotAfter.Sub(now); left < CAValidityLeftMin {
		return nil, fmt.Errorf("%s expires %s: %w; write a new set of credentials (`quota credentials NEWDIR`)",
			filepath.Join(dir, certFile), cert.NotAfter.Format(time.RFC3339), ErrCAExpiring)
	}
	return &authority{cert: cert, key: key}, nil
}

// leaf is what an end certificate says of its holder.
type leaf struct {
	subject  pkix.Name
	dnsNames []string
	usage    x509.ExtKeyUsage
}

// issue makes a new key and a certificate for it, valid from now for
// CertificateValidity or until the CA expires, whichever comes first.
func (a *authority) issue(l leaf, now time.Time) (certPEM, keyPEM []byte, err error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, nil, err
	}
	serial, err := serialNumber()
	if err != nil {
		return nil, nil, err
	}
	notAfter := now.Add(CertificateValidity)
	if a.cert.NotAfter.Before(notAfter) {
		notAfter = a.cert.NotAfter
	}
	tmpl := &x509.Certificate{
		SerialNumber: serial,
		Subject:      l.subject,
		DNSNames:     l.dnsNames,
		NotBefore:    now.Add(-time.Hour),
		NotAfter:     notAfter,
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{l.usage},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, a.cert, &key.PublicKey, a.key)
	if err != nil {
		return nil, nil, err
	}
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		return nil, nil, err
	}
	return certificatePEM(der), pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER}), nil
}

// files is the CA's certificate and key as PEM files.
func (a *authority) files(certFile, keyFile string) ([]file, error) {
	keyDER, err := x509.MarshalECPrivateKey(a.key)
	if err != nil {
		return nil, err
	}
	return []file{
		{keyFile, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER})},
		{certFile, certificatePEM(a.cert.Raw)},
	}, nil
}

// servingLeaf is the webhook's serving certificate for the Service's
// names.
func servingLeaf(names []string) leaf {
	return leaf{subject: pkix.Name{CommonName: names[0]}, dnsNames: names, usage: x509.ExtKeyUsageServerAuth}
}

// clientLeaf is kube-apiserver's client certificate.
func clientLeaf() leaf {
	return leaf{subject: pkix.Name{CommonName: ClientCommonName}, usage: x509.ExtKeyUsageClientAuth}
}

// issuePairs signs the serving pair with ca and kube-apiserver's client
// pair with clientCA.
func issuePairs(ca, clientCA *authority, serving leaf, now time.Time) ([]file, error) {
	cert, key, err := ca.issue(serving, now)
	if err != nil {
		return nil, fmt.Errorf("issue the serving certificate: %w", err)
	}
	clientCert, clientKey, err := clientCA.issue(clientLeaf(), now)
	if err != nil {
		return nil, fmt.Errorf("issue kube-apiserver's client certificate: %w", err)
	}
	return []file{{KeyFile, key}, {CertFile, cert}, {ClientKeyFile, clientKey}, {ClientCertFile, clientCert}}, nil
}

func certificatePEM(der []byte) []byte {
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
}

// readCertificate reads the first certificate of a PEM file.
func readCertificate(path string) (*x509.Certificate, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	block, _ := pem.Decode(b)
	if block == nil || block.Type != "CERTIFICATE" {
		return nil, fmt.Errorf("%s: no PEM certificate", path)
	}
	cert, err := x509.ParseCertificate(block.Bytes)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return cert, nil
}

// readKey reads an EC private key from a PEM file.
func readKey(path string) (*ecdsa.PrivateKey, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	block, _ := pem.Decode(b)
	if block == nil || block.Type != "EC PRIVATE KEY" {
		return nil, fmt.Errorf("%s: no PEM EC private key", path)
	}
	key, err := x509.ParseECPrivateKey(block.Bytes)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return key, nil
}
