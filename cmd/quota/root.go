package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"runtime/debug"
	"strings"
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

// defaultStartWait is how long a client waits, by default, for a ledger
// that is starting (--wait-for-server), and startPoll how often it looks.
const (
	defaultStartWait = 3 * time.Second
	startPoll        = 50 * time.Millisecond
)

type globalFlags struct {
	server string
	// startWait is how long a client waits for a ledger that is starting:
	// a NATS that does not listen yet, its stream not made yet, a subject
	// no responder has subscribed to yet. startBy is when that ends,
	// counted from the client's first try.
	startWait time.Duration
	startBy   time.Time
	// Credentials and TLS of the connection to a secured NATS: the
	// clients' to --server, serve's to --nats.
	creds, nkey, tlsCA, tlsCert, tlsKey string
	// denied is cancelled, with the violation as its cause, when the
	// server refuses the client's connection a subject (watchDenials);
	// nil before connect.
	denied context.Context
}

// natsOptions are the connection options the credential and TLS flags
// ask for.
func (g *globalFlags) natsOptions() ([]nats.Option, error) {
	var opts []nats.Option
	if g.creds != "" && g.nkey != "" {
		return nil, errors.New("--creds and --nkey are two ways of authenticating: give one")
	}
	if g.creds != "" {
		opts = append(opts, nats.UserCredentials(g.creds))
	}
	if g.nkey != "" {
		o, err := nats.NkeyOptionFromSeed(g.nkey)
		if err != nil {
			return nil, fmt.Errorf("--nkey %s: %w", g.nkey, err)
		}
		opts = append(opts, o)
	}
	if g.tlsCA != "" {
		opts = append(opts, nats.RootCAs(g.tlsCA))
	}
	if (g.tlsCert == "") != (g.tlsKey == "") {
		return nil, errors.New("--tls-cert and --tls-key go together: a client certificate and its key")
	}
	if g.tlsCert != "" {
		opts = append(opts, nats.ClientCert(g.tlsCert, g.tlsKey))
	}
	return opts, nil
}

// secured reports whether a credential or TLS flag is set.
func (g *globalFlags) secured() bool {
	return g.creds != "" || g.nkey != "" || g.tlsCA != "" || g.tlsCert != "" || g.tlsKey != ""
}

func newRootCommand() *cobra.Command {
	g := &globalFlags{}
	root := &cobra.Command{
		Use:   "quota",
		Short: "An event-sourced ledger of Kubernetes ResourceQuota usage",
		Long: `quota keeps Kubernetes ResourceQuota usage as a ledger: cluster events are
appended to a NATS JetStream stream, folded into per-namespace usage in a
bbolt projection, and queried over NATS request-reply.

Start the ledger with 'quota serve'; feed it from a cluster with 'quota export'
or from files and pipes with 'quota ingest'; read it with 'quota describe',
'quota admit' and 'quota replay'; let kube-apiserver ask it through
'quota webhook'.`,
		SilenceUsage:  true,
		SilenceErrors: true,
		Version:       version(),
	}
	server := os.Getenv("QUOTA_SERVER")
	if server == "" {
		server = defaultServer
	}
	pf := root.PersistentFlags()
	pf.StringVar(&g.server, "server", server, "NATS URL of the ledger ($QUOTA_SERVER sets the default); a user and password, or a token, go in it (nats://user:pass@host:4222)")
	pf.StringVar(&g.creds, "creds", os.Getenv("QUOTA_CREDS"), "NATS user credentials file (.creds: the user's JWT and NKey seed), for a server in decentralized JWT authentication ($QUOTA_CREDS sets the default)")
	pf.StringVar(&g.nkey, "nkey", os.Getenv("QUOTA_NKEY"), "file holding the NATS user's NKey seed, for a server that authenticates by NKey ($QUOTA_NKEY sets the default)")
	pf.StringVar(&g.tlsCA, "tls-ca", os.Getenv("QUOTA_TLS_CA"), "PEM file of the CA that signed the NATS server's certificate, for a tls:// URL whose CA the system does not trust ($QUOTA_TLS_CA sets the default)")
	pf.StringVar(&g.tlsCert, "tls-cert", "", "PEM file of a client certificate, for a NATS server that asks for one (with --tls-key)")
	pf.StringVar(&g.tlsKey, "tls-key", "", "PEM file of the client certificate's key")
	pf.DurationVar(&g.startWait, "wait-for-server", defaultStartWait, "how long a client waits for a ledger that is starting (so that 'quota serve & quota ingest FILE' works) before saying none runs; 0: not at all")
	root.AddCommand(
		newServeCommand(g),
		newIngestCommand(g),
		newDescribeCommand(g),
		newAdmitCommand(g),
		newReplayCommand(g),
		newExplainCommand(g),
		newRejectsCommand(g),
		newStatusCommand(g),
		newVersionCommand(),
		newExportCommand(g),
		newWebhookCommand(g),
		newCredentialsCommand(),
	)
	return root
}

