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
	}
	m.registry.MustRegister(m.requests, m.latency, m.inFlight, m.connected,
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	// Every verdict is exported from the start, at zero.
	for _, v := range []string{verdictAllowed, verdictDenied, verdictFailed, verdictError} {
		m.requests.WithLabelValues(v)
		m.latency.WithLabelValues(v)
	}
	return m
}
