package webhook

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
	"golang.org/x/sync/errgroup"
)

// Paths and limits of the endpoint.
const (
	// ValidatePath takes AdmissionReviews.
	ValidatePath = "/validate"
	// HealthPath is 200 while the process serves.
	HealthPath = "/healthz"
	// ReadyPath is 200 while the NATS connection is up.
	ReadyPath = "/readyz"
	// MetricsPath serves Prometheus metrics.
	MetricsPath = "/metrics"

	// DefaultListen is where the endpoint listens.
	DefaultListen = ":8443"
	// DefaultTimeout bounds a review whose request names no ?timeout=.
	DefaultTimeout = 10 * time.Second
	// TimeoutMax bounds any review: the API server allows at most 30s.
	TimeoutMax = 30 * time.Second
	// DefaultCertPollInterval is how often the certificate files are
	// checked for a change.
	DefaultCertPollInterval = 10 * time.Second
	// CertificateExpiryWarning is how long before the serving certificate
	// (or a caller's) expires the webhook starts warning of it in its log.
	CertificateExpiryWarning = 30 * 24 * time.Hour
	// ExpiryWarningInterval is how often that warning is repeated.
	ExpiryWarningInterval = 24 * time.Hour
	// ReviewSizeMax bounds a review's body: an object and its old object
	// of at most the API server's 3 MiB each, and the rest.
	ReviewSizeMax = 7 << 20
	// ShutdownTimeout bounds the wait, on a stop, for the reviews in hand.
	ShutdownTimeout = TimeoutMax + 5*time.Second
	// DefaultShutdownDelay is how long a stopping webhook goes on taking
	// reviews, not ready, before it closes its listener: the time the
	// cluster takes to stop sending it any (its endpoint removed from the
	// Service), so that no review meets a closed port and fails.
	DefaultShutdownDelay = 5 * time.Second

	// SubjectPrefix is followed by the namespace: the ledger's admission
	// subject.
	SubjectPrefix = "quota.admit."

	// Reconnection to NATS: for ever, as a webhook without NATS can only
	// fail its reviews, and /readyz says so meanwhile.
	reconnectWait = 500 * time.Millisecond
	// connectTimeout bounds one attempt to reach NATS.
	connectTimeout = 5 * time.Second
	// readHeaderTimeout bounds the request line and headers.
	readHeaderTimeout = 10 * time.Second
	// idleTimeout is how long a kept-alive connection of the API server
	// waits for its next review.
	idleTimeout = 90 * time.Second
)

// Config configures the webhook.
type Config struct {
	// Listen is HOST:PORT of the HTTPS listener (port 0: any free port).
	// Zero: DefaultListen.
	Listen string
	// CertFile and KeyFile are the PEM serving certificate (its chain
	// after it) and key. Required.
	CertFile, KeyFile string
	// ClientCAFile is the PEM file of the CA whose client certificates
	// alone may post reviews: kube-apiserver's, as its admission
	// configuration names one. Read at start. Zero: any caller that
	// reaches the port may post reviews.
	ClientCAFile string
	// NATSURL is the ledger's NATS. Required.
	NATSURL string
	// NATSOptions are added to the connection: credentials and TLS.
	NATSOptions []nats.Option
	// DefaultTimeout bounds a review whose request names no ?timeout=.
	// Zero: DefaultTimeout.
	DefaultTimeout time.Duration
	// CertPollInterval is how often the certificate files are checked for
	// a change. Zero: DefaultCertPollInterval.
	CertPollInterval time.Duration
	// ShutdownDelay is how long a stopping webhook goes on taking reviews,
	// not ready, before it closes its listener. Zero: none; see
	// DefaultShutdownDelay.
	ShutdownDelay time.Duration
	// Logger receives logs. Nil: slog.Default().
	Logger *slog.Logger
	// Ready, when set, is called once the listener is open, with its
	// address.
	Ready func(addr net.Addr)
}