// connect opens a client connection to the ledger's NATS.
func (g *globalFlags) connect(name string) (*nats.Conn, error) {
	// A client gives up soon when the server goes away: the commands are
	// safe to re-run (ingest is deduplicated), and a hung client helps no
	// operator.
	if strings.TrimSpace(g.server) == "" {
		return nil, fmt.Errorf("--server is empty: give the NATS URL of the ledger (the default is %s)", defaultServer)
	}
	opts, err := g.natsOptions()
	if err != nil {
		return nil, err
	}
	opts = append(opts, nats.Name(name), nats.Timeout(5*time.Second),
		nats.MaxReconnects(clientReconnectsMax), nats.ReconnectWait(clientReconnectWait))
	nc, err := nats.Connect(g.server, opts...)
	for errors.Is(err, nats.ErrNoServers) && g.stillStarting() {
		nc, err = nats.Connect(g.server, opts...)
	}
	if err != nil {
		hint := "is 'quota serve' running? set --server or $QUOTA_SERVER"
		if g.startWait > 0 {
			hint = fmt.Sprintf("is 'quota serve' running? waited %s for it (--wait-for-server); set --server or $QUOTA_SERVER", g.startWait)
		}
		if refusedAsClient(err) {
			hint = "the credentials or TLS settings do not match the server's: see --creds, --nkey, --tls-ca, --tls-cert and --tls-key"
		}
		return nil, fmt.Errorf("connect to the ledger at %s: %w (%s)", g.server, err, hint)
	}
	g.denied = watchDenials(nc)
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
	// JetStream's API is requests too: a key without the permission for
	// them fails here at once.
	attachCtx, stop := g.untilDenied(ctx)
	defer stop()
	stream, err := ledger.Attach(attachCtx, js, ledger.Config{})
	for errors.Is(err, ledger.ErrNoStream) && g.stillStarting() {
		stream, err = ledger.Attach(attachCtx, js, ledger.Config{})
	}
	if err != nil {
		nc.Close()
		if denied := deniedError(context.Cause(attachCtx)); denied != nil {
			return nil, nil, nil, fmt.Errorf("attach the ledger's streams: %w", denied)
		}
		return nil, nil, nil, err
	}
	return nc, js, stream, nil
}

// stillStarting reports whether a client may still wait for a ledger that
// is starting, and if so waits startPoll before the caller tries again.
func (g *globalFlags) stillStarting() bool {
	if g.startBy.IsZero() {
		g.startBy = time.Now().Add(g.startWait)
	}
	if time.Now().Add(startPoll).After(g.startBy) {
		return false
	}
	time.Sleep(startPoll)
	return true
}

// request sends one request on subject, sent again while no responder
// listens there and the ledger may still be starting (its responders
// subscribe once its stream is open, admission's once its projection has
// caught up with the log). A subject the server refuses this client ends
// the request at once, with the violation as its error.
func (g *globalFlags) request(nc *nats.Conn, subject string, body []byte) (*nats.Msg, error) {
	ctx := g.denied
	if ctx == nil {
		ctx = context.Background()
	}
	msg, err := ledger.RequestAnswer(ctx, nc, subject, body, requestTimeout)
	for errors.Is(err, nats.ErrNoResponders) && g.stillStarting() {
		msg, err = ledger.RequestAnswer(ctx, nc, subject, body, requestTimeout)
	}
	if denied := deniedError(err); denied != nil {
		return nil, denied
	}
	return msg, err
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

// refusedAsClient reports whether a connection failed on the server's
// terms (its certificate, its authentication) rather than for want of a
// server.
func refusedAsClient(err error) bool {
	if errors.Is(err, nats.ErrAuthorization) || errors.Is(err, nats.ErrSecureConnRequired) || errors.Is(err, nats.ErrSecureConnWanted) {
		return true
	}
	msg := strings.ToLower(err.Error())
	return strings.Contains(msg, "authorization") || strings.Contains(msg, "tls") || strings.Contains(msg, "x509")
}

// newVersionCommand prints what --version prints.
func newVersionCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print the version of this build (as --version does)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			fmt.Fprintf(cmd.OutOrStdout(), "quota version %s\n", version())
			return nil
		},
	}
}

// buildVersion is set by the Makefile's build (-ldflags -X) to git
// describe's name of the commit.
var buildVersion string

// version names this build: what the Makefile stamped, else its module
// version or the commit Go stamped (marked when the tree had changes),
// and the Go release.
func version() string {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return "unknown"
	}
	if buildVersion != "" {
		return buildVersion + ", " + bi.GoVersion
	}
	v := bi.Main.Version
	var rev, modified string
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value[:min(12, len(s.Value))]
		case "vcs.modified":
			if s.Value == "true" {
				modified = " with changes"
			}
		}
	}
	if (v == "" || v == "(devel)") && rev != "" {
		v = "commit " + rev + modified
	}
	return v + ", " + bi.GoVersion
}

// newLogger makes the slog logger of a long-running command (--log-level,
// --log-json) on standard error, and makes it the default: what logs to
// the default logger (a panic recovered where no logger is at hand) goes
// to the command's log too.
func newLogger(level string, json bool) (*slog.Logger, error) {
	var l slog.Level
	if err := l.UnmarshalText([]byte(level)); err != nil {
		return nil, withCode(exitError, err)
	}
	opts := &slog.HandlerOptions{Level: l}
	var log *slog.Logger
	if json {
		log = slog.New(slog.NewJSONHandler(os.Stderr, opts))
	} else {
		log = slog.New(slog.NewTextHandler(os.Stderr, opts))
	}
	slog.SetDefault(log)
	return log, nil
}
