package server

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/quotaledger/quota/ledger"
	"github.com/quotaledger/quota/projector"
	"github.com/quotaledger/quota/projector/admission"
)

// Flags are the settings of `quota serve`: a Config, set directly by the
// flags that need no reading, and the flags that are read into one.
type Flags struct {
	Config
	// Sync is --sync: "always" (or zero) syncs every write; else an
	// interval such as 1s.
	Sync string
	// MaxEventSize is --max-event-size: a quantity of bytes such as 4Mi.
	// Zero: Config.Stream.MaxMsgSize is left as it is.
	MaxEventSize string
	// Release is --reservation-release: "ttl" (or zero) or "feed".
	Release string
	// AdmissionConfigFile is --admission-control-config-file: its
	// limitedResources apply to admissions. Zero: none.
	AdmissionConfigFile string
	// ClusterListen is --cluster-listen: HOST:PORT of the embedded
	// server's route listener. Zero: no cluster.
	ClusterListen string
	// Routes is --routes: the route URL of every member, this one
	// included. Zero: no cluster.
	Routes []string
	// ClusterName is --cluster-name. Zero: ledger.DefaultClusterName.
	ClusterName string
	// ClusterAdvertise is --cluster-advertise. Zero: the route listener.
	ClusterAdvertise string
	// EmbeddedGiven names the flags given that configure the embedded
	// server only (listen, sync, auth, the cluster's): refused with
	// --nats.
	EmbeddedGiven []string
}

// Validate reports every flag of f that is wrong, in one error
// (ErrInvalidFlags), each as serve has always worded it.
func (f Flags) Validate() error {
	var problems []string
	add := func(format string, args ...any) { problems = append(problems, fmt.Sprintf(format, args...)) }
	if _, err := f.maxMsgSize(); err != nil {
		add("%v", err)
	}
	if f.Admission.ReservationTTL <= 0 {
		add("--reservation-ttl %s: want a positive duration such as 1m", f.Admission.ReservationTTL)
	}
	if f.Admission.StoreTimeout <= 0 {
		add("--api-request-timeout %s: want a positive duration such as 60s, kube-apiserver's --request-timeout", f.Admission.StoreTimeout)
	}
	if f.Release != "" && f.Release != "ttl" && f.Release != "feed" {
		add("--reservation-release %q: want ttl (a ledger fed by quota ingest) or feed (fed by quota export)", f.Release)
	}
	if f.Stream.DuplicateWindow <= 0 {
		add("--duplicate-window %s: want a positive duration such as 24h", f.Stream.DuplicateWindow)
	}
	if _, err := f.syncInterval(); err != nil {
		add("%v", err)
	}
	problems = append(problems, f.retentionProblems()...)
	if f.NATSURL != "" {
		for _, name := range f.EmbeddedGiven {
			add("--%s configures the embedded NATS server; with --nats there is none (set it on that NATS server)", name)
		}
	}
	if strings.ContainsAny(f.ServerName, " \t\r\n*>") {
		add("--server-name %q holds a space, '*' or '>': it names the server in NATS subjects", f.ServerName)
	}
	problems = append(problems, f.clusterProblems()...)
	if len(problems) == 0 {
		return nil
	}
	return invalidFlags(problems)
}

// retentionProblems words what is wrong with --retention and --archive.
func (f Flags) retentionProblems() []string {
	var problems []string
	switch r := f.Retention; {
	case r < 0:
		problems = append(problems, fmt.Sprintf("--retention %s: want a positive duration such as 720h, or 0 to keep every event", r))
	case r > 0 && r < projector.RetentionMin:
		problems = append(problems, fmt.Sprintf("--retention %s: want at least %s", r, projector.RetentionMin))
	case r > 0 && f.Stream.DuplicateWindow > r:
		problems = append(problems, fmt.Sprintf("--duplicate-window %s exceeds --retention %s: an event re-sent within the window must still be in the log to be recognised; lower --duplicate-window to at most the retention", f.Stream.DuplicateWindow, r))
	}
	if f.ArchiveDir != "" && f.Retention == 0 {
		problems = append(problems, "--archive needs --retention: without it no event leaves the log")
	}
	if f.Snapshots.Interval < 0 && f.Snapshots.Every < 0 && f.Retention > 0 {
		problems = append(problems, "--retention needs checkpoints to trim the log to: --snapshot-every and --snapshot-interval are both off")
	}
	return problems
}

