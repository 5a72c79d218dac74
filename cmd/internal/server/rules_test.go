package server

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/quotaledger/quota/ledger/ledgertest"
	"github.com/quotaledger/quota/ledger/quantity"
	"github.com/quotaledger/quota/ledger/quota"
	"github.com/quotaledger/quota/projector"
)

// TestRechargesAProjectionOfOtherRules starts the ledger on a projection
// folded under other charging rules than this build's, whose quota holds a
// figure (7 pods) the log's two pods do not make, and which has applied
// the whole log. The ledger recomputes every charge and used from the
// objects the file holds, with no event of the log, says so in its log,
// and keeps the file, so describe shows the log's 2; a start on a
// projection of this build's rules keeps the file as it is. A file of
// another layout (SchemaVersion) is moved aside and rebuilt from the
// stream.
func TestRechargesAProjectionOfOtherRules(t *testing.T) {
	nats0, client := logOf(t, []string{
		`{"apiVersion":"v1","kind":"ResourceQuota","metadata":{"name":"compute","namespace":"team-a"},"spec":{"hard":{"pods":"10"}}}`,
		pod("team-a", "web-1"),
		pod("team-a", "web-2"),
	})
	data := t.TempDir()
	path := filepath.Join(data, ProjectionFile)
	aside := fmt.Sprintf("%s.rules-%d", path, projector.RulesVersion-1)
	// run serves until a describe of team-a has answered, and returns
	// the pods it reported used, with the server's log.
	run := func() (string, string) {
		t.Helper()
		var logs ledgertest.LogBuffer
		ctx, stop := context.WithCancel(context.Background())
		defer stop()
		ready := make(chan struct{})
		done := make(chan error, 1)
		go func() {
			done <- Run(ctx, Config{DataDir: data, NATSURL: nats0.ClientURL(), Logger: slog.New(slog.NewTextHandler(&logs, nil)),
				Ready: func(string) { close(ready) }})
		}()
		select {
		case <-ready:
		case err := <-done:
			t.Fatalf("Run: %v\n%s", err, logs.String())
		case <-time.After(30 * time.Second):
			t.Fatalf("the ledger did not get ready in 30 s\n%s", logs.String())
		}
		m, err := client.Request(projector.SubjectDescribe, []byte(`{"namespace":"team-a"}`), 30*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		var reply struct {
			List struct {
				Items []struct {
					Status struct {
						Used map[string]string `json:"used"`
					} `json:"status"`
				} `json:"items"`
			} `json:"list"`
			Error string `json:"error"`
		}
		if err := json.Unmarshal(m.Data, &reply); err != nil || reply.Error != "" || len(reply.List.Items) != 1 {
			t.Fatalf("describe: %s (%v)", m.Data, err)
		}
		stop()
		if err := <-done; err != nil {
			t.Fatalf("Run stopped with %v\n%s", err, logs.String())
		}
		return reply.List.Items[0].Status.Used["pods"], logs.String()
	}

	if used, _ := run(); used != "2" {
		t.Fatalf("first start: pods used %q, want 2", used)
	}
	if used, logs := run(); used != "2" || strings.Contains(logs, "rebuilding") || strings.Contains(logs, "recomputed") {
		t.Fatalf("second start, same rules: pods used %q, want 2 without a rebuild\n%s", used, logs)
	}
	if _, err := os.Stat(aside); !os.IsNotExist(err) {
		t.Fatalf("a projection of this build's rules was moved aside (%v)", err)
	}

	// The file as a build of other rules leaves it, with a figure this
	// build's rules would not make.
	plant(t, path, "rules", projector.RulesVersion-1)
	used, logs := run()
	if used != "2" {
		t.Errorf("start on a projection of other rules: pods used %q, want 2 (recharged)\n%s", used, logs)
	}
	for _, want := range []string{"recomputed from the objects it holds", fmt.Sprintf("rules=%d", projector.RulesVersion-1), fmt.Sprintf("build_rules=%d", projector.RulesVersion)} {
		if !strings.Contains(logs, want) {
			t.Errorf("the log does not say %q:\n%s", want, logs)
		}
	}
	if strings.Contains(logs, "rebuilding") {
		t.Errorf("a projection of other rules was rebuilt from the stream, not recharged:\n%s", logs)
	}
	if _, err := os.Stat(aside); !os.IsNotExist(err) {
		t.Errorf("a projection of other rules was moved aside (%v)", err)
	}

	plant(t, path, "schema", projector.SchemaVersion-1)
	used, logs = run()
	if used != "2" || !strings.Contains(logs, "aside="+path+".layout") {
		t.Errorf("start on a projection of another layout: pods used %q, want 2 (rebuilt from the stream)\n%s", used, logs)
	}
}

// plant sets the meta key (rules or schema) of the projection file at
// path to version, and its quota's pods used to 7.
func plant(t *testing.T, path, key string, version uint64) {
	t.Helper()
	db, err := bolt.Open(path, 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	err = db.Update(func(tx *bolt.Tx) error {
		if err := tx.Bucket([]byte("meta")).Put([]byte(key), binary.BigEndian.AppendUint64(nil, version)); err != nil {
			return err
		}
		quotas := tx.Bucket([]byte("quotas"))
		k := []byte("team-a\x00compute")
		var record map[string]any
		if err := json.Unmarshal(quotas.Get(k), &record); err != nil {
			return err
		}
		used, err := json.Marshal(quota.ResourceList{"pods": quantity.NewInt(7)})
		if err != nil {
			return err
		}
		record["used"] = json.RawMessage(used)
		b, err := json.Marshal(record)
		if err != nil {
			return err
		}
		return quotas.Put(k, b)
	})
	if cerr := db.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		t.Fatal(err)
	}
}
