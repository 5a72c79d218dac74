package ledger

import (
	"cmp"
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nkeys"
)

// Defaults of EmbeddedConfig.
const (
	// DefaultEmbeddedHost is the interface the embedded server listens on:
	// loopback, so that an unconfigured server is not reachable from the
	// network.
	DefaultEmbeddedHost = "127.0.0.1"
	// DefaultEmbeddedPort is the NATS client port.
	DefaultEmbeddedPort = 4222
	// DefaultReadyTimeout bounds the wait for the server to accept clients.
	DefaultReadyTimeout = 10 * time.Second
	// RandomPort asks for a free port chosen by the system (for tests).
	RandomPort = -1
)

// EmbeddedConfig configures the in-process NATS server with JetStream.
type EmbeddedConfig struct {
	// Host is the listen address. Zero: DefaultEmbeddedHost.
	Host string
	// Port is the client port. Zero: DefaultEmbeddedPort; RandomPort (-1):
	// any free port, see ClientURL.
	Port int
	// StoreDir is the directory JetStream keeps its files in. Required.
	StoreDir string
	// SyncInterval is how often JetStream flushes its files to stable
	// storage. Zero: every write is synced before it is acknowledged
	// (nats-server's sync_always), so an acknowledged event survives a power
	// loss. A positive interval trades that for speed: events acknowledged
	// within the last interval may be lost on power loss (not on a process
	// crash).
	SyncInterval time.Duration
	// ServerName names the server in logs and JetStream metadata; a
	// cluster member's is required, and unique among the members. Zero:
	// chosen by the server.
	ServerName string
	// Cluster, when its Routes are set, makes the server a member of a
	// JetStream cluster. Every member syncs as SyncInterval says: give
	// them all zero, so that a write acknowledged by a quorum is on the
	// disk of each member of it. Zero: a server of its own.
	Cluster ClusterConfig
	// MaxPayload is the largest message accepted. Zero:
	// DefaultMaxMsgSize. Keep it at least Config.MaxMsgSize.
	MaxPayload int32
	// MaxStore bounds JetStream's file storage in bytes. Zero: the server
	// derives a bound from the free disk space.
	MaxStore int64
	// ReadyTimeout bounds the wait for the server to accept clients. Zero:
	// DefaultReadyTimeout.
	ReadyTimeout time.Duration
	// AuthFile, when set, is a nats-server configuration file whose
	// authorization block (users with passwords or NKeys, each with its
	// subject permissions) the server requires of every client; nothing
	// else in the file is read. Zero: no authentication, for a server on
	// loopback. The process's own connections (InProcess) authenticate
	// with an NKey made at start, known to no one else.
	AuthFile string
	// Logger receives the server's own log: its errors and warnings at
	// those levels, its notices (start, stop, stream recovery) at Debug,
	// each with component=nats. Nil: the server logs nothing (a fatal
	// error still ends StartEmbedded with its message).
	Logger *slog.Logger
}

func (c EmbeddedConfig) withDefaults() EmbeddedConfig {
	c.Host = cmp.Or(c.Host, DefaultEmbeddedHost)
	c.Port = cmp.Or(c.Port, DefaultEmbeddedPort)
	c.MaxPayload = cmp.Or(c.MaxPayload, DefaultMaxMsgSize)
	c.ReadyTimeout = cmp.Or(c.ReadyTimeout, DefaultReadyTimeout)
	c.Cluster = c.Cluster.withDefaults(c.Host)
	return c
}

// Validate reports every problem of c, after defaults are applied, in one
// error wrapping ErrInvalidConfig.
func (c EmbeddedConfig) Validate() error {
	c = c.withDefaults()
	var problems []string
	if c.StoreDir == "" {
		problems = append(problems, "StoreDir is required")
	}
	if c.Port < RandomPort || c.Port > 65535 {
		problems = append(problems, fmt.Sprintf("Port %d is outside -1..65535", c.Port))
	}
	if c.SyncInterval < 0 {
		problems = append(problems, fmt.Sprintf("SyncInterval %s is negative", c.SyncInterval))
	}
	if c.MaxPayload < 0 || c.MaxPayload > MaxMsgSizeLimit {
		problems = append(problems, fmt.Sprintf("MaxPayload %d is outside 1..%d", c.MaxPayload, MaxMsgSizeLimit))
	}
	if c.MaxStore < 0 {
		problems = append(problems, fmt.Sprintf("MaxStore %d is negative", c.MaxStore))
	}
	if c.ReadyTimeout < 0 {
		problems = append(problems, fmt.Sprintf("ReadyTimeout %s is negative", c.ReadyTimeout))
	}
	problems = append(problems, c.Cluster.problems(c.ServerName)...)
	if len(problems) == 0 {
		return nil
	}
	return fmt.Errorf("%w: %s", ErrInvalidConfig, strings.Join(problems, "; "))
}

