package webhook

import (
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
)

// Verdicts, the label of the request metrics.
const (
	verdictAllowed = "allowed"
	verdictDenied  = "denied"
	// verdictFailed: the ledger replied, but with its own failure to
	// decide (a code other than 403 or 422).
	verdictFailed = "failed"
	// verdictError: the webhook answered with an HTTP error, so the
	// failurePolicy applies.
	verdictError = "error"
)

// metrics are the webhook's Prometheus metrics, in a registry of their
// own with the Go runtime's and the process's.
type metrics struct {
	registry  *prometheus.Registry
	requests  *prometheus.CounterVec
	latency   *prometheus.HistogramVec
	inFlight  prometheus.Gauge
	connected prometheus.Gauge
	// unauthenticated counts callers refused by the client CA, by reason.
	unauthenticated *prometheus.CounterVec
	// certificateExpiry is when the serving certificate in use ends, and
	// clientCertificateExpiry when that of the last review's caller does.
	certificateExpiry       prometheus.Gauge
	clientCertificateExpiry prometheus.Gauge
}

func newMetrics() *metrics {
	m := &metrics{
		registry: prometheus.NewRegistry(),
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "quota_webhook_requests_total",
			Help: "Admission reviews answered, by verdict: allowed, denied, failed (the ledger replied that it could not decide) or error (an HTTP error: the failurePolicy applies).",
		}, []string{"verdict"}),
		latency: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "quota_webhook_request_duration_seconds",
			Help:    "Time from a review's arrival to its answer, by verdict.",
			Buckets: []float64{.0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30},
		}, []string{"verdict"}),
		inFlight: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "quota_webhook_requests_in_flight",
			Help: "Admission reviews received and not yet answered.",
		}),
		connected: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "quota_webhook_nats_connected",
			Help: "1 while the connection to the ledger's NATS is up, else 0.",
		}),
		unauthenticated: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "quota_webhook_unauthenticated_total",
			Help: "Reviews refused, with --client-ca, before being read, by reason: no_certificate (401), expired or untrusted (403). Not counted in quota_webhook_requests_total.",
		}, []string{"reason"}),
		certificateExpiry: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "quota_webhook_certificate_expiry_timestamp_seconds",
			Help: "When the serving certificate in use expires, in Unix seconds.",
		}),
		clientCertificateExpiry: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "quota_webhook_client_certificate_expiry_timestamp_seconds",
			Help: "When the client certificate of the last review taken expires, in Unix seconds; 0 until a review is taken with --client-ca.",
		}),
	}
	m.registry.MustRegister(m.requests, m.latency, m.inFlight, m.connected,
		m.unauthenticated, m.certificateExpiry, m.clientCertificateExpiry,
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	// Every verdict is exported from the start, at zero.
	for _, v := range []string{verdictAllowed, verdictDenied, verdictFailed, verdictError} {
		m.requests.WithLabelValues(v)
		m.latency.WithLabelValues(v)
	}
	for _, r := range []string{reasonNoCertificate, reasonExpired, reasonUntrusted} {
		m.unauthenticated.WithLabelValues(r)
	}
	return m
}