// Validate reports every problem of c in one error.
func (c *Config) Validate() error {
	var problems []string
	if c.CertFile == "" || c.KeyFile == "" {
		problems = append(problems, "a serving certificate and its key are required (--tls-cert, --tls-key)")
	}
	if strings.TrimSpace(c.NATSURL) == "" {
		problems = append(problems, "the ledger's NATS URL is empty (--server)")
	}
	if c.Listen != "" {
		if _, _, err := net.SplitHostPort(c.Listen); err != nil {
			problems = append(problems, fmt.Sprintf("listen address %q: %v", c.Listen, err))
		}
	}
	if c.DefaultTimeout < 0 || c.DefaultTimeout > TimeoutMax {
		problems = append(problems, fmt.Sprintf("default timeout %s is outside 0..%s", c.DefaultTimeout, TimeoutMax))
	}
	if c.CertPollInterval < 0 {
		problems = append(problems, "certificate poll interval is negative")
	}
	if c.ShutdownDelay < 0 {
		problems = append(problems, "shutdown delay is negative")
	}
	if len(problems) > 0 {
		return fmt.Errorf("invalid webhook config: %s", strings.Join(problems, "; "))
	}
	return nil
}

// Run serves the webhook until ctx ends, then lets the reviews in hand be
// answered (for at most ShutdownTimeout) and returns.
func Run(ctx context.Context, cfg Config) error {
	if err := cfg.Validate(); err != nil {
		return err
	}
	if cfg.Listen == "" {
		cfg.Listen = DefaultListen
	}
	if cfg.DefaultTimeout == 0 {
		cfg.DefaultTimeout = DefaultTimeout
	}
	if cfg.CertPollInterval == 0 {
		cfg.CertPollInterval = DefaultCertPollInterval
	}
	log := cfg.Logger
	if log == nil {
		log = slog.Default()
	}
	certs, err := loadCertificate(cfg.CertFile, cfg.KeyFile)
	if err != nil {
		return err
	}
	var clients *clientCA
	if cfg.ClientCAFile != "" {
		if clients, err = loadClientCA(cfg.ClientCAFile); err != nil {
			return err
		}
	} else {
		log.Warn("no --client-ca: any caller that reaches the port may post reviews and have the ledger reserve quota")
	}
	m := newMetrics()
	certs.observe(time.Now(), m, log)
	nc, err := connect(cfg, m, log)
	if err != nil {
		return err
	}
	defer nc.Close()
	ln, err := net.Listen("tcp", cfg.Listen)
	if err != nil {
		return fmt.Errorf("listen on %s: %w", cfg.Listen, err)
	}
	h := &handler{nc: nc, metrics: m, log: log, defaultTimeout: cfg.DefaultTimeout, clients: clients}
	log.Info("quota webhook serving", "listen", ln.Addr().String(), "nats", cfg.NATSURL, "clientCA", cfg.ClientCAFile)
	if cfg.Ready != nil {
		cfg.Ready(ln.Addr())
	}
	err = serve(ctx, cfg, h, certs, ln)
	log.Info("quota webhook stopped")
	return err
}