// Embedded is a NATS server with JetStream running in this process.
type Embedded struct {
	srv *server.Server
	cfg EmbeddedConfig
	// self is the NKey of the process's own connections when the server
	// requires authentication, else nil.
	self nkeys.KeyPair
}

// StartEmbedded starts the server and returns once it accepts clients.
func StartEmbedded(cfg EmbeddedConfig) (*Embedded, error) {
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("start embedded server: %w", err)
	}
	cfg = cfg.withDefaults()
	opts := serverOptions(cfg)
	var self nkeys.KeyPair
	if cfg.AuthFile != "" {
		var err error
		if self, err = requireAuth(opts, cfg.AuthFile); err != nil {
			return nil, fmt.Errorf("start embedded server: %w", err)
		}
	}
	srv, err := server.NewServer(opts)
	if err != nil {
		return nil, fmt.Errorf("start embedded server: %w", err)
	}
	log := cmp.Or(cfg.Logger, slog.New(slog.DiscardHandler))
	// A fatal error (a port in use, a store JetStream cannot start on) is
	// the server giving up: the start returns it at once rather than
	// after ReadyTimeout.
	fatal := make(chan string, 1)
	// Neither debug nor trace: the server would log every protocol
	// message.
	srv.SetLoggerV2(serverLog{log: log.With("component", "nats"), fatal: fatal}, false, false, false)
	srv.Start()
	if err := awaitReady(srv, cfg, fatal); err != nil {
		srv.Shutdown()
		srv.WaitForShutdown()
		return nil, err
	}
	return &Embedded{srv: srv, cfg: cfg, self: self}, nil
}

// serverOptions are the options of the embedded server cfg (with its
// defaults) describes.
func serverOptions(cfg EmbeddedConfig) *server.Options {
	opts := &server.Options{
		ServerName: cfg.ServerName,
		Host:       cfg.Host,
		Port:       cfg.Port,
		MaxPayload: cfg.MaxPayload,
		JetStream:  true,
		StoreDir:   cfg.StoreDir,
		// JetStream's memory storage is not used by the ledger; a small
		// bound keeps a stray memory stream from eating the machine.
		JetStreamMaxMemory: 256 << 20,
		JetStreamMaxStore:  cfg.MaxStore,
		SyncAlways:         cfg.SyncInterval == 0,
		SyncInterval:       cfg.SyncInterval,
		// The process owns signal handling (cmd/quota cancels a context);
		// the server must not install its own handlers.
		NoSigs:                 true,
		NoLog:                  true,
		DisableJetStreamBanner: true,
		// No HTTP monitoring, leaf or gateway listeners; routes only to
		// the members of Cluster.
		HTTPPort: 0,
	}
	cfg.Cluster.apply(opts)
	return opts
}

// awaitReady returns once srv, started, accepts clients with JetStream
// enabled, or an error saying why it does not: a fatal error it logged
// (on fatal), or cfg.ReadyTimeout passed.
func awaitReady(srv *server.Server, cfg EmbeddedConfig, fatal <-chan string) error {
	deadline := time.Now().Add(cfg.ReadyTimeout)
	for !srv.ReadyForConnections(readyPoll) {
		why := fmt.Sprintf(" within %s", cfg.ReadyTimeout)
		select {
		case msg := <-fatal:
			why = ": " + msg
		default:
			if time.Now().Before(deadline) {
				continue
			}
		}
		return fmt.Errorf("start embedded server on %s:%d: %w%s", cfg.Host, cfg.Port, ErrServerNotReady, why)
	}
	if !srv.JetStreamEnabled() {
		return fmt.Errorf("start embedded server: %w: JetStream is not enabled", ErrServerNotReady)
	}
	return nil
}

