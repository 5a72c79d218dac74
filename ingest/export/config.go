package export

import (
	"fmt"
	"log/slog"
	"os"
	"strings"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/client-go/rest"

	"github.com/quotaledger/quota/ingest"
	"github.com/quotaledger/quota/ledger"
)

// Defaults and limits of Config.
const (
	// DefaultInFlightMax is the number of watch events read from the API
	// server and not yet acknowledged by JetStream, over all resources.
	DefaultInFlightMax = 4096
	// InFlightLimit is the largest InFlightMax accepted.
	InFlightLimit = 1 << 20
	// DefaultBatchSizeMax is the number of watch events of one resource
	// appended together.
	DefaultBatchSizeMax = 500
	// DefaultDiscoveryInterval is how often the API server's resources are
	// discovered again, as Kubernetes' quota controller does.
	DefaultDiscoveryInterval = 30 * time.Second
	// DefaultCheckpointBucket names the JetStream key-value bucket of the
	// resume points.
	DefaultCheckpointBucket = "quota-export"
	// DefaultLeaseName names the Lease of the leader election.
	DefaultLeaseName = "quota-export"
	// DefaultLeaseDuration, DefaultRenewDeadline and DefaultRetryPeriod are
	// the leader election's timings, those of Kubernetes' controllers.
	DefaultLeaseDuration = 15 * time.Second
	DefaultRenewDeadline = 10 * time.Second
	DefaultRetryPeriod   = 2 * time.Second
	// DefaultAPIQPS and DefaultAPIBurst bound the exporter's requests to
	// the API server: a list and a watch per resource, and discovery.
	DefaultAPIQPS   = 50
	DefaultAPIBurst = 100
	// RetryDelayMin and RetryDelayMax bound the backoff between attempts
	// to reach NATS (an append, a resync, a checkpoint).
	RetryDelayMin = 500 * time.Millisecond
	RetryDelayMax = 30 * time.Second
	// RequestTimeout bounds a discovery request and a list page; a
	// watch is bounded by the API server (5 to 10 minutes, as client-go's
	// Reflector asks).
	RequestTimeout = 60 * time.Second
	// CheckpointInterval is how often, at most, a resource's checkpoint is
	// written while its watch events flow (and at least, while it has
	// moved): a restart may send again what came in the last interval,
	// which ingest's message IDs make duplicates.
	CheckpointInterval = time.Second
	// StopFlushTimeoutMax bounds how long a stopping stream still tries
	// to append what it has read. The bound used is smaller still: half
	// the margin between LeaseDuration and RenewDeadline (see
	// Config.flushTimeout), so that a leader that lost its lease has
	// stopped appending before another can take it.
	StopFlushTimeoutMax = 10 * time.Second
)

// Config configures an Exporter.
type Config struct {
	// Kubernetes reaches the API server. Required.
	Kubernetes *rest.Config
	// Stream is the ledger's event stream. Required.
	Stream *ledger.Stream
	// JetStream holds the checkpoint bucket. Required.
	JetStream jetstream.JetStream
	// Log receives the exporter's logs. Zero: slog.Default().
	Log *slog.Logger
	// Registry receives the exporter's metrics. Zero: none are
	// registered (they are still kept).
	Registry prometheus.Registerer

	// Identity names this replica in the leader election. Zero: the host
	// name (a pod's name), which a restarted replica keeps, so that it
	// resumes from its checkpoints instead of relisting.
	Identity string
	// LeaseNamespace and LeaseName name the Lease of the leader election.
	// Zero: $POD_NAMESPACE, else "default"; DefaultLeaseName.
	LeaseNamespace, LeaseName string
	// LeaseDuration, RenewDeadline, RetryPeriod time the leader election.
	// Zero: the defaults above.
	LeaseDuration, RenewDeadline, RetryPeriod time.Duration

	// InFlightMax bounds the watch events read and not yet acknowledged;
	// a full window holds the watches back. Zero: DefaultInFlightMax.
	InFlightMax int
	// BatchSizeMax bounds the events of one resource appended together.
	// Zero: DefaultBatchSizeMax.
	BatchSizeMax int
	// DiscoveryInterval is how often resources are discovered again.
	// Zero: DefaultDiscoveryInterval.
	DiscoveryInterval time.Duration
	// CheckpointBucket names the key-value bucket of the resume points.
	// Zero: DefaultCheckpointBucket.
	CheckpointBucket string
	// ProgressInterval is how often each stream asks for its resource's
	// current version and the feed's progress is appended (progress.go).
	// Zero: DefaultProgressInterval.
	ProgressInterval time.Duration
	// AccessCheckInterval is how often a standby checks that it could
	// lead: the API server reachable, its lists and watches allowed.
	// Zero: DefaultAccessCheckInterval.
	AccessCheckInterval time.Duration
}

