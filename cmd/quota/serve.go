package main

import (
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/quotaledger/quota/cmd/internal/server"
	"github.com/quotaledger/quota/ledger"
	"github.com/quotaledger/quota/projector"
	"github.com/quotaledger/quota/projector/admission"
)

func newServeCommand(g *globalFlags) *cobra.Command {
	var (
		sf       server.Flags
		logLevel string
		logJSON  bool
	)
	cmd := &cobra.Command{
		Use:   "serve [--data DIR] [--listen HOST:PORT] [--cluster-listen HOST:PORT --routes URL,... --replicas 3 | --nats URL [--replicas 3]]",
		Short: "Run the ledger: JetStream log, projector and query responders",
		Long:  serveHelp,
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			var err error
			if sf.Logger, err = newLogger(logLevel, logJSON); err != nil {
				return err
			}
			sf.Logger.Info("quota serve starting", "version", version())
			for _, name := range []string{"listen", "sync", "auth", "cluster-listen", "routes", "cluster-name", "cluster-advertise"} {
				if cmd.Flags().Changed(name) {
					sf.EmbeddedGiven = append(sf.EmbeddedGiven, name)
				}
			}
			if err := sf.Validate(); err != nil {
				return withCode(exitError, err)
			}
			if sf.NATSOptions, err = g.serveNATSOptions(cmd.Flags(), sf.NATSURL != "", sf.Logger); err != nil {
				return withCode(exitError, err)
			}
			return server.Serve(cmd.Context(), sf)
		},
	}
	addServeFlags(cmd.Flags(), &sf)
	cmd.Flags().StringVar(&logLevel, "log-level", "info", "log level: debug, info, warn, error")
	cmd.Flags().BoolVar(&logJSON, "log-json", false, "log as JSON lines")
	return cmd
}

// addServeFlags adds serve's flags, but for logging's, setting sf.
func addServeFlags(f *pflag.FlagSet, sf *server.Flags) {
	f.StringVar(&sf.DataDir, "data", server.DefaultDataDir, "directory for the projection and the embedded JetStream store")
	f.StringVar(&sf.Listen, "listen", server.DefaultListen, "HOST:PORT of the embedded NATS server (port 0: any free port)")
	f.StringVar(&sf.AuthFile, "auth", "", "nats-server configuration file whose authorization block (users with NKeys or passwords, and each one's subject permissions) the embedded server requires of every client; only that block is read (default: no authentication, for a server on loopback)")
	f.StringVar(&sf.NATSURL, "nats", "", "URL of an external NATS with JetStream; embeds no server (--creds, --nkey and --tls-* secure the connection)")
	f.IntVar(&sf.Stream.Replicas, "replicas", 1, "copies of the stream (and of the snapshots and quota export's bucket) JetStream keeps: 3 on a cluster (three members with --routes, or --nats), so that an acknowledged event survives the loss of a node; a server of its own keeps 1")
	f.StringVar(&sf.ServerName, "server-name", "", "this server's name: its embedded server's in the cluster, unique among the members, and the one quota status shows (default: the host name, a pod's name in a StatefulSet)")
	f.StringVar(&sf.ClusterListen, "cluster-listen", "", "HOST:PORT where the embedded server takes the other members' routes: with --routes, it is a member of a JetStream cluster (default: a server of its own)")
	f.StringSliceVar(&sf.Routes, "routes", nil, "route URLs of every member of the cluster, this one included, comma-separated: nats://HOST:PORT,... (every member dials the others; the same list on each)")
	f.StringVar(&sf.ClusterName, "cluster-name", ledger.DefaultClusterName, "the cluster's name, the same on every member")
	f.StringVar(&sf.ClusterAdvertise, "cluster-advertise", "", "HOST:PORT the other members reach this one's routes at, when not --cluster-listen's (behind a NAT or a proxy)")
	f.StringVar(&sf.Sync, "sync", "always", "embedded JetStream sync policy: 'always' (fsync before ack, on every member of a cluster) or an interval such as 1s (with --nats, that server's own setting applies)")
	f.StringVar(&sf.MaxEventSize, "max-event-size", resource.NewQuantity(ledger.DefaultMaxMsgSize, resource.BinarySI).String(), "largest event the stream takes, in bytes or as a quantity such as 4Mi (a resync too large for one is split, but the names it lists must fit one); an external NATS must take messages as large (max_payload)")
	f.DurationVar(&sf.Stream.DuplicateWindow, "duplicate-window", ledger.DefaultDuplicateWindow, "how long the stream remembers each event's message ID, within which a re-sent event is a no-op; the NATS server holds about 100 bytes of memory for each ID it remembers")
	f.BoolVar(&sf.Projector.NoSync, "projection-nosync", false, "do not fsync the projection file (it is rebuilt from the stream after a power loss)")
	f.DurationVar(&sf.Projector.CommitDelay, "projection-commit-delay", projector.DefaultCommitDelay, "how long a small batch of new events waits for more before the projection commits it, unless a query waits (negative: commit at once)")
	f.Uint64Var(&sf.Projector.CheckpointEvery, "projection-checkpoint-every", projector.DefaultCheckpointEvery, "write the projection's live state to its file every N applied events at most: what a restart folds again from the log")
	f.DurationVar(&sf.Projector.CheckpointInterval, "projection-checkpoint-interval", projector.DefaultCheckpointInterval, "write the projection's live state to its file at least this often while events are applied")
	f.Int64Var(&sf.Snapshots.Every, "snapshot-every", projector.DefaultSnapshotEvery, "write a checkpoint (a snapshot of the projection) to the object store every N applied events (negative: by --snapshot-interval alone; both negative: none)")
	f.DurationVar(&sf.Snapshots.Interval, "snapshot-interval", projector.DefaultSnapshotInterval, "and at least this often while events are applied (negative: by --snapshot-every alone)")
	f.IntVar(&sf.Snapshots.Keep, "snapshot-keep", projector.DefaultSnapshotKeep, "number of newest checkpoints kept (with --retention, also those the log needs)")
	f.DurationVar(&sf.Retention, "retention", 0, "remove from the log the events older than this that a checkpoint covers, such as 720h (default 0: keep every event)")
	f.StringVar(&sf.ArchiveDir, "archive", "", "with --retention, write the events to this directory (gzip JSON lines) before they leave the log, for 'quota replay --archive'")
	f.StringVar(&sf.Release, "reservation-release", "ttl", "what releases an allowed create's reservation that no creation event confirms: 'ttl', --reservation-ttl after it was made (a ledger fed by quota ingest); or 'feed', once quota export's feed shows the cluster --api-request-timeout past it, held for as long as the feed is behind (a ledger fed by quota export)")
	f.DurationVar(&sf.Admission.ReservationTTL, "reservation-ttl", admission.DefaultReservationTTL, "with --reservation-release ttl, how long an allowed admission's reservation holds before its object's creation event confirms it")
	f.DurationVar(&sf.Admission.StoreTimeout, "api-request-timeout", admission.DefaultStoreTimeout, "with --reservation-release feed, the longest kube-apiserver may take to store an object it admitted: its --request-timeout")
	f.StringVar(&sf.AdmissionConfigFile, "admission-control-config-file", "", "kube-apiserver's admission configuration file, for the ResourceQuota plugin's limitedResources (default: none limited)")
	f.StringVar(&sf.MetricsListen, "metrics-listen", "", "HOST:PORT to serve Prometheus metrics on, at "+server.MetricsPath+", and the probes "+server.ReadyPath+" and "+server.HealthPath+" (port 0: any free port; default: no metrics server)")
}

