package server

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/quotaledger/quota/projector"
	"github.com/quotaledger/quota/projector/admission"
)

// Paths of the metrics server.
const (
	// MetricsPath serves the Prometheus metrics.
	MetricsPath = "/metrics"
	// ReadyPath answers 200 once the server takes admissions, and 503,
	// saying why, while its projection catches up with the stream at
	// start: a readiness probe that holds a rollout until a new replica
	// decides on the whole log. A feed that is behind (feedsBehind) is
	// named in a 200's body: the server still answers, holding the
	// reservations that wait for the feed.
	ReadyPath = "/readyz"
	// HealthPath answers 200 while the server runs: a liveness probe.
	HealthPath = "/healthz"
)

// metricsShutdownTimeout bounds the wait for scrapes in progress on a stop.
const metricsShutdownTimeout = 5 * time.Second

// newRegistry returns the registry of a server's metrics: the Go runtime's
// and the process's (heap, garbage collection, RSS, open files), the
// projection's, and the admission responder's, which it returns for the
// responder's Config.
func newRegistry(proj *projector.Projector) (*prometheus.Registry, *admission.Metrics, error) {
	reg := prometheus.NewRegistry()
	reg.MustRegister(
		collectors.NewGoCollector(),
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "quota_projection_applied_sequence",
			Help: "The last stream sequence the projection has applied.",
		}, func() float64 { return float64(proj.Applied()) }),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "quota_projection_pending_records",
			Help: "Records the stream held after the last one the projection applied, when that one was delivered: the projection's backlog.",
		}, func() float64 { return float64(proj.Pending()) }),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "quota_projection_last_fact_timestamp_seconds",
			Help: "When the stream took the newest cluster fact (upsert, delete, resync) the projection applied, in Unix seconds (0: none yet): time() minus it is how long the feed has been quiet.",
		}, func() float64 {
			if t := proj.LastFactTime(); !t.IsZero() {
				return float64(t.UnixNano()) / 1e9
			}
			return 0
		}),
		prometheus.NewCounterFunc(prometheus.CounterOpts{
			Name: "quota_projection_skipped_records_total",
			Help: "Stream records the projection could not apply since the server started; each is kept as a dead letter ('quota rejects').",
		}, func() float64 { return float64(proj.Skipped()) }),
		prometheus.NewCounterFunc(prometheus.CounterOpts{
			Name: "quota_projection_stale_facts_total",
			Help: "Upserts, deletes and resync items this server's projection ignored as older (by resourceVersion) than the state it held.",
		}, func() float64 { return float64(proj.Stale()) }),
	)
	reg.MustRegister(feedCollector{proj: proj})
	m, err := admission.NewMetrics(reg)
	if err != nil {
		return nil, nil, err
	}
	return reg, m, nil
}

// FeedBehind is the lag past which a resource's feed is named behind in
// ReadyPath's answer: more than a watch's bookmark interval (a minute)
// and the exporter's progress interval, with room to spare.
const FeedBehind = 3 * time.Minute

var (
	feedLagDesc = prometheus.NewDesc("quota_feed_lag_seconds",
		"How far behind the wall clock the newest point of a resource's feed is (the log holds every change of the resource up to then); reservations that end on the feed wait for it.",
		[]string{"resource"}, nil)
	feedWaitingDesc = prometheus.NewDesc("quota_feed_reservations_waiting",
		"Reservations of a resource that end on the feed and are still held.",
		[]string{"resource"}, nil)
)

// feedCollector reports each resource's feed from the projection at
// every scrape.
type feedCollector struct{ proj *projector.Projector }

func (c feedCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- feedLagDesc
	ch <- feedWaitingDesc
}

func (c feedCollector) Collect(ch chan<- prometheus.Metric) {
	feeds, err := c.proj.Feeds()
	if err != nil {
		ch <- prometheus.NewInvalidMetric(feedLagDesc, err)
		return
	}
	now := time.Now()
	for _, f := range feeds {
		if !f.At.IsZero() {
			ch <- prometheus.MustNewConstMetric(feedLagDesc, prometheus.GaugeValue, now.Sub(f.At).Seconds(), f.Resource)
		}
		ch <- prometheus.MustNewConstMetric(feedWaitingDesc, prometheus.GaugeValue, float64(f.Waiting), f.Resource)
	}
}

// feedsBehind words the feeds that are behind at now, for ReadyPath: a
// resource whose feed point is older than FeedBehind, or that has
// reservations waiting and no point at all. It returns "" when none is.
func feedsBehind(feeds []projector.Feed, now time.Time) string {
	var behind []string
	for _, f := range feeds {
		switch {
		case f.At.IsZero() && f.Waiting > 0:
			behind = append(behind, fmt.Sprintf("%s has no feed (%d reservations held)", f.Resource, f.Waiting))
		case !f.At.IsZero() && now.Sub(f.At) > FeedBehind:
			behind = append(behind, fmt.Sprintf("%s %s behind (%d reservations held)", f.Resource, now.Sub(f.At).Round(time.Second), f.Waiting))
		}
	}
	if len(behind) == 0 {
		return ""
	}
	return "feed behind, reservations held until it catches up: " + strings.Join(behind, ", ")
}

// metricsServer serves reg on MetricsPath.
type metricsServer struct {
	ln  net.Listener
	srv *http.Server
}

// listenMetrics opens the metrics listener on addr (HOST:PORT; port 0:
// any free port). ready says whether the server takes admissions, and if
// not, why; a ready server's reason is a warning, answered with 200.
func listenMetrics(addr string, reg *prometheus.Registry, ready func() (bool, string), log *slog.Logger) (*metricsServer, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("metrics listener: %w", err)
	}
	mux := http.NewServeMux()
	mux.Handle(MetricsPath, promhttp.HandlerFor(reg, promhttp.HandlerOpts{
		ErrorLog: slog.NewLogLogger(log.Handler(), slog.LevelWarn),
	}))
	mux.HandleFunc(ReadyPath, func(w http.ResponseWriter, _ *http.Request) {
		ok, why := ready()
		if !ok {
			http.Error(w, why, http.StatusServiceUnavailable)
			return
		}
		if why != "" {
			// Ready, with something the operator should see.
			_, _ = io.WriteString(w, "ready; "+why+"\n")
			return
		}
		_, _ = io.WriteString(w, "ready\n")
	})
	mux.HandleFunc(HealthPath, func(w http.ResponseWriter, _ *http.Request) {
		_, _ = io.WriteString(w, "ok\n")
	})
	return &metricsServer{ln: ln, srv: &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}}, nil
}

// URL is where the metrics are scraped.
func (m *metricsServer) URL() string { return "http://" + m.ln.Addr().String() + MetricsPath }

// Run serves until ctx ends, then lets scrapes in progress finish.
func (m *metricsServer) Run(ctx context.Context) error {
	errc := make(chan error, 1)
	go func() { errc <- m.srv.Serve(m.ln) }()
	select {
	case err := <-errc:
		return fmt.Errorf("metrics server: %w", err)
	case <-ctx.Done():
	}
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), metricsShutdownTimeout)
	defer cancel()
	err := m.srv.Shutdown(sctx)
	if serr := <-errc; !errors.Is(serr, http.ErrServerClosed) && err == nil {
		err = serr
	}
	return err
}
