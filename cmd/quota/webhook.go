package main

import (
	"github.com/spf13/cobra"

	"github.com/quotaledger/quota/cmd/internal/webhook"
)

func newWebhookCommand(g *globalFlags) *cobra.Command {
	var (
		cfg                     webhook.Config
		natsTLSCert, natsTLSKey string
		logLevel                string
		logJSON                 bool
	)
	cmd := &cobra.Command{
		Use:   "webhook --tls-cert FILE --tls-key FILE [--client-ca FILE] [--listen ADDR] [--server URL]",
		Short: "Serve kube-apiserver's validating admission webhook, decided by the ledger",
		Long: `webhook serves admission.k8s.io/v1 AdmissionReviews POSTed over HTTPS to
/validate: it relays each to the ledger on quota.admit.<namespace> and
returns the ledger's reply unchanged. Replicas hold no state.

A review it cannot have decided (not an AdmissionReview, no namespace, NATS
not connected, no ledger answering, no answer within the API server's
?timeout=) gets an HTTP error with the reason, so that the webhook
configuration's failurePolicy applies.

--tls-cert and --tls-key are the HTTPS serving certificate and key, read
again when the files change. Their expiry is exported as a metric, and
logged as a warning, at start and daily, once within 30 days of it.

--client-ca FILE takes reviews only from callers presenting a client
certificate that CA signed (kube-apiserver, as its admission configuration
names one: see 'quota credentials'); others get 401 (no certificate) or 403
(one not accepted). Without it, anyone who reaches the port may post
reviews and have the ledger reserve quota. The connection to the ledger's NATS takes
--server, --creds, --nkey and --tls-ca as the other commands do; a NATS
client certificate is --nats-tls-cert and --nats-tls-key here.

The same listener serves /healthz, /readyz (200 only while NATS is
connected) and Prometheus metrics at /metrics, which need no client
certificate. On SIGINT or SIGTERM it
turns not ready, goes on taking reviews for --shutdown-delay, then stops
once the reviews in hand are answered.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			var err error
			if cfg.Logger, err = newLogger(logLevel, logJSON); err != nil {
				return err
			}
			cfg.Logger.Info("quota webhook starting", "version", version())
			// The serving pair took the names of the client pair.
			g.tlsCert, g.tlsKey = natsTLSCert, natsTLSKey
			nopts, err := g.natsOptions()
			if err != nil {
				return withCode(exitError, err)
			}
			cfg.NATSURL, cfg.NATSOptions = g.server, nopts
			return withCode(exitError, webhook.Run(cmd.Context(), cfg))
		},
	}
	f := cmd.Flags()
	f.StringVar(&cfg.Listen, "listen", webhook.DefaultListen, "HOST:PORT of the HTTPS listener")
	f.StringVar(&cfg.CertFile, "tls-cert", "", "PEM file of the HTTPS serving certificate (its chain after it); read again when it changes")
	f.StringVar(&cfg.KeyFile, "tls-key", "", "PEM file of the serving certificate's key")
	f.StringVar(&cfg.ClientCAFile, "client-ca", "", "PEM file of the CA whose client certificates alone may post reviews (kube-apiserver's); read at start")
	f.StringVar(&natsTLSCert, "nats-tls-cert", "", "PEM file of a client certificate, for a NATS server that asks for one (with --nats-tls-key)")
	f.StringVar(&natsTLSKey, "nats-tls-key", "", "PEM file of the NATS client certificate's key")
	f.DurationVar(&cfg.DefaultTimeout, "default-timeout", webhook.DefaultTimeout, "how long a review waits for the ledger when the API server names no ?timeout=")
	f.DurationVar(&cfg.CertPollInterval, "cert-poll-interval", webhook.DefaultCertPollInterval, "how often the certificate files are checked for a change")
	f.DurationVar(&cfg.ShutdownDelay, "shutdown-delay", webhook.DefaultShutdownDelay, "how long a stopping webhook goes on taking reviews, not ready, before it closes its port: the time the cluster takes to stop sending it any")
	f.StringVar(&logLevel, "log-level", "info", "log level: debug, info, warn, error")
	f.BoolVar(&logJSON, "log-json", false, "log as JSON lines")
	_ = cmd.MarkFlagRequired("tls-cert")
	_ = cmd.MarkFlagRequired("tls-key")
	return cmd
}
