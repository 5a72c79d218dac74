package server

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
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
	// decides on the whole log.
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
	)
	m, err := admission.NewMetrics(reg)
	if err != nil {
		return nil, nil, err
	}
	return reg, m, nil
}

// metricsServer serves reg on MetricsPath.
type metricsServer struct {
	ln  net.Listener
	srv *http.Server
}

// listenMetrics opens the metrics listener on addr (HOST:PORT; port 0:
// any free port). ready says whether the server takes admissions, and if
// not, why.
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
		if ok, why := ready(); !ok {
			http.Error(w, why, http.StatusServiceUnavailable)
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
