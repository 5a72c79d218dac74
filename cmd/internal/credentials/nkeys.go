package credentials

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/nats-io/nkeys"
)

// Files written by Write.
const (
	// AuthFile is the authorization block for `quota serve --auth`.
	AuthFile = "auth.conf"
	// SeedSuffix ends each component's seed file: webhook.nk, export.nk.
	SeedSuffix = ".nk"
)

// Rights are a component's subject permissions.
type Rights struct {
	Publish   []string
	Subscribe []string
}

// Event and dead-letter streams, as ledger.Config names them by default.
const (
	eventStream  = "QUOTA_EVENTS"
	rejectStream = "QUOTA_REJECTS"
	// exportBucket is `quota export`'s key-value bucket of resume points.
	exportBucket = "quota-export"
)

// Permissions are the rights of each component; a nil Rights is every
// right.
var Permissions = map[string]*Rights{
	"webhook": {
		Publish:   []string{"quota.admit.>", "quota.status.webhook.>"},
		Subscribe: []string{"_INBOX.>"},
	},
	"export": {
		Publish: []string{
			"quota.events.>", "quota.rejects.>", "quota.ingest", "quota.ingest.states",
			// What the log holds, compared with a relist (ledger.SubjectVersions).
			"quota.query.versions",
			"$JS.API.INFO",
			"$JS.API.STREAM.INFO." + eventStream, "$JS.API.STREAM.INFO." + rejectStream,
			"$JS.API.STREAM.MSG.GET." + eventStream, "$JS.API.DIRECT.GET." + eventStream + ".>",
			// The exporter's resume points, in a key-value bucket.
			"$KV." + exportBucket + ".>",
			"$JS.API.STREAM.INFO.KV_" + exportBucket, "$JS.API.STREAM.CREATE.KV_" + exportBucket, "$JS.API.STREAM.UPDATE.KV_" + exportBucket,
			"$JS.API.STREAM.MSG.GET.KV_" + exportBucket, "$JS.API.DIRECT.GET.KV_" + exportBucket + ".>",
		},
		Subscribe: []string{"_INBOX.>"},
	},
	"operator": nil,
}

// Components are the names of Permissions, in the order Write writes
// them.
var Components = []string{"webhook", "export", "operator"}

// nkeysWrite makes a new NKey for each component and writes its seed in
// COMPONENT.nk and the authorization block admitting them all in
// auth.conf.
func nkeysWrite(dir string) error {
	var conf strings.Builder
	conf.WriteString("# The users `quota serve --auth` admits to its embedded NATS server, one\n# NKey per component with the subjects it needs. Written by `quota credentials`.\nauthorization {\n  users = [\n")
	for _, c := range Components {
		kp, err := nkeys.CreateUser()
		if err != nil {
			return err
		}
		pub, err := kp.PublicKey()
		if err != nil {
			return err
		}
		seed, err := kp.Seed()
		if err != nil {
			return err
		}
		if err := os.WriteFile(filepath.Join(dir, c+SeedSuffix), append(seed, '\n'), 0o600); err != nil {
			return err
		}
		fmt.Fprintf(&conf, "    # %s\n    { nkey: %q", c, pub)
		if r := Permissions[c]; r != nil {
			fmt.Fprintf(&conf, ", permissions: { publish: { allow: %s }, subscribe: { allow: %s } }", list(r.Publish), list(r.Subscribe))
		}
		conf.WriteString(" }\n")
	}
	conf.WriteString("  ]\n}\n")
	return os.WriteFile(filepath.Join(dir, AuthFile), []byte(conf.String()), 0o600)
}

func list(subjects []string) string {
	q := make([]string, len(subjects))
	for i, s := range subjects {
		q[i] = fmt.Sprintf("%q", s)
	}
	return "[" + strings.Join(q, ", ") + "]"
}