func (c Config) withDefaults() Config {
	if c.Log == nil {
		c.Log = slog.Default()
	}
	if c.Identity == "" {
		c.Identity, _ = os.Hostname()
	}
	if c.LeaseNamespace == "" {
		c.LeaseNamespace = os.Getenv("POD_NAMESPACE")
	}
	if c.LeaseNamespace == "" {
		c.LeaseNamespace = "default"
	}
	if c.LeaseName == "" {
		c.LeaseName = DefaultLeaseName
	}
	if c.LeaseDuration == 0 {
		c.LeaseDuration = DefaultLeaseDuration
	}
	if c.RenewDeadline == 0 {
		c.RenewDeadline = DefaultRenewDeadline
	}
	if c.RetryPeriod == 0 {
		c.RetryPeriod = DefaultRetryPeriod
	}
	if c.InFlightMax == 0 {
		c.InFlightMax = DefaultInFlightMax
	}
	if c.BatchSizeMax == 0 {
		c.BatchSizeMax = DefaultBatchSizeMax
	}
	if c.DiscoveryInterval == 0 {
		c.DiscoveryInterval = DefaultDiscoveryInterval
	}
	if c.CheckpointBucket == "" {
		c.CheckpointBucket = DefaultCheckpointBucket
	}
	if c.ProgressInterval == 0 {
		c.ProgressInterval = DefaultProgressInterval
	}
	if c.AccessCheckInterval == 0 {
		c.AccessCheckInterval = DefaultAccessCheckInterval
	}
	return c
}

// flushTimeout is how long a stopping stream still appends: a leader
// stops renewing at most RenewDeadline after its last renewal, and another
// replica takes the lease no sooner than LeaseDuration after it; the
// flush ends halfway between.
func (c Config) flushTimeout() time.Duration {
	return min(StopFlushTimeoutMax, (c.LeaseDuration-c.RenewDeadline)/2)
}

// Validate reports every problem of c in one error wrapping
// ErrInvalidConfig.
func (c Config) Validate() error {
	c = c.withDefaults()
	var problems []string
	if c.Kubernetes == nil {
		problems = append(problems, "no Kubernetes config")
	}
	if c.Stream == nil {
		problems = append(problems, "no ledger Stream")
	}
	if c.JetStream == nil {
		problems = append(problems, "no JetStream for the checkpoints")
	}
	if c.Identity == "" {
		problems = append(problems, "no Identity, and the host name is unknown")
	}
	if c.InFlightMax < 1 || c.InFlightMax > InFlightLimit {
		problems = append(problems, fmt.Sprintf("InFlightMax %d is outside 1..%d", c.InFlightMax, InFlightLimit))
	}
	if c.BatchSizeMax < 1 || c.BatchSizeMax > ingest.BatchSizeMax {
		problems = append(problems, fmt.Sprintf("BatchSizeMax %d is outside 1..%d", c.BatchSizeMax, ingest.BatchSizeMax))
	}
	if c.DiscoveryInterval < time.Second {
		problems = append(problems, fmt.Sprintf("DiscoveryInterval %s is under a second", c.DiscoveryInterval))
	}
	if c.ProgressInterval < 100*time.Millisecond {
		problems = append(problems, fmt.Sprintf("ProgressInterval %s is under 100ms", c.ProgressInterval))
	}
	if c.AccessCheckInterval < time.Second {
		problems = append(problems, fmt.Sprintf("AccessCheckInterval %s is under a second", c.AccessCheckInterval))
	}
	if !(c.LeaseDuration > c.RenewDeadline && c.RenewDeadline > c.RetryPeriod && c.RetryPeriod > 0) {
		problems = append(problems, fmt.Sprintf("leader election timings must be LeaseDuration (%s) > RenewDeadline (%s) > RetryPeriod (%s) > 0", c.LeaseDuration, c.RenewDeadline, c.RetryPeriod))
	}
	if len(problems) == 0 {
		return nil
	}
	return fmt.Errorf("%w: %s", ErrInvalidConfig, strings.Join(problems, "; "))
}
