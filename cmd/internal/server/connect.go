package server

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/quotaledger/quota/ledger"
)

// startEmbedded starts the embedded JetStream server Run uses when no
// external NATS is given.
func startEmbedded(cfg Config, storeDir string, log *slog.Logger) (*ledger.Embedded, error) {
	host, port, err := splitHostPort(cfg.Listen)
	if err != nil {
		return nil, err
	}
	// A large store takes seconds to recover, during which nothing
	// listens yet.
	log.Info("starting the embedded JetStream", "store", storeDir)
	started := time.Now()
	emb, err := ledger.StartEmbedded(ledger.EmbeddedConfig{
		Host:         host,
		Port:         port,
		StoreDir:     storeDir,
		ServerName:   cfg.ServerName,
		Cluster:      cfg.Cluster,
		SyncInterval: cfg.SyncInterval,
		// The embedded server takes the largest event the stream does
		// (zero: the default of both).
		MaxPayload: cfg.Stream.MaxMsgSize,
		AuthFile:   cfg.AuthFile,
		Logger:     log,
	})
	if err != nil {
		return nil, err
	}
	log.Info("embedded JetStream started", "url", emb.ClientURL(), "store", storeDir, "sync", syncName(cfg.SyncInterval),
		"took", time.Since(started).Round(time.Millisecond))
	if cfg.Cluster.Enabled() {
		logMember(cfg, log)
	}
	if !loopback(host) && !emb.Authenticated() {
		log.Warn("the embedded NATS server takes connections from other machines, with no authentication: anyone who reaches it can append to the log, decide admissions and purge rejections; to expose the ledger, run it on a secured NATS (--nats)", "listen", cfg.Listen)
	}
	return emb, nil
}

// connect connects to the NATS at p.url and opens the ledger's stream
// on it. On success the caller closes p.nc.
func (p *parts) connect(ctx context.Context, cfg Config, log *slog.Logger) (jetstream.JetStream, error) {
	opts := append([]nats.Option{nats.Name("quota serve"), nats.Timeout(connectTimeout),
		nats.MaxReconnects(-1), nats.RetryOnFailedConnect(false)}, connectionLogs(log)...)
	if cfg.NATSURL != "" {
		opts = append(opts, cfg.NATSOptions...)
	}
	// The ledger's own connection: to the embedded server, a pipe within
	// the process (every append, acknowledgement, delivery to the
	// projection and reply saves two trips through the loopback network);
	// to an external server, its URL.
	if p.embedded != nil {
		opts = append(opts, p.embedded.InProcess())
	}
	nc, err := nats.Connect(p.url, opts...)
	if err != nil {
		return nil, fmt.Errorf("connect to NATS at %s: %w", p.url, err)
	}
	js, err := p.openStream(ctx, nc, cfg, log)
	if err != nil {
		nc.Close()
		return nil, err
	}
	p.nc = nc
	return js, nil
}

// openStream opens the ledger's stream on nc and checks that the NATS
// server takes its largest event.
func (p *parts) openStream(ctx context.Context, nc *nats.Conn, cfg Config, log *slog.Logger) (jetstream.JetStream, error) {
	js, err := jetstream.New(nc)
	if err != nil {
		return nil, fmt.Errorf("jetstream: %w", err)
	}
	if p.member() {
		// Streams asked for before the members have elected a meta
		// leader are created only after tens of seconds (nats-server
		// 2.15): ask once one answers.
		err = p.untilAvailable(ctx, log, "a JetStream meta leader", func() error {
			actx, cancel := context.WithTimeout(ctx, metaLeaderPoll)
			defer cancel()
			_, err := js.AccountInfo(actx)
			return err
		})
		if err != nil {
			return nil, fmt.Errorf("jetstream: %w", err)
		}
	}
	var stream *ledger.Stream
	err = p.untilAvailable(ctx, log, "the stream to be opened", func() (err error) {
		octx, cancel := p.attempt(ctx)
		defer cancel()
		stream, err = ledger.Open(octx, js, cfg.Stream)
		return err
	})
	if err != nil {
		return nil, err
	}
	if limit, size := nc.MaxPayload(), int64(stream.Config().MaxMsgSize); limit < size {
		return nil, fmt.Errorf("%w: the NATS server at %s takes messages of at most %d bytes (max_payload), under the largest event of %d bytes: raise its max_payload or lower the largest event", ErrPayloadLimit, p.url, limit, size)
	}
	if p.embedded != nil {
		stream.ReadLocally(p.embedded)
	}
	p.stream = stream
	return js, nil
}

func syncName(d time.Duration) string {
	if d == 0 {
		return "always"
	}
	return d.String()
}

// connectionLogs makes the connection log what NATS reports apart from
// any call: a subscription falling behind (a slow consumer, whose
// messages the client drops, such as admission requests arriving faster
// than they are answered), a lost connection and a new one.
func connectionLogs(log *slog.Logger) []nats.Option {
	return []nats.Option{
		nats.ErrorHandler(func(_ *nats.Conn, sub *nats.Subscription, err error) {
			subject := ""
			if sub != nil {
				subject = sub.Subject
			}
			log.Warn("NATS reported an error", "subject", subject, "err", err)
		}),
		nats.DisconnectErrHandler(func(_ *nats.Conn, err error) {
			if err != nil {
				log.Warn("NATS connection lost", "err", err)
			}
		}),
		nats.ReconnectHandler(func(nc *nats.Conn) {
			log.Info("NATS connection restored", "url", nc.ConnectedUrlRedacted())
		}),
	}
}
