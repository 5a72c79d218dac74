package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/spf13/cobra"

	"github.com/quotaledger/quota/ledger"
)

// defaultServer is where clients find the ledger when neither --server nor
// $QUOTA_SERVER says otherwise.
const defaultServer = "nats://127.0.0.1:4222"

// requestTimeout bounds one client request to the server.
const requestTimeout = 30 * time.Second

// Reconnection of client commands: about five seconds in all.
const (
	clientReconnectsMax = 20
	clientReconnectWait = 250 * time.Millisecond
)

type globalFlags struct {
	server string
}

func newRootCommand() *cobra.Command {
	g := &globalFlags{}
	root := &cobra.Command{
		Use:   "quota",
		Short: "An event-sourced ledger of Kubernetes ResourceQuota usage",
		Long: `quota keeps Kubernetes ResourceQuota usage as a ledger: cluster events are
appended to a NATS JetStream stream, folded into per-namespace usage in a
bbolt projection, and queried over NATS request-reply.

Start the ledger with 'quota serve'; feed it with 'quota ingest'; read it with
'quota describe', 'quota admit' and 'quota replay'.`,
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	server := os.Getenv("QUOTA_SERVER")
	if server == "" {
		server = defaultServer
	}
	root.PersistentFlags().StringVar(&g.server, "server", server, "NATS URL of the ledger ($QUOTA_SERVER sets the default)")
	root.AddCommand(
		newServeCommand(),
		newIngestCommand(g),
		newDescribeCommand(g),
		newAdmitCommand(g),
		newReplayCommand(g),
		newExplainCommand(g),
		newRejectsCommand(g),
	)
	return root
}

// connect opens a client connection to the ledger's NATS.
func (g *globalFlags) connect(name string) (*nats.Conn, error) {
	// A client gives up soon when the server goes away: the commands are
	// safe to re-run (ingest is deduplicated), and a hung client helps no
	// operator.
	nc, err := nats.Connect(g.server, nats.Name(name), nats.Timeout(5*time.Second),
		nats.MaxReconnects(clientReconnectsMax), nats.ReconnectWait(clientReconnectWait))
	if err != nil {
		return nil, fmt.Errorf("connect to the ledger at %s: %w (is 'quota serve' running? set --server or $QUOTA_SERVER)", g.server, err)
	}
	return nc, nil
}

// attach connects to the ledger's NATS and opens its existing streams
// without changing their configuration. The caller closes the connection.
func (g *globalFlags) attach(ctx context.Context, name string) (*nats.Conn, jetstream.JetStream, *ledger.Stream, error) {
	nc, err := g.connect(name)
	if err != nil {
		return nil, nil, nil, err
	}
	js, err := jetstream.New(nc)
	if err != nil {
		nc.Close()
		return nil, nil, nil, err
	}
	stream, err := ledger.Attach(ctx, js, ledger.Config{})
	if err != nil {
		nc.Close()
		return nil, nil, nil, err
	}
	return nc, js, stream, nil
}

// askError says why a request to the ledger on subject failed, as an
// error exiting exitError. With no responder, it says that no ledger
// server answers there, and why that may be (why, when set, adds a
// reason of the subject's own).
func askError(subject string, err error, why string) error {
	if errors.Is(err, nats.ErrNoResponders) {
		return withCode(exitError, fmt.Errorf("ask the ledger (%s): no ledger server answers there: none runs on this NATS (--server, $QUOTA_SERVER)%s: %w", subject, why, err))
	}
	return withCode(exitError, fmt.Errorf("ask the ledger (%s): %w", subject, err))
}
