package ledger_test

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nkeys"

	"github.com/quotaledger/quota/ledger"
)

// TestEmbeddedRequiresTheAuthFilesUsers starts the embedded server with an
// authorization block: a client without credentials is refused, a user
// of the block gets only its subjects, the process's own connection may
// do anything, and a block naming no user is a configuration error.
func TestEmbeddedRequiresTheAuthFilesUsers(t *testing.T) {
	dir := t.TempDir()
	user, err := nkeys.CreateUser()
	if err != nil {
		t.Fatal(err)
	}
	pub, _ := user.PublicKey()
	auth := filepath.Join(dir, "auth.conf")
	conf := `authorization { users = [ { nkey: "` + pub + `", permissions: { publish: { allow: ["quota.admit.>"] }, subscribe: { allow: ["_INBOX.>"] } } } ] }`
	if err := os.WriteFile(auth, []byte(conf), 0o600); err != nil {
		t.Fatal(err)
	}
	emb, err := ledger.StartEmbedded(ledger.EmbeddedConfig{Port: ledger.RandomPort, StoreDir: filepath.Join(dir, "js"), AuthFile: auth})
	if err != nil {
		t.Fatal(err)
	}
	defer emb.Shutdown()
	if !emb.Authenticated() {
		t.Error("Authenticated() is false with an auth file")
	}

	if nc, err := nats.Connect(emb.ClientURL()); err == nil {
		nc.Close()
		t.Error("a client without credentials was let in")
	} else if !errors.Is(err, nats.ErrAuthorization) && !strings.Contains(strings.ToLower(err.Error()), "authorization") {
		t.Errorf("a client without credentials: %v; want an authorization violation", err)
	}

	own, err := nats.Connect(emb.ClientURL(), emb.InProcess())
	if err != nil {
		t.Fatalf("the process's own connection: %v", err)
	}
	defer own.Close()
	sub, err := own.Subscribe("quota.admit.team", func(m *nats.Msg) { _ = m.Respond([]byte("ok")) })
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Unsubscribe()
	if err := own.Flush(); err != nil {
		t.Fatal(err)
	}

	violations := make(chan error, 4)
	client, err := nats.Connect(emb.ClientURL(), nats.Nkey(pub, user.Sign),
		nats.ErrorHandler(func(_ *nats.Conn, _ *nats.Subscription, err error) { violations <- err }))
	if err != nil {
		t.Fatalf("the block's user: %v", err)
	}
	defer client.Close()
	if reply, err := client.Request("quota.admit.team", []byte("?"), 5*time.Second); err != nil || string(reply.Data) != "ok" {
		t.Errorf("a request on its subject: %v", err)
	}
	if err := client.Publish("quota.events.team", []byte("x")); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-violations:
		if !strings.Contains(strings.ToLower(err.Error()), "permissions violation") {
			t.Errorf("a publish outside its subjects: %v; want a permissions violation", err)
		}
	case <-time.After(10 * time.Second):
		t.Error("a publish outside its subjects was not refused within 10s")
	}

	empty := filepath.Join(dir, "empty.conf")
	if err := os.WriteFile(empty, []byte("authorization { users = [] }\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := ledger.StartEmbedded(ledger.EmbeddedConfig{Port: ledger.RandomPort, StoreDir: filepath.Join(dir, "js2"), AuthFile: empty}); !errors.Is(err, ledger.ErrInvalidConfig) {
		t.Errorf("an auth file naming no user: %v; want ErrInvalidConfig", err)
	}
}
