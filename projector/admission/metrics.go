package admission

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"
	admissionv1 "k8s.io/api/admission/v1"
)

// Metrics counts what a Responder answers, for Prometheus. A nil *Metrics
// counts nothing.
type Metrics struct {
	requests *prometheus.CounterVec
	duration *prometheus.HistogramVec
	// counts and durations are requests' and duration's series, looked up
	// once: by mode and result index.
	counts       [len(modes)][len(results)]prometheus.Counter
	durations    [len(modes)]prometheus.Observer
	appends      prometheus.Counter
	reservations prometheus.Counter
	conflicts    prometheus.Counter
	released     prometheus.Counter
}

// The mode label: what kind of request was answered, by index.
const (
	// modeDryRun is a dry-run create or update: decided, nothing kept.
	modeDryRun = iota
	// modeReserving is a create or update that reserves when allowed.
	modeReserving
	// modeOther is a request quota allows without deciding: a delete, a
	// connect, a subresource quota does not evaluate.
	modeOther
	// modeInvalid is a request that could not be read.
	modeInvalid
)

var modes = [...]string{modeDryRun: "dry_run", modeReserving: "reserving", modeOther: "other", modeInvalid: "invalid"}

// The result label, by index: allowed, denied (Kubernetes' 403), or an
// error reply (400 or 500).
const (
	resultAllowed = iota
	resultDenied
	resultError
)

var results = [...]string{resultAllowed: "allowed", resultDenied: "denied", resultError: "error"}

// NewMetrics makes the responder's metrics and registers them with reg.
func NewMetrics(reg prometheus.Registerer) (*Metrics, error) {
	m := &Metrics{
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "quota_admission_requests_total",
			Help: "Admission requests answered, by mode (dry_run, reserving, other, invalid) and result (allowed, denied: Kubernetes' 403; error: a 400 or 500 reply).",
		}, []string{"mode", "result"}),
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "quota_admission_duration_seconds",
			Help:    "Time from receiving an admission request to sending its reply, by mode; a reserving create's includes its synced append.",
			Buckets: prometheus.ExponentialBuckets(100e-6, 2, 16),
		}, []string{"mode"}),
		appends: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "quota_admission_reserve_appends_total",
			Help: "Reserve events appended: one per round of reserving creates and updates in a namespace.",
		}),
		reservations: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "quota_admission_reservations_total",
			Help: "Reservations appended in Reserve events (divided by quota_admission_reserve_appends_total: creates per append).",
		}),
		conflicts: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "quota_admission_reserve_conflicts_total",
			Help: "Reserve appends refused because the namespace's subject had moved (another replica's append, a sweep, a cluster event); each round is then decided again once the projection has applied what moved it.",
		}),
		released: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "quota_admission_reservations_expired_total",
			Help: "Unconfirmed reservations this responder's sweep released after their TTL.",
		}),
	}
	for _, c := range []prometheus.Collector{m.requests, m.duration, m.appends, m.reservations, m.conflicts, m.released} {
		if err := reg.Register(c); err != nil {
			return nil, err
		}
	}
	for i, mode := range modes {
		for j, result := range results {
			m.counts[i][j] = m.requests.WithLabelValues(mode, result)
		}
		m.durations[i] = m.duration.WithLabelValues(mode)
	}
	return m, nil
}

// answered counts one reply and how long the request took.
func (m *Metrics) answered(mode int, resp *admissionv1.AdmissionResponse, took time.Duration) {
	if m == nil {
		return
	}
	result := resultError
	switch {
	case resp == nil:
	case resp.Allowed:
		result = resultAllowed
	case resp.Result != nil && Verdict(resp.Result):
		result = resultDenied
	}
	m.counts[mode][result].Inc()
	m.durations[mode].Observe(took.Seconds())
}

// appended counts a Reserve event holding n reservations.
func (m *Metrics) appended(n int) {
	if m == nil {
		return
	}
	m.appends.Inc()
	m.reservations.Add(float64(n))
}

func (m *Metrics) conflict() {
	if m != nil {
		m.conflicts.Inc()
	}
}

func (m *Metrics) expired(n int) {
	if m != nil {
		m.released.Add(float64(n))
	}
}

// mode is the mode label's index of a decoded request.
func (d *decoded) mode() int {
	req := d.req
	switch {
	case d.err != nil || req == nil:
		return modeInvalid
	case req.reserving():
		return modeReserving
	case (req.Operation == admissionv1.Create || req.Operation == admissionv1.Update) && !req.ignored():
		return modeDryRun
	}
	return modeOther
}
