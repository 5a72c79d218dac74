package main

import (
	"time"

	"github.com/spf13/cobra"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/quotaledger/quota/cmd/internal/server"
	"github.com/quotaledger/quota/ledger"
	"github.com/quotaledger/quota/projector"
	"github.com/quotaledger/quota/projector/admission"
)

func newServeCommand(g *globalFlags) *cobra.Command {
	var (
		cfg             server.Config
		sync            string
		logLevel        string
		logJSON         bool
		admissionConfig string
		maxEventSize    string
		release         string
	)
	cmd := &cobra.Command{
		Use:   "serve [--data DIR] [--listen HOST:PORT] [--nats URL [--replicas 3]]",
		Short: "Run the ledger: JetStream log, projector and query responders",
		Long: `serve runs the ledger. With no --nats it embeds a NATS server with JetStream,
listening on --listen and storing under --data; with --nats it uses that
external NATS (a cluster, in production) and embeds none. The projection is
kept in DIR/projection.db and rebuilt from the stream if deleted. Every page of
it is checked at start: a damaged file (a bad sector), or one built from
another stream (a JetStream store wiped by hand), stops serve with an error
naming it, and moving it aside rebuilds it. A stream deleted (or deleted
and created again) while serve runs stops it too. Admissions are taken once
the projection holds what the stream held at start (a rebuild logs its
progress); describe, explain and ingest are served meanwhile.

The embedded server's errors and warnings go to serve's log (its notices
at --log-level debug). If it can no longer write its store (a full disk),
serve stops with an error saying so, since nats-server takes no append
again until it restarts: free space and start serve again; nothing
acknowledged is lost.

--admission-control-config-file takes the file kube-apiserver takes under
that flag (an AdmissionConfiguration, or the ResourceQuota plugin's
ResourceQuotaConfiguration alone) and applies the ResourceQuota plugin's
limitedResources to admissions; other plugins' entries are ignored. Give
every replica sharing a stream the same file.

--metrics-listen serves Prometheus metrics over HTTP: admissions by mode and
result with their latency, reservation appends and conflicts, the
projection's applied sequence, backlog and skipped records, and the Go
runtime's and the process's own (heap, garbage collection, RSS). It also
answers probes: /readyz is 200 once admissions are taken and 503 while the
projection catches up at start, /healthz is 200 while the server runs.
A resource whose feed is behind is named in /readyz's 200 answer and in
quota_feed_lag_seconds.

--reservation-release says what ends a reservation that no object confirms
(a create refused later in the API server's chain, or never made). With
'ttl', --reservation-ttl after it was made: for a ledger fed by quota ingest
and asked by quota admit. With 'feed', the feed's progress that quota export
records: it is released once the log holds the cluster's changes of its
resource up to --api-request-timeout after it, and its object is not among
them. While the exporter is down or behind, reservations hold: the ledger
over-counts and refuses more, and never admits past a quota.

It stops cleanly on SIGINT or SIGTERM: the batch in hand is committed.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			var err error
			if cfg.Logger, err = newLogger(logLevel, logJSON); err != nil {
				return err
			}
			cfg.Logger.Info("quota serve starting", "version", version())
			if admissionConfig != "" {
				limited, err := admission.LoadLimitedResources(admissionConfig)
				if err != nil {
					return withCode(exitError, err)
				}
				cfg.Admission.Limited = limited
				cfg.Logger.Info("admission configuration read", "file", admissionConfig, "limitedResources", len(limited))
			}
			size, err := resource.ParseQuantity(maxEventSize)
			if err != nil || size.Sign() <= 0 || size.Cmp(*resource.NewQuantity(ledger.MaxMsgSizeLimit, resource.BinarySI)) > 0 {
				return withCode(exitError, errorf("--max-event-size %q: want a size from 1 to %s, such as 4Mi", maxEventSize, resource.NewQuantity(ledger.MaxMsgSizeLimit, resource.BinarySI)))
			}
			cfg.Stream.MaxMsgSize = int32(size.Value())
			if cfg.Admission.ReservationTTL <= 0 {
				return withCode(exitError, errorf("--reservation-ttl %s: want a positive duration such as 1m", cfg.Admission.ReservationTTL))
			}
			if cfg.Admission.StoreTimeout <= 0 {
				return withCode(exitError, errorf("--api-request-timeout %s: want a positive duration such as 60s, kube-apiserver's --request-timeout", cfg.Admission.StoreTimeout))
			}
			switch release {
			case "ttl":
			case "feed":
				cfg.Admission.ReleaseByFeed = true
			default:
				return withCode(exitError, errorf("--reservation-release %q: want ttl (a ledger fed by quota ingest) or feed (fed by quota export)", release))
			}
			if cfg.Stream.DuplicateWindow <= 0 {
				return withCode(exitError, errorf("--duplicate-window %s: want a positive duration such as 24h", cfg.Stream.DuplicateWindow))
			}
			switch sync {
			case "always", "":
				cfg.SyncInterval = 0
			default:
				d, err := time.ParseDuration(sync)
				if err != nil || d <= 0 {
					return withCode(exitError, errorf("--sync %q: want 'always' or a positive interval such as 1s", sync))
				}
				cfg.SyncInterval = d
			}
			if cfg.NATSOptions, err = g.serveNATSOptions(cmd.Flags(), cfg.NATSURL != "", cfg.Logger); err != nil {
				return withCode(exitError, err)
			}
			if cfg.NATSURL != "" {
				// These configure the embedded server, which --nats replaces.
				for _, name := range []string{"listen", "sync", "auth"} {
					if cmd.Flags().Changed(name) {
						return withCode(exitError, errorf("--%s configures the embedded NATS server; with --nats there is none (set it on that NATS server)", name))
					}
				}
			}
			if cfg.Stream.Replicas < 1 || cfg.Stream.Replicas > ledger.ReplicasMax {
				return withCode(exitError, errorf("--replicas %d: want 1 to %d", cfg.Stream.Replicas, ledger.ReplicasMax))
			}
			if cfg.Stream.Replicas > 1 && cfg.NATSURL == "" {
				return withCode(exitError, errorf("--replicas %d needs a NATS cluster (--nats); the embedded server is one node", cfg.Stream.Replicas))
			}
			cfg.Snapshots.Replicas = cfg.Stream.Replicas
			return server.Run(cmd.Context(), cfg)
		},
	}
	f := cmd.Flags()
	f.StringVar(&cfg.DataDir, "data", server.DefaultDataDir, "directory for the projection and the embedded JetStream store")
	f.StringVar(&cfg.Listen, "listen", server.DefaultListen, "HOST:PORT of the embedded NATS server (port 0: any free port)")
	f.StringVar(&cfg.AuthFile, "auth", "", "nats-server configuration file whose authorization block (users with NKeys or passwords, and each one's subject permissions) the embedded server requires of every client; only that block is read (default: no authentication, for a server on loopback)")
	f.StringVar(&cfg.NATSURL, "nats", "", "URL of an external NATS with JetStream; embeds no server (--creds, --nkey and --tls-* secure the connection)")
	f.IntVar(&cfg.Stream.Replicas, "replicas", 1, "copies of the stream (and of the snapshots) JetStream keeps: 3 on a NATS cluster (--nats), so that an acknowledged event survives the loss of a node; the embedded server keeps 1")
	f.StringVar(&sync, "sync", "always", "embedded JetStream sync policy: 'always' (fsync before ack) or an interval such as 1s (with --nats, that server's own setting applies)")
	f.StringVar(&maxEventSize, "max-event-size", resource.NewQuantity(ledger.DefaultMaxMsgSize, resource.BinarySI).String(), "largest event the stream takes, in bytes or as a quantity such as 4Mi (a resync too large for one is split, but the names it lists must fit one); an external NATS must take messages as large (max_payload)")
	f.DurationVar(&cfg.Stream.DuplicateWindow, "duplicate-window", ledger.DefaultDuplicateWindow, "how long the stream remembers each event's message ID, within which a re-sent event is a no-op; the NATS server holds about 100 bytes of memory for each ID it remembers")
	f.BoolVar(&cfg.Projector.NoSync, "projection-nosync", false, "do not fsync the projection file (it is rebuilt from the stream after a power loss)")
	f.DurationVar(&cfg.Projector.CommitDelay, "projection-commit-delay", projector.DefaultCommitDelay, "how long a small batch of new events waits for more before the projection commits it, unless a query waits (negative: commit at once)")
	f.Uint64Var(&cfg.Projector.CheckpointEvery, "projection-checkpoint-every", projector.DefaultCheckpointEvery, "write the projection's live state to its file every N applied events at most: what a restart folds again from the log")
	f.DurationVar(&cfg.Projector.CheckpointInterval, "projection-checkpoint-interval", projector.DefaultCheckpointInterval, "write the projection's live state to its file at least this often while events are applied")
	f.Int64Var(&cfg.Snapshots.Every, "snapshot-every", projector.DefaultSnapshotEvery, "write a snapshot of the projection to the object store every N applied events (negative: never)")
	f.IntVar(&cfg.Snapshots.Keep, "snapshot-keep", projector.DefaultSnapshotKeep, "number of periodic snapshots kept")
	f.StringVar(&release, "reservation-release", "ttl", "what releases an allowed create's reservation that no creation event confirms: 'ttl', --reservation-ttl after it was made (a ledger fed by quota ingest); or 'feed', once quota export's feed shows the cluster --api-request-timeout past it, held for as long as the feed is behind (a ledger fed by quota export)")
	f.DurationVar(&cfg.Admission.ReservationTTL, "reservation-ttl", admission.DefaultReservationTTL, "with --reservation-release ttl, how long an allowed admission's reservation holds before its object's creation event confirms it")
	f.DurationVar(&cfg.Admission.StoreTimeout, "api-request-timeout", admission.DefaultStoreTimeout, "with --reservation-release feed, the longest kube-apiserver may take to store an object it admitted: its --request-timeout")
	f.StringVar(&admissionConfig, "admission-control-config-file", "", "kube-apiserver's admission configuration file, for the ResourceQuota plugin's limitedResources (default: none limited)")
	f.StringVar(&cfg.MetricsListen, "metrics-listen", "", "HOST:PORT to serve Prometheus metrics on, at "+server.MetricsPath+", and the probes "+server.ReadyPath+" and "+server.HealthPath+" (port 0: any free port; default: no metrics server)")
	f.StringVar(&logLevel, "log-level", "info", "log level: debug, info, warn, error")
	f.BoolVar(&logJSON, "log-json", false, "log as JSON lines")
	return cmd
}