// connect opens the connection to the ledger's NATS. It is retried for
// ever, from the first attempt on: the webhook starts (not ready) before
// its ledger does. A publish while disconnected fails at once instead of
// waiting in a buffer.
func connect(cfg Config, m *metrics, log *slog.Logger) (*nats.Conn, error) {
	opts := append([]nats.Option{
		nats.Name("quota webhook"),
		nats.Timeout(connectTimeout),
		nats.RetryOnFailedConnect(true),
		nats.MaxReconnects(-1),
		nats.ReconnectWait(reconnectWait),
		nats.ReconnectBufSize(-1),
		nats.DisconnectErrHandler(func(_ *nats.Conn, err error) {
			m.connected.Set(0)
			log.Warn("disconnected from NATS: reviews fail until it is back", "err", err)
		}),
		nats.ReconnectHandler(func(nc *nats.Conn) {
			m.connected.Set(1)
			log.Info("connected to NATS", "url", nc.ConnectedUrlRedacted())
		}),
		nats.ConnectHandler(func(nc *nats.Conn) {
			m.connected.Set(1)
			log.Info("connected to NATS", "url", nc.ConnectedUrlRedacted())
		}),
		nats.ErrorHandler(func(_ *nats.Conn, _ *nats.Subscription, err error) {
			log.Warn("NATS error", "err", err)
		}),
		// A ledger member stopping (a rolling restart) says so before it
		// closes its clients' connections: move to another member at
		// once, the reviews in flight sent again there.
		nats.LameDuckModeHandler(func(nc *nats.Conn) {
			log.Info("the ledger's NATS server is going away (lame-duck mode): moving to another", "url", nc.ConnectedUrlRedacted())
			if err := nc.ForceReconnect(); err != nil {
				log.Warn("could not move to another NATS server", "err", err)
			}
		}),
	}, cfg.NATSOptions...)
	nc, err := nats.Connect(cfg.NATSURL, opts...)
	if err != nil {
		return nil, fmt.Errorf("connect to the ledger at %s: %w", cfg.NATSURL, err)
	}
	if nc.IsConnected() {
		m.connected.Set(1)
		log.Info("connected to NATS", "url", nc.ConnectedUrlRedacted())
	} else {
		log.Warn("NATS not reachable yet: not ready until it is", "url", cfg.NATSURL)
	}
	return nc, nil
}

// serve serves HTTPS on ln and watches the certificate files until ctx
// ends, then stops as Run says.
func serve(ctx context.Context, cfg Config, h *handler, certs *certificate, ln net.Listener) error {
	tlsConfig := &tls.Config{MinVersion: tls.VersionTLS12, GetCertificate: certs.get}
	if h.clients != nil {
		// Asked for, not required or verified in the handshake: /validate
		// verifies it (see clientCA.verify), the other paths need none.
		tlsConfig.ClientAuth = tls.RequestClientCert
	}
	srv := &http.Server{
		Handler:           h.mux(),
		TLSConfig:         tlsConfig,
		ReadHeaderTimeout: readHeaderTimeout,
		// A review is read and answered within TimeoutMax.
		ReadTimeout:  TimeoutMax,
		WriteTimeout: TimeoutMax + 5*time.Second,
		IdleTimeout:  idleTimeout,
		ErrorLog:     slog.NewLogLogger(h.log.Handler(), slog.LevelWarn),
	}
	g, gctx := errgroup.WithContext(ctx)
	g.Go(func() error {
		certs.watch(gctx, cfg.CertPollInterval, h.metrics, h.log)
		return nil
	})
	g.Go(func() error {
		h.announce(gctx, certs)
		return nil
	})
	served := make(chan error, 1)
	g.Go(func() error {
		err := srv.ServeTLS(ln, "", "")
		served <- err
		if errors.Is(err, http.ErrServerClosed) {
			return nil
		}
		return fmt.Errorf("serve HTTPS on %s: %w", ln.Addr(), err)
	})
	g.Go(func() error {
		return stop(ctx, gctx, cfg.ShutdownDelay, h, srv, served)
	})
	return g.Wait()
}

// stop waits for gctx to end, turns h not ready, goes on serving for delay
// and shuts srv down; it returns early if srv stops serving on its own.
func stop(ctx, gctx context.Context, delay time.Duration, h *handler, srv *http.Server, served <-chan error) error {
	select {
	case <-gctx.Done():
	case <-served:
		return nil
	}
	h.stopping.Store(true)
	if delay > 0 {
		h.log.Info("stopping: not ready, still taking reviews", "for", delay)
		timer := time.NewTimer(delay)
		select {
		case <-timer.C:
		case <-served:
			timer.Stop()
			return nil
		}
	}
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), ShutdownTimeout)
	defer cancel()
	if err := srv.Shutdown(sctx); err != nil {
		return fmt.Errorf("stop HTTPS: %w", err)
	}
	return nil
}