// requireAuth sets opts to require the users of the authorization block
// of the nats-server configuration file, and one more for this process's
// own connections, whose key it returns.
func requireAuth(opts *server.Options, file string) (nkeys.KeyPair, error) {
	auth, err := server.ProcessConfigFile(file)
	if err != nil {
		return nil, fmt.Errorf("%w: auth file: %v", ErrInvalidConfig, err)
	}
	if len(auth.Users) == 0 && len(auth.Nkeys) == 0 {
		return nil, fmt.Errorf("%w: auth file %s names no user: want an authorization block with users (user and password, or nkey), each with its permissions", ErrInvalidConfig, file)
	}
	self, err := nkeys.CreateUser()
	if err != nil {
		return nil, err
	}
	pub, err := self.PublicKey()
	if err != nil {
		return nil, err
	}
	opts.Users = auth.Users
	// The process's own user may do anything, as the server it embeds.
	opts.Nkeys = append(auth.Nkeys, &server.NkeyUser{Nkey: pub})
	return self, nil
}

// ClientURL is the URL clients connect to, with the actual port when
// RandomPort was asked for.
func (e *Embedded) ClientURL() string { return e.srv.ClientURL() }

// InProcess is the connect option for clients in the server's own
// process: their connection is a pipe into the server instead of a socket
// through the loopback network.
// When the server requires authentication, the option authenticates the
// connection as the process's own user.
func (e *Embedded) InProcess() nats.Option {
	pipe := nats.InProcessServer(e.srv)
	if e.self == nil {
		return pipe
	}
	pub, _ := e.self.PublicKey()
	sign := nats.Nkey(pub, e.self.Sign)
	return func(o *nats.Options) error {
		if err := pipe(o); err != nil {
			return err
		}
		return sign(o)
	}
}

// Authenticated reports whether the server requires authentication of
// its clients (EmbeddedConfig.AuthFile).
func (e *Embedded) Authenticated() bool { return e.self != nil }

// Shutdown stops the server and returns once it has stopped and flushed
// its files.
func (e *Embedded) Shutdown() {
	e.srv.Shutdown()
	e.srv.WaitForShutdown()
}

// Health reports whether the server can still serve its JetStream store:
// nil, or an error wrapping ErrStoreFailed that says why (JetStream shut
// down, a stream that could not be recovered, a stream that met a write
// error). A stream that met a write error, a full disk's included, takes
// no append again until the server restarts, even once the cause is gone;
// nats-server leaves a publish to it unanswered rather than refused.
// A cluster member reports only such failures of its own store: the
// cluster's state as it sees it (no leader yet, a replica catching up, a
// member gone) passes by itself, and Quorum reports it.
func (e *Embedded) Health() error {
	h := e.srv.Healthz(nil)
	if h.StatusCode == http.StatusOK || e.Clustered() && !healthProblem(h) {
		return nil
	}
	return fmt.Errorf("%w: %s", ErrStoreFailed, cmp.Or(h.Error, h.Status))
}

// readyPoll is how long StartEmbedded waits for the server at a time,
// between looks for a fatal error.
const readyPoll = 20 * time.Millisecond

// serverLog is nats-server's Logger over slog. It also passes the first
// fatal error on to fatal.
type serverLog struct {
	log   *slog.Logger
	fatal chan<- string
}

func (l serverLog) Noticef(format string, v ...any) { l.at(slog.LevelDebug, format, v) }
func (l serverLog) Warnf(format string, v ...any)   { l.at(slog.LevelWarn, format, v) }
func (l serverLog) Errorf(format string, v ...any)  { l.at(slog.LevelError, format, v) }
func (l serverLog) Debugf(format string, v ...any)  { l.at(slog.LevelDebug, format, v) }
func (l serverLog) Tracef(format string, v ...any)  { l.at(slog.LevelDebug, format, v) }

// Fatalf is logged as an error and passed on: the server calls it where
// its own logger would exit the process, which is this process's to
// decide.
func (l serverLog) Fatalf(format string, v ...any) {
	l.at(slog.LevelError, format, v)
	select {
	case l.fatal <- fmt.Sprintf(format, v...):
	default: // one is enough
	}
}

func (l serverLog) at(level slog.Level, format string, v []any) {
	ctx := context.Background()
	if l.log.Enabled(ctx, level) {
		l.log.Log(ctx, level, fmt.Sprintf(format, v...))
	}
}
