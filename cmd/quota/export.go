package main

import (
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"k8s.io/klog/v2"

	"github.com/quotaledger/quota/cmd/internal/exporter"
	"github.com/quotaledger/quota/ingest/export"
)

func newExportCommand(g *globalFlags) *cobra.Command {
	var (
		c        exporter.Config
		logLevel string
		logJSON  bool
	)
	cmd := &cobra.Command{
		Use:   "export [--kubeconfig FILE]",
		Short: "Stream a live cluster into the ledger",
		Long:  exportHelp,
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			log, err := newLogger(logLevel, logJSON)
			if err != nil {
				return err
			}
			klog.SetSlogLogger(log.With("from", "client-go"))
			c.Log, c.NATSURL, c.Version = log, g.server, version()
			if c.NATSOptions, err = g.natsOptions(); err != nil {
				return withCode(exitError, err)
			}
			return withCode(exitError, exporter.Run(cmd.Context(), c))
		},
	}
	addExportFlags(cmd.Flags(), &c)
	cmd.Flags().StringVar(&logLevel, "log-level", "info", "log level: debug, info, warn, error")
	cmd.Flags().BoolVar(&logJSON, "log-json", false, "log JSON lines instead of text")
	return cmd
}

// addExportFlags adds export's flags, but for logging's, setting c.
func addExportFlags(f *pflag.FlagSet, c *exporter.Config) {
	f.StringVar(&c.Kubeconfig, "kubeconfig", "", "kubeconfig file of the cluster (default: the in-cluster ServiceAccount, then $KUBECONFIG, then ~/.kube/config)")
	f.StringVar(&c.MetricsListen, "metrics-listen", "", "HOST:PORT to serve Prometheus metrics on, at "+export.MetricsPath+", and the probes "+export.ReadyPath+" and "+export.HealthPath+" (port 0: any free port; default: none)")
	f.StringVar(&c.Identity, "identity", "", "this replica's name in the leader election (default: the host name, a pod's name)")
	f.StringVar(&c.LeaseNamespace, "lease-namespace", "", "namespace of the leader election's Lease (default: $POD_NAMESPACE, else default)")
	f.StringVar(&c.LeaseName, "lease-name", export.DefaultLeaseName, "name of the leader election's Lease")
	f.DurationVar(&c.LeaseDuration, "lease-duration", export.DefaultLeaseDuration, "how long a leader's lease lasts unrenewed: a standby takes over that long after the leader stops")
	f.DurationVar(&c.RenewDeadline, "renew-deadline", export.DefaultRenewDeadline, "how long the leader tries to renew its lease before it stops streaming")
	f.DurationVar(&c.RetryPeriod, "retry-period", export.DefaultRetryPeriod, "how often the lease is tried")
	f.IntVar(&c.InFlightMax, "in-flight-max", export.DefaultInFlightMax, "watch events read and not yet acknowledged by JetStream; a full window holds the watches back")
	f.DurationVar(&c.DiscoveryInterval, "discovery-interval", export.DefaultDiscoveryInterval, "how often the API server's resources are discovered again (custom resources appear and go)")
	f.StringVar(&c.CheckpointBucket, "checkpoint-bucket", export.DefaultCheckpointBucket, "JetStream key-value bucket of each resource's resume point")
}

// exportHelp is export's long help.
const exportHelp = `export lists and watches every kind the ledger reads (pods, claims, services,
quotas, LimitRanges, ConfigMaps, Secrets, ReplicationControllers,
ServiceAccounts, ResourceClaims; the cluster's StorageClasses,
PriorityClasses, RuntimeClasses and DeviceClasses; and every namespaced
resource a quota can count as count/<resource>.<group>, custom resources
included, found by discovery every --discovery-interval) and appends their
events to the ledger, through the same path as 'quota ingest'. Kinds that
are only counted are read as metadata only.

Every list is followed by a resync of that resource, so that objects
deleted while nothing watched are removed. Each resource resumes from a
checkpoint (its resourceVersion, in the JetStream key-value bucket
--checkpoint-bucket) after a restart; an expired one is a relist and a
resync. One of several replicas streams at a time: they elect a leader on
the Lease --lease-namespace/--lease-name, and one that takes over from
another starts with a relist and a resync of everything.

The cluster is reached through --kubeconfig, or else the in-cluster
ServiceAccount, $KUBECONFIG, or ~/.kube/config. It keeps running through
NATS and API server outages, retrying with backoff. --metrics-listen serves
Prometheus metrics at /metrics, and the probes /healthz and /readyz (ready
once every stream has synced; a standby is ready). It stops on SIGINT or
SIGTERM, appending what it has read.`
