package main

import (
	"fmt"
	"log/slog"
	"os"
	"strings"

	"github.com/nats-io/nats.go"
	"github.com/spf13/pflag"
)

// credentialFlags are the flags that secure a client's connection to
// NATS, each with the environment variable that sets its default (none
// for the client certificate).
var credentialFlags = []struct{ flag, env string }{
	{"creds", "QUOTA_CREDS"},
	{"nkey", "QUOTA_NKEY"},
	{"tls-ca", "QUOTA_TLS_CA"},
	{"tls-cert", ""},
	{"tls-key", ""},
}

// serveNATSOptions are the options of serve's connection to NATS. With an
// external NATS (external), the credential and TLS flags secure it, given
// or taken from the environment, as they do a client's. The embedded
// server has no such connection: serve reaches it in process, and --auth
// says which clients it admits. So a credential flag given on serve's
// command line is refused, and one only the environment sets (a shell
// that exports $QUOTA_NKEY for its clients) is left to the clients, as
// serve's log says.
func (g *globalFlags) serveNATSOptions(flags *pflag.FlagSet, external bool, log *slog.Logger) ([]nats.Option, error) {
	if !g.secured() {
		return nil, nil
	}
	if external {
		return g.natsOptions()
	}
	var given, inherited []string
	for _, c := range credentialFlags {
		switch {
		case flags.Changed(c.flag) && flags.Lookup(c.flag).Value.String() != "":
			given = append(given, "--"+c.flag)
		case c.env != "" && os.Getenv(c.env) != "":
			inherited = append(inherited, "$"+c.env)
		}
	}
	if len(given) > 0 {
		return nil, fmt.Errorf("%s: the credential and TLS flags secure the connection to --nats; the embedded server has none (serve reaches it in process, and --auth names the clients it admits)", strings.Join(given, ", "))
	}
	log.Info("the environment's NATS client credentials are left to the clients: the embedded server takes none (--auth names the clients it admits)", "ignored", strings.Join(inherited, " "))
	return nil, nil
}