// serveHelp is serve's long help.
const serveHelp = `serve runs the ledger. With no --nats it embeds a NATS server with JetStream,
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

--retention DURATION bounds the log by time: events older than DURATION
that a checkpoint covers leave it, purged up to the newest such checkpoint,
so the log always starts right after one, and every rebuild (a restart
without its file, a new replica, quota replay) starts from a checkpoint.
Checkpoints (--snapshot-every, --snapshot-interval) are validated before an
older one is dropped; those the log needs are kept besides the newest
--snapshot-keep. --archive DIR writes the events to DIR first, as gzip
JSON-lines segments named by their sequences and times, with the checkpoint
they fold onto: 'quota replay --archive DIR' answers for any moment the
archive and the log cover. --duplicate-window must not exceed the
retention. With several servers on one log one trims at a time (a lease in
the key-value bucket QUOTA_RETENTION): give them one shared DIR.

--reservation-release says what ends a reservation that no object confirms
(a create refused later in the API server's chain, or never made). With
'ttl', --reservation-ttl after it was made: for a ledger fed by quota ingest
and asked by quota admit. With 'feed', the feed's progress that quota export
records: it is released once the log holds the cluster's changes of its
resource up to --api-request-timeout after it, and its object is not among
them. While the exporter is down or behind, reservations hold: the ledger
over-counts and refuses more, and never admits past a quota.

With --cluster-listen and --routes (every member's route URL, its own
included) the embedded server is a member of a JetStream cluster; with
--replicas 3 on three members, each event is stored on all three, and
acknowledged once two have synced it. Every member runs its own projection
and takes queries and admissions in queue groups; a reservation's
compare-and-swap keeps them from admitting past a quota together. A member
cut off from the others' quorum stops deciding: its admissions wait for the
quorum and then fail with 503 saying so, while the others decide. An append
whose leader went away before acknowledging it is sent again with its
message ID, which JetStream's deduplication makes harmless.

It stops cleanly on SIGINT or SIGTERM: the requests received are answered,
the batch in hand is committed, and a cluster member then goes into lame-
duck mode: it hands the leaderships it holds to the other members and lets
its clients move to them before it exits.`
