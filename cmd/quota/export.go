package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/spf13/cobra"
	"golang.org/x/sync/errgroup"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/klog/v2"

	"github.com/quotaledger/quota/ingest/export"
)

// exportReconnectWait is how long the exporter waits between attempts to
// reach NATS again; it never gives up.
const exportReconnectWait = 2 * time.Second

func newExportCommand(g *globalFlags) *cobra.Command {
	var (
		kubeconfig, metricsListen, logLevel string
		logJSON                             bool
		cfg                                 export.Config
	)
	cmd := &cobra.Command{
		Use:   "export [--kubeconfig FILE]",
		Short: "Stream a live cluster into the ledger",
		Long: `export lists and watches every kind the ledger reads (pods, claims, services,
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
SIGTERM, appending what it has read.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			log, err := newLogger(logLevel, logJSON)
			if err != nil {
				return err
			}
			klog.SetSlogLogger(log.With("from", "client-go"))
			cfg.Log = log

			kc, where, err := kubernetesConfig(kubeconfig)
			if err != nil {
				return withCode(exitError, err)
			}
			cfg.Kubernetes = kc
			natsOpts, err := g.natsOptions()
			if err != nil {
				return withCode(exitError, err)
			}
			natsOpts = append(natsOpts, nats.Name("quota export"), nats.MaxReconnects(-1),
				nats.RetryOnFailedConnect(true), nats.ReconnectWait(exportReconnectWait),
				nats.DisconnectErrHandler(func(_ *nats.Conn, err error) {
					log.Warn("NATS connection lost, reconnecting every "+exportReconnectWait.String(), "server", g.server, "err", err)
				}),
				nats.ReconnectHandler(func(nc *nats.Conn) {
					log.Info("NATS connection back", "server", nc.ConnectedUrlRedacted())
				}))
			nc, err := nats.Connect(g.server, natsOpts...)
			if err != nil {
				return withCode(exitError, fmt.Errorf("connect to the ledger at %s: %w", g.server, err))
			}
			defer nc.Close()
			js, err := jetstream.New(nc)
			if err != nil {
				return withCode(exitError, err)
			}
			ctx := cmd.Context()
			log.Info("quota export starting", "version", version(), "cluster", kc.Host, "kubeconfig", where, "nats", g.server)
			stream, err := export.Attach(ctx, js, log)
			if err != nil {
				if ctx.Err() != nil {
					return nil
				}
				return withCode(exitError, err)
			}
			cfg.Stream, cfg.JetStream = stream, js
			reg := prometheus.NewRegistry()
			reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
			cfg.Registry = reg
			x, err := export.New(cfg)
			if err != nil {
				return withCode(exitError, err)
			}
			log.Info("quota export standing for election", "identity", x.Identity(), "lease", cfg.LeaseName)
			group, gctx := errgroup.WithContext(ctx)
			if metricsListen != "" {
				l, err := net.Listen("tcp", metricsListen)
				if err != nil {
					return withCode(exitError, fmt.Errorf("--metrics-listen %s: %w", metricsListen, err))
				}
				log.Info("quota export metrics", "url", "http://"+l.Addr().String()+export.MetricsPath)
				group.Go(func() error { return x.Serve(gctx, l, reg) })
			}
			group.Go(func() error { return x.Run(gctx) })
			if err := group.Wait(); err != nil && !errors.Is(err, context.Canceled) {
				return withCode(exitError, err)
			}
			log.Info("quota export stopped")
			return nil
		},
	}
	f := cmd.Flags()
	f.StringVar(&kubeconfig, "kubeconfig", "", "kubeconfig file of the cluster (default: the in-cluster ServiceAccount, then $KUBECONFIG, then ~/.kube/config)")
	f.StringVar(&metricsListen, "metrics-listen", "", "HOST:PORT to serve Prometheus metrics on, at "+export.MetricsPath+", and the probes "+export.ReadyPath+" and "+export.HealthPath+" (port 0: any free port; default: none)")
	f.StringVar(&cfg.Identity, "identity", "", "this replica's name in the leader election (default: the host name, a pod's name)")
	f.StringVar(&cfg.LeaseNamespace, "lease-namespace", "", "namespace of the leader election's Lease (default: $POD_NAMESPACE, else default)")
	f.StringVar(&cfg.LeaseName, "lease-name", export.DefaultLeaseName, "name of the leader election's Lease")
	f.DurationVar(&cfg.LeaseDuration, "lease-duration", export.DefaultLeaseDuration, "how long a leader's lease lasts unrenewed: a standby takes over that long after the leader stops")
	f.DurationVar(&cfg.RenewDeadline, "renew-deadline", export.DefaultRenewDeadline, "how long the leader tries to renew its lease before it stops streaming")
	f.DurationVar(&cfg.RetryPeriod, "retry-period", export.DefaultRetryPeriod, "how often the lease is tried")
	f.IntVar(&cfg.InFlightMax, "in-flight-max", export.DefaultInFlightMax, "watch events read and not yet acknowledged by JetStream; a full window holds the watches back")
	f.DurationVar(&cfg.DiscoveryInterval, "discovery-interval", export.DefaultDiscoveryInterval, "how often the API server's resources are discovered again (custom resources appear and go)")
	f.StringVar(&cfg.CheckpointBucket, "checkpoint-bucket", export.DefaultCheckpointBucket, "JetStream key-value bucket of each resource's resume point")
	f.StringVar(&logLevel, "log-level", "info", "log level: debug, info, warn, error")
	f.BoolVar(&logJSON, "log-json", false, "log JSON lines instead of text")
	return cmd
}

// kubernetesConfig loads the cluster's client configuration: from file
// when given, else in-cluster, else $KUBECONFIG or ~/.kube/config. It
// says where it came from.
func kubernetesConfig(file string) (*rest.Config, string, error) {
	if file != "" {
		c, err := clientcmd.BuildConfigFromFlags("", file)
		if err != nil {
			return nil, "", fmt.Errorf("--kubeconfig %s: %w", file, err)
		}
		return c, file, nil
	}
	if c, err := rest.InClusterConfig(); err == nil {
		return c, "in-cluster ServiceAccount", nil
	}
	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	c, err := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, &clientcmd.ConfigOverrides{}).ClientConfig()
	if err != nil {
		return nil, "", fmt.Errorf("no cluster configuration: not in a cluster, and $KUBECONFIG or ~/.kube/config: %w (give --kubeconfig)", err)
	}
	return c, "$KUBECONFIG or ~/.kube/config", nil
}