// clusterProblems are what is wrong with --replicas and the cluster's
// flags.
func (f Flags) clusterProblems() []string {
	var problems []string
	add := func(format string, args ...any) { problems = append(problems, fmt.Sprintf(format, args...)) }
	if (f.ClusterListen == "") != (len(f.Routes) == 0) {
		add("--cluster-listen and --routes go together: a member listens for its peers' routes and lists every member's, its own included")
	}
	if f.ClusterListen != "" {
		if _, port, err := splitHostPort(f.ClusterListen); err != nil || port < 1 {
			add("--cluster-listen %q: want HOST:PORT with a port the other members dial, such as 0.0.0.0:6222", f.ClusterListen)
		}
	}
	for _, r := range f.Routes {
		if err := ledger.CheckRoute(r); err != nil {
			add("--routes: %v", err)
		}
	}
	if len(f.Routes) > ledger.ClusterMembersMax {
		add("--routes lists %d members, at most %d", len(f.Routes), ledger.ClusterMembersMax)
	}
	replicas := f.Stream.Replicas
	switch {
	case replicas < 1 || replicas > ledger.ReplicasMax:
		add("--replicas %d: want 1 to %d", replicas, ledger.ReplicasMax)
	case replicas > 1 && f.NATSURL == "" && len(f.Routes) == 0:
		add("--replicas %d needs a cluster: --cluster-listen and --routes (every member, this one included) to make the embedded server one of %d members, or a NATS cluster (--nats)", replicas, replicas)
	case f.NATSURL == "" && len(f.Routes) > 0 && replicas > len(f.Routes):
		add("--replicas %d with %d members in --routes: JetStream keeps at most one copy on each member", replicas, len(f.Routes))
	}
	return problems
}

// invalidFlags is ErrInvalidFlags, worded as its problems alone.
type invalidFlags []string

func (e invalidFlags) Error() string { return strings.Join(e, "; ") }
func (e invalidFlags) Unwrap() error { return ErrInvalidFlags }

// maxMsgSize is the largest event --max-event-size allows.
func (f Flags) maxMsgSize() (int32, error) {
	if f.MaxEventSize == "" {
		return f.Stream.MaxMsgSize, nil
	}
	limit := resource.NewQuantity(ledger.MaxMsgSizeLimit, resource.BinarySI)
	size, err := resource.ParseQuantity(f.MaxEventSize)
	if err != nil || size.Sign() <= 0 || size.Cmp(*limit) > 0 {
		return 0, fmt.Errorf("--max-event-size %q: want a size from 1 to %s, such as 4Mi", f.MaxEventSize, limit)
	}
	return int32(size.Value()), nil
}

// syncInterval is the embedded JetStream's sync interval --sync asks for:
// zero for always.
func (f Flags) syncInterval() (time.Duration, error) {
	if f.Sync == "always" || f.Sync == "" {
		return 0, nil
	}
	d, err := time.ParseDuration(f.Sync)
	if err != nil || d <= 0 {
		return 0, fmt.Errorf("--sync %q: want 'always' or a positive interval such as 1s", f.Sync)
	}
	return d, nil
}

// Serve checks the flags, reads the admission configuration file, and
// runs the ledger they configure until ctx ends (Run).
func Serve(ctx context.Context, f Flags) error {
	if err := f.Validate(); err != nil {
		return err
	}
	cfg := f.Config
	log := cfg.Logger
	if log == nil {
		log = slog.Default()
	}
	if f.AdmissionConfigFile != "" {
		limited, err := admission.LoadLimitedResources(f.AdmissionConfigFile)
		if err != nil {
			return err
		}
		cfg.Admission.Limited = limited
		log.Info("admission configuration read", "file", f.AdmissionConfigFile, "limitedResources", len(limited))
	}
	cfg.Stream.MaxMsgSize, _ = f.maxMsgSize()
	cfg.SyncInterval, _ = f.syncInterval()
	cfg.Admission.ReleaseByFeed = f.Release == "feed"
	cfg.Snapshots.Replicas = cfg.Stream.Replicas
	cfg.Snapshots.Retention = cfg.Retention
	// A log serve makes allows purging, so that a retention can be given
	// later (JetStream never lifts a denial); only a Retainer purges it,
	// and only what a checkpoint covers.
	cfg.Stream.AllowPurge = true
	if len(f.Routes) > 0 {
		host, port, _ := splitHostPort(f.ClusterListen)
		cfg.Cluster = ledger.ClusterConfig{Name: f.ClusterName, Host: host, Port: port, Advertise: f.ClusterAdvertise, Routes: f.Routes}
	}
	return Run(ctx, cfg)
}
