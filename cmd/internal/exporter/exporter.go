package exporter

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"golang.org/x/sync/errgroup"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/quotaledger/quota/ingest/export"
)

// ReconnectWait is how long the exporter waits between attempts to reach
// NATS again; it never gives up.
const ReconnectWait = 2 * time.Second

// Config is one `quota export`.
type Config struct {
	// Config is the exporter's; Run sets its Kubernetes, Stream,
	// JetStream and Registry.
	export.Config
	// Kubeconfig is --kubeconfig. Zero: in-cluster, else $KUBECONFIG or
	// ~/.kube/config.
	Kubeconfig string
	// MetricsListen is --metrics-listen. Zero: no metrics server.
	MetricsListen string
	// NATSURL is the ledger's NATS (--server); NATSOptions secure the
	// connection to it.
	NATSURL     string
	NATSOptions []nats.Option
	// Version names the build in the starting log line.
	Version string
}

// Validate reports every setting of c that is wrong, in one error. The
// exporter's own settings are checked by export.New, once Run has
// connected.
func (c Config) Validate() error {
	var problems []string
	if c.Log == nil {
		problems = append(problems, "no Log")
	}
	if len(problems) == 0 {
		return nil
	}
	return fmt.Errorf("%w: %s", ErrInvalidConfig, strings.Join(problems, "; "))
}

// Run streams the cluster into the ledger until ctx ends.
func Run(ctx context.Context, c Config) error {
	if err := c.Validate(); err != nil {
		return err
	}
	kc, where, err := kubernetesConfig(c.Kubeconfig)
	if err != nil {
		return err
	}
	c.Kubernetes = kc
	nc, err := c.connect()
	if err != nil {
		return err
	}
	defer nc.Close()
	js, err := jetstream.New(nc)
	if err != nil {
		return err
	}
	c.Log.Info("quota export starting", "version", c.Version, "cluster", kc.Host, "kubeconfig", where, "nats", c.NATSURL)
	stream, err := export.Attach(ctx, js, c.Log)
	if err != nil {
		if ctx.Err() != nil {
			return nil
		}
		return err
	}
	c.Stream, c.JetStream = stream, js
	return c.run(ctx)
}

// connect connects to the ledger's NATS for good: it retries the first
// connection and every reconnection without end, saying so in the log.
func (c Config) connect() (*nats.Conn, error) {
	log := c.Log
	opts := append(c.NATSOptions, nats.Name("quota export"), nats.MaxReconnects(-1),
		nats.RetryOnFailedConnect(true), nats.ReconnectWait(ReconnectWait),
		nats.DisconnectErrHandler(func(_ *nats.Conn, err error) {
			log.Warn("NATS connection lost, reconnecting every "+ReconnectWait.String(), "server", c.NATSURL, "err", err)
		}),
		nats.ReconnectHandler(func(nc *nats.Conn) {
			log.Info("NATS connection back", "server", nc.ConnectedUrlRedacted())
		}))
	nc, err := nats.Connect(c.NATSURL, opts...)
	if err != nil {
		return nil, fmt.Errorf("connect to the ledger at %s: %w", c.NATSURL, err)
	}
	return nc, nil
}

// run runs the exporter, and its metrics server when asked for, until
// ctx ends.
func (c Config) run(ctx context.Context) error {
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	c.Registry = reg
	x, err := export.New(c.Config)
	if err != nil {
		return err
	}
	c.Log.Info("quota export standing for election", "identity", x.Identity(), "lease", c.LeaseName)
	group, gctx := errgroup.WithContext(ctx)
	if c.MetricsListen != "" {
		l, err := net.Listen("tcp", c.MetricsListen)
		if err != nil {
			return fmt.Errorf("--metrics-listen %s: %w", c.MetricsListen, err)
		}
		c.Log.Info("quota export metrics", "url", "http://"+l.Addr().String()+export.MetricsPath)
		group.Go(func() error { return x.Serve(gctx, l, reg) })
	}
	group.Go(func() error { return x.Run(gctx) })
	if err := group.Wait(); err != nil && !errors.Is(err, context.Canceled) {
		return err
	}
	c.Log.Info("quota export stopped")
	return nil
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
