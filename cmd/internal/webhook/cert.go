package webhook

import (
	"context"
	"crypto/tls"
	"fmt"
	"log/slog"
	"os"
	"sync/atomic"
	"time"
)

// certificate is the serving certificate, replaced when its files change.
type certificate struct {
	certFile, keyFile string
	current           atomic.Pointer[tls.Certificate]
	// stamp is what the files looked like when current was loaded.
	stamp fileStamp
	// expiry warns while the certificate in use expires soon.
	expiry expiryWarner
}

// fileStamp tells two versions of the certificate files apart.
type fileStamp struct {
	certMod, keyMod   time.Time
	certSize, keySize int64
}

func stampOf(certFile, keyFile string) (fileStamp, error) {
	c, err := os.Stat(certFile)
	if err != nil {
		return fileStamp{}, err
	}
	k, err := os.Stat(keyFile)
	if err != nil {
		return fileStamp{}, err
	}
	return fileStamp{certMod: c.ModTime(), keyMod: k.ModTime(), certSize: c.Size(), keySize: k.Size()}, nil
}

// loadCertificate reads the pair for the first time: a pair that does not
// load is an error.
func loadCertificate(certFile, keyFile string) (*certificate, error) {
	c := &certificate{certFile: certFile, keyFile: keyFile}
	stamp, err := stampOf(certFile, keyFile)
	if err != nil {
		return nil, fmt.Errorf("serving certificate: %w", err)
	}
	pair, err := tls.LoadX509KeyPair(certFile, keyFile)
	if err != nil {
		return nil, fmt.Errorf("serving certificate %s with key %s: %w", certFile, keyFile, err)
	}
	c.current.Store(&pair)
	c.stamp = stamp
	return c, nil
}

// get is tls.Config.GetCertificate.
func (c *certificate) get(*tls.ClientHelloInfo) (*tls.Certificate, error) {
	return c.current.Load(), nil
}

// reload loads the pair again if its files changed since the last load.
// A pair that does not load (one file written, not yet the other) keeps
// the current one, and is tried again at the next call.
func (c *certificate) reload() (bool, error) {
	stamp, err := stampOf(c.certFile, c.keyFile)
	if err != nil {
		return false, err
	}
	if stamp == c.stamp {
		return false, nil
	}
	pair, err := tls.LoadX509KeyPair(c.certFile, c.keyFile)
	if err != nil {
		return false, err
	}
	c.current.Store(&pair)
	c.stamp = stamp
	return true, nil
}

// observe exports when the certificate in use expires, and warns when
// that is soon (see expiryWarner).
func (c *certificate) observe(now time.Time, m *metrics, log *slog.Logger) {
	leaf := c.current.Load().Leaf
	m.certificateExpiry.Set(float64(leaf.NotAfter.Unix()))
	if c.expiry.due(leaf.NotAfter, now) {
		log.Warn("serving certificate expires soon: renew it (quota credentials --renew and apply deploy/ again, or let cert-manager), "+
			"or kube-apiserver refuses every request the webhook is registered for",
			"cert", c.certFile, "subject", leaf.Subject.String(), "notAfter", leaf.NotAfter, "in", expiresIn(leaf.NotAfter, now))
	}
}

// watch calls reload and observe every interval until ctx ends.
func (c *certificate) watch(ctx context.Context, interval time.Duration, m *metrics, log *slog.Logger) {
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		c.poll(time.Now(), m, log)
	}
}

// poll loads the pair again if its files changed, and observes the one in
// use.
func (c *certificate) poll(now time.Time, m *metrics, log *slog.Logger) {
	changed, err := c.reload()
	switch {
	case err != nil:
		log.Warn("serving certificate not reloaded; the previous one serves", "cert", c.certFile, "key", c.keyFile, "err", err)
	case changed:
		leaf := c.current.Load().Leaf
		log.Info("serving certificate reloaded", "cert", c.certFile, "subject", leaf.Subject.String(), "notAfter", leaf.NotAfter)
	}
	c.observe(now, m, log)
}
