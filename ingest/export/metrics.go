package export

import (
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// metrics are the exporter's Prometheus metrics, all named quota_export_*.
type metrics struct {
	events        *prometheus.CounterVec
	resyncs       *prometheus.CounterVec
	unchanged     *prometheus.CounterVec
	watchRestarts *prometheus.CounterVec
	bookmarks     *prometheus.CounterVec
	listErrors    *prometheus.CounterVec
	inFlight      prometheus.Gauge
	windowFull    prometheus.Counter
	leader        prometheus.Gauge
	streams       prometheus.Gauge
	synced        prometheus.Gauge

	mu          sync.Mutex
	checkpoints map[string]time.Time
	newest      map[string]time.Time
	progress    map[string]time.Time
	ageDesc     *prometheus.Desc
	lagDesc     *prometheus.Desc
	feedDesc    *prometheus.Desc
}

func newMetrics() *metrics {
	return &metrics{
		events: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "quota_export_events_total",
			Help: "Events sent to the log through ingest and acknowledged, by resource and watch type (ADDED, MODIFIED, DELETED; RESYNC for each resync event); ingest skips an upsert whose trimmed object is unchanged."}, []string{"resource", "type"}),
		resyncs: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "quota_export_resyncs_total",
			Help: "Lists followed by a resync, by resource and reason (initial, 410, gap, takeover)."}, []string{"resource", "reason"}),
		unchanged: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "quota_export_resync_namespaces_unchanged_total",
			Help: "Namespaces (or the cluster scope) of a resync whose listed object versions the log held already, so that no resync event was appended, by resource."}, []string{"resource"}),
		watchRestarts: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "quota_export_watch_restarts_total",
			Help: "Watches started again after the first, by resource."}, []string{"resource"}),
		bookmarks: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "quota_export_bookmarks_total",
			Help: "Bookmarks the watches received, by resource: on a quiet resource, what moves its checkpoint and its feed's progress."}, []string{"resource"}),
		listErrors: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "quota_export_list_errors_total",
			Help: "Lists that failed (retried with backoff), by resource."}, []string{"resource"}),
		inFlight: prometheus.NewGauge(prometheus.GaugeOpts{Name: "quota_export_appends_in_flight",
			Help: "Watch events read and not yet acknowledged by JetStream."}),
		windowFull: prometheus.NewCounter(prometheus.CounterOpts{Name: "quota_export_window_full_total",
			Help: "Times a watch waited for the in-flight window (InFlightMax)."}),
		leader: prometheus.NewGauge(prometheus.GaugeOpts{Name: "quota_export_leader",
			Help: "1 while this replica holds the lease and streams, 0 while it stands by."}),
		streams: prometheus.NewGauge(prometheus.GaugeOpts{Name: "quota_export_streams",
			Help: "Resources streamed."}),
		synced: prometheus.NewGauge(prometheus.GaugeOpts{Name: "quota_export_streams_synced",
			Help: "Resources streamed whose first list (or resume) is in the log."}),
		checkpoints: map[string]time.Time{},
		newest:      map[string]time.Time{},
		progress:    map[string]time.Time{},
		feedDesc: prometheus.NewDesc("quota_export_feed_lag_seconds",
			"Now minus the moment of the resource's newest point of progress appended to the log (the log held every change of the resource up to then); reservations that end on the feed wait for it.", []string{"resource"}, nil),
		ageDesc: prometheus.NewDesc("quota_export_checkpoint_age_seconds",
			"Seconds since the resource's checkpoint was last written.", []string{"resource"}, nil),
		lagDesc: prometheus.NewDesc("quota_export_lag_seconds",
			"Now minus the write time of the newest watch event appended of the resource (to the second, as the API server records it in managedFields, or its creation time).", []string{"resource"}, nil),
	}
}

func (m *metrics) register(r prometheus.Registerer) error {
	for _, c := range []prometheus.Collector{m.events, m.resyncs, m.unchanged, m.watchRestarts, m.bookmarks, m.listErrors, m.inFlight, m.windowFull, m.leader, m.streams, m.synced, m} {
		if err := r.Register(c); err != nil {
			return err
		}
	}
	return nil
}

func (m *metrics) checkpointed(resource string) {
	m.mu.Lock()
	m.checkpoints[resource] = time.Now()
	m.mu.Unlock()
}

func (m *metrics) setNewest(resource string, t time.Time) {
	if t.IsZero() {
		return
	}
	m.mu.Lock()
	m.newest[resource] = t
	m.mu.Unlock()
}

// progressed notes the moment of a resource's point appended to the log.
func (m *metrics) progressed(resource string, at time.Time) {
	m.mu.Lock()
	m.progress[resource] = at
	m.mu.Unlock()
}

func (m *metrics) forget(resource string) {
	m.mu.Lock()
	delete(m.checkpoints, resource)
	delete(m.newest, resource)
	delete(m.progress, resource)
	m.mu.Unlock()
}

// Describe and Collect make the ages a collector: they are computed when
// scraped.
func (m *metrics) Describe(ch chan<- *prometheus.Desc) {
	ch <- m.ageDesc
	ch <- m.lagDesc
	ch <- m.feedDesc
}

func (m *metrics) Collect(ch chan<- prometheus.Metric) {
	now := time.Now()
	m.mu.Lock()
	defer m.mu.Unlock()
	for r, t := range m.checkpoints {
		ch <- prometheus.MustNewConstMetric(m.ageDesc, prometheus.GaugeValue, now.Sub(t).Seconds(), r)
	}
	for r, t := range m.newest {
		ch <- prometheus.MustNewConstMetric(m.lagDesc, prometheus.GaugeValue, now.Sub(t).Seconds(), r)
	}
	for r, t := range m.progress {
		ch <- prometheus.MustNewConstMetric(m.feedDesc, prometheus.GaugeValue, now.Sub(t).Seconds(), r)
	}
}
